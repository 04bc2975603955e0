/* SPDX-License-Identifier: Apache-2.0 */
/* The end-of-job summary (summary.h). */
#include "transport/run/summary.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/size.h"
#include "transport/run/slow.h"

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

/* Siblings: connections of the same transport and direction, the only
 * ones whose rates compare (a receive waits for its sender's caller, an
 * RDMA link is not a TCP one). */
static int kind_of(const struct run_conn_info *i) {
  return (i->transport[0] == 'i' ? 2 : 0) + (i->is_send ? 1 : 0);
}

/* The median rate of the measured connections of kind k; 0 when fewer
 * than two. */
static double kind_median(const struct run_conn_info *all, int n, int k, double *rates) {
  int m = 0;
  for (int j = 0; j < n; j++)
    if (kind_of(&all[j]) == k && run_conn_is_measured(&all[j]))
      rates[m++] = run_stats_rate(&all[j].v);
  if (m < 2) return 0;
  qsort(rates, (size_t)m, sizeof(*rates), cmp_rate);
  return m % 2 ? rates[m / 2] : (rates[m / 2 - 1] + rates[m / 2]) / 2;
}

/* The measured connection furthest below its siblings' median, as words;
 * "" when no kind has two measured connections. */
static void slowest(char *out, size_t cap, const struct run_conn_info *all, int n) {
  out[0] = '\0';
  double *rates = malloc((size_t)(n ? n : 1) * sizeof(*rates)), med[4];
  if (!rates) return;
  for (int k = 0; k < 4; k++) med[k] = kind_median(all, n, k, rates);
  free(rates);
  int slow = -1;
  double worst = 0;
  for (int j = 0; j < n; j++) {
    double md = med[kind_of(&all[j])];
    if (md <= 0 || !run_conn_is_measured(&all[j])) continue;
    double ratio = run_stats_rate(&all[j].v) / md;
    if (slow < 0 || ratio < worst) slow = j, worst = ratio;
  }
  if (slow < 0) return;
  const struct run_conn_info *s = &all[slow];
  char r[32], md[32], rt[24];
  human(r, sizeof(r), run_stats_rate(&s->v), "B/s");
  human(md, sizeof(md), med[kind_of(s)], "B/s");
  snprintf(out, cap,
           "; slowest link: %s %s on %s at %s while busy, %sx the median %s of its %s %s "
           "siblings",
           s->is_send ? "send to" : "receive from", s->peer_desc, s->dev, r,
           ratio_format(rt, sizeof(rt), worst), md, s->transport, s->is_send ? "send" : "receive");
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
       "all%s; stalls diagnosed: %d; slow links named: %d; lossy ports named: %d",
       n, sends, n - sends, b, (unsigned long long)done, (double)busy * 1e-9, slow,
       run_conn_stalls(), run_slow_count(), run_slow_port_count());
  free(all);
}
