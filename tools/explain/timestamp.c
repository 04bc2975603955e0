/* SPDX-License-Identifier: Apache-2.0 */
/* The time a log line carries, when it carries one, so that a fault and
 * what it causes seconds later can be told from two faults hours apart.
 * Forms, looked for before NCCL's own prefix:
 *   "[2025-01-31 10:00:00] ", "[2025-01-31 10:00:00.123456] "  NCCL 2.26+
 *     (NCCL_DEBUG_TIMESTAMP_FORMAT, default "[%F %T] ", %Xf for fractions)
 *   "2025-01-31T10:00:00.123Z ...", "2025-01-31 10:00:00,123 ..." collectors,
 *     Python's logging, Slurm
 *   "[rank1]:[E1128 10:41:07.118203874 ProcessGroupNCCL.cpp:632]" PyTorch
 *     (month and day, no year)
 *   "[10:00:00] " a format of time only
 * Seconds are comparable only between lines of the same kind. */
#include <string.h>

#include "tools/explain/explain.h"

static bool dig(const char *p, int n, long *v) {
  long x = 0;
  for (int i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return false;
    x = 10 * x + (p[i] - '0');
  }
  *v = x;
  return true;
}

/* Days since 1970-01-01 of a civil date (the proleptic Gregorian calendar). */
static long days_civil(long y, long m, long d) {
  y -= m <= 2;
  long era = (y >= 0 ? y : y - 399) / 400;
  long yoe = y - era * 400;
  long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* "HH:MM:SS" with an optional ".fff" or ",fff" at p. */
static bool clock_at(const char *p, double *sec) {
  long h, m, s;
  if (!dig(p, 2, &h) || p[2] != ':' || !dig(p + 3, 2, &m) || p[5] != ':' || !dig(p + 6, 2, &s))
    return false;
  if (h > 23 || m > 59 || s > 60) return false;
  double frac = 0, scale = 0.1;
  if (p[8] == '.' || p[8] == ',')
    for (const char *q = p + 9; *q >= '0' && *q <= '9' && scale > 1e-10; q++, scale /= 10)
      frac += (*q - '0') * scale;
  *sec = (double)(h * 3600 + m * 60 + s) + frac;
  return true;
}

/* clock_ok: a time alone counts (after '[' or at the line's start). */
static enum ts_kind ts_at(const char *p, bool clock_ok, double *t) {
  long y, mo, d;
  double c;
  if (dig(p, 4, &y) && p[4] == '-' && dig(p + 5, 2, &mo) && p[7] == '-' && dig(p + 8, 2, &d) &&
      (p[10] == ' ' || p[10] == 'T') && mo >= 1 && mo <= 12 && d >= 1 && d <= 31 &&
      clock_at(p + 11, &c)) {
    *t = (double)days_civil(y, mo, d) * 86400 + c;
    return TS_DATE;
  }
  if (*p && strchr("IWEF", *p) && dig(p + 1, 2, &mo) && dig(p + 3, 2, &d) && p[5] == ' ' &&
      mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && clock_at(p + 6, &c)) {
    *t = (double)days_civil(2000, mo, d) * 86400 + c; /* glog prints no year */
    return TS_MONTHDAY;
  }
  if (clock_ok && clock_at(p, &c)) {
    *t = c;
    return TS_CLOCK;
  }
  return TS_NONE;
}

enum ts_kind log_timestamp(const char *line, double *t) {
  /* every line passes here: look only where a time can start (a digit, or
   * glog's level letter), and only before NCCL's own words */
  for (size_t i = 0; i < 96 && line[i]; i++) {
    char c = line[i];
    if (c == 'N' && !strncmp(line + i, "NCCL ", 5)) break;
    if (!(c >= '0' && c <= '9') && c != 'I' && c != 'W' && c != 'E' && c != 'F') continue;
    if (i && line[i - 1] != '[' && line[i - 1] != ' ' && line[i - 1] != ':') continue;
    enum ts_kind k = ts_at(line + i, i == 0 || line[i - 1] == '[', t);
    if (k != TS_NONE) return k;
  }
  return TS_NONE;
}
