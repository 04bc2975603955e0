/* SPDX-License-Identifier: Apache-2.0 */
/* The end-of-job summary (summary.h). */
#include "transport/run/summary.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"

int run_conn_is_measured(const struct run_conn_info *i) {
  return i->v.bytes >= RUN_RATE_MIN_BYTES && i->v.busy_ns >= (uint64_t)RUN_RATE_MIN_BUSY_NS;
}

static int cmp_rate(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* "1.5 GiB"-style sizes for a line people read. */
static void human(char *out, size_t cap, double v, const char *unit) {
  const char *p[] = {"", "Ki", "Mi", "Gi", "Ti"};
  int k = 0;
  while (v >= 1024 && k < 4) {
    v /= 1024;
    k++;
  }
  snprintf(out, cap, "%.1f %s%s", v, p[k], unit);
}

/* The slowest measured connection, its rate and the median rate of the
 * measured ones, as words; "" when fewer than two are measured. */
static void slowest(char *out, size_t cap, const struct run_conn_info *all, int n) {
  out[0] = '\0';
  double *rates = malloc((size_t)(n ? n : 1) * sizeof(*rates));
  if (!rates) return;
  int m = 0, slow = -1;
  for (int k = 0; k < n; k++) {
    if (!run_conn_is_measured(&all[k])) continue;
    rates[m++] = run_stats_rate(&all[k].v);
    if (slow < 0 || run_stats_rate(&all[k].v) < run_stats_rate(&all[slow].v)) slow = k;
  }
  if (m >= 2) {
    qsort(rates, (size_t)m, sizeof(*rates), cmp_rate);
    double med = m % 2 ? rates[m / 2] : (rates[m / 2 - 1] + rates[m / 2]) / 2;
    const struct run_conn_info *s = &all[slow];
    char r[32], md[32];
    human(r, sizeof(r), run_stats_rate(&s->v), "B/s");
    human(md, sizeof(md), med, "B/s");
    snprintf(out, cap, "; slowest link: %s %s %s on %s at %s while busy, %.2fx the median %s of %d",
             s->is_send ? "send to" : "receive from", s->transport, s->peer_desc, s->dev, r,
             med > 0 ? run_stats_rate(&s->v) / med : 0.0, md, m);
  }
  free(rates);
}

void run_summary_log(void) {
  int n = 0, nopen = 0;
  struct run_conn_info *all = run_conn_snapshot(&n, &nopen);
  if (!all) return;
  int sends = 0;
  uint64_t bytes = 0, busy = 0, done = 0;
  for (int k = 0; k < n; k++) {
    sends += all[k].is_send;
    bytes += all[k].v.bytes;
    busy += all[k].v.busy_ns;
    done += all[k].v.completions;
  }
  char b[32], slow[512];
  human(b, sizeof(b), (double)bytes, "B");
  slowest(slow, sizeof(slow), all, n);
  INFO(LOG_NET,
       "run summary: %d connections (%d send, %d receive), %s in %llu requests, %.3f s busy in "
       "all%s; stalls diagnosed: %d",
       n, sends, n - sends, b, (unsigned long long)done, (double)busy * 1e-9, slow,
       run_conn_stalls());
  free(all);
}
