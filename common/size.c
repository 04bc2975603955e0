/* SPDX-License-Identifier: Apache-2.0 */
#include "common/size.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

static int unit_shift(char c) {
  switch (c) {
  case 'k':
  case 'K': return 10;
  case 'm':
  case 'M': return 20;
  case 'g':
  case 'G': return 30;
  case 't':
  case 'T': return 40;
  default: return 0;
  }
}

/* The unit and its optional "B" / "iB"; NULL when anything else follows. */
static const char *parse_unit(const char *p, int *shift) {
  *shift = unit_shift(*p);
  if (*shift) {
    p++;
    if (*p == 'i' && (p[1] == 'B' || p[1] == 'b')) p++;
  }
  if (*p == 'B' || *p == 'b') p++;
  return *p ? NULL : p;
}

int size_parse(const char *s, uint64_t *out) {
  const char *p = s;
  uint64_t whole = 0, frac = 0, denom = 1;
  bool has_digit = false;
  for (; *p >= '0' && *p <= '9'; p++, has_digit = true) {
    uint64_t digit = (uint64_t)(*p - '0');
    if (whole > (UINT64_MAX - digit) / 10) return ERANGE;
    whole = whole * 10 + digit;
  }
  if (*p == '.') {
    for (p++; *p >= '0' && *p <= '9'; p++, has_digit = true) {
      if (denom >= 1000000) continue; /* six digits: finer than a byte in 1T / 2^20 */
      frac = frac * 10 + (uint64_t)(*p - '0');
      denom *= 10;
    }
  }
  int shift;
  if (!has_digit || !parse_unit(p, &shift)) return EINVAL;
  if (shift && whole > UINT64_MAX >> shift) return ERANGE;
  uint64_t v = whole << shift;
  uint64_t part = (frac << shift) / denom; /* frac < 10^6 < 2^20, shift <= 40: fits */
  if (v > UINT64_MAX - part) return ERANGE;
  *out = v + part;
  return 0;
}

const char *ratio_format(char *out, size_t cap, double r) {
  int decimals = 2;
  if (r > 0 && r < 0.01) { /* one more per leading zero, then a second digit */
    for (double v = r; v < 0.01 && decimals < 8; v *= 10) decimals++;
    decimals++;
  }
  snprintf(out, cap, "%.*f", decimals, r);
  return out;
}

const char *size_format(char *out, size_t cap, uint64_t size) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && size >= 1024 && size % 1024 == 0) {
    size /= 1024;
    u++;
  }
  snprintf(out, cap, "%llu %s", (unsigned long long)size, units[u]);
  return out;
}
