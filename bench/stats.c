/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks, CPU time, and the small statistics the report needs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

static int64_t ts_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t thread_cpu_ns(void) { return ts_ns(CLOCK_THREAD_CPUTIME_ID); }

/* getrusage counts every thread of the process, live or joined, so the
 * plugin's helper threads and the baseline's socket threads are in it. */
int64_t proc_cpu_ns(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

/* Busy CPU of the whole host from /proc/stat (tick-sampled, so coarse):
 * user, nice and system, plus irq and softirq when has_irq_time. With them it
 * catches network work the per-process clocks miss (ksoftirqd); without
 * them, minus our processes, it estimates what others ran meanwhile. */
int64_t host_busy_ns(bool has_irq_time) {
  FILE *f = fopen("/proc/stat", "re");
  if (!f) return 0;
  unsigned long long v[8] = {0};
  int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                 &v[4], &v[5], &v[6], &v[7]);
  fclose(f);
  if (n < 7) return 0;
  long hz = sysconf(_SC_CLK_TCK);
  unsigned long long busy = v[0] + v[1] + v[2] + (has_irq_time ? v[5] + v[6] : 0);
  return (int64_t)(busy * (1000000000ULL / (unsigned long long)(hz > 0 ? hz : 100)));
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Of the finite values (a NaN marks "not measured"); NaN if there are none. */
double median(const double *v, int n) {
  double tmp[64];
  int k = 0;
  for (int i = 0; i < n && k < 64; i++)
    if (isfinite(v[i])) tmp[k++] = v[i];
  n = k;
  if (n == 0) return NAN;
  qsort(tmp, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

int64_t percentile(int64_t *v, size_t n, double p) {
  if (!n) return 0;
  qsort(v, n, sizeof(int64_t), cmp_i64);
  size_t rank = (size_t)(p * (double)n + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return v[rank - 1];
}

size_t stream_lat(const struct stream *s, uint64_t warm, uint64_t total, int window, int64_t *out) {
  size_t k = 0;
  for (uint64_t m = warm; m < total; m++)
    out[k++] = s->done_ns[m] - s->done_ns[m - (uint64_t)window];
  return k;
}

/* Steady state starts when every receive stream has finished its warm-up
 * and ends with the last message; what completed in between is counted. */
void stream_window(const struct stream *s, int n, uint64_t warm, uint64_t total,
                   struct bench_res *res) {
  int64_t t0 = 0, t1 = 0;
  for (int i = 0; i < n; i++) {
    if (s[i].is_send) continue;
    if (s[i].done_ns[warm - 1] > t0) t0 = s[i].done_ns[warm - 1];
    if (s[i].done_ns[total - 1] > t1) t1 = s[i].done_ns[total - 1];
  }
  uint64_t c = 0;
  for (int i = 0; i < n; i++)
    if (!s[i].is_send)
      for (uint64_t m = warm; m < total; m++) c += s[i].done_ns[m] > t0;
  res->t0_ns = t0;
  res->t_end_ns = t1;
  res->timed_msgs = c;
}
