/* SPDX-License-Identifier: Apache-2.0 */
/* Per-connection figures (stats.h). One writer per comm, so each update is
 * a relaxed load and store, never a locked add: the data path pays a few
 * plain stores per completion. */
#include "transport/run/stats.h"

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

void run_stats_post(struct run_stats *s, int64_t now) {
  if (s->outstanding++ == 0) {
    s->busy_since_ns = now;
    ST(s->busy_start_ns, now);
    atomic_store_explicit(&s->is_busy, true, memory_order_release);
  }
}

static int lat_bucket(uint64_t ns) {
  uint64_t us = ns / 1000;
  int i = 0;
  while (us && i < RUN_LAT_BUCKETS - 1) {
    us >>= 1;
    i++;
  }
  return i;
}

void run_stats_done(struct run_stats *s, int64_t posted_ns, uint64_t bytes, int64_t now) {
  uint64_t lat = now > posted_ns ? (uint64_t)(now - posted_ns) : 0;
  ST(s->bytes, LD(s->bytes) + bytes);
  ST(s->completions, LD(s->completions) + 1);
  ST(s->lat_sum_ns, LD(s->lat_sum_ns) + lat);
  if (lat > LD(s->lat_max_ns)) ST(s->lat_max_ns, lat);
  int b = lat_bucket(lat);
  ST(s->lat_buckets[b], LD(s->lat_buckets[b]) + 1);
  ST(s->last_progress_ns, now);
  if (s->outstanding > 0 && --s->outstanding == 0) {
    atomic_store_explicit(&s->is_busy, false, memory_order_release);
    ST(s->busy_ns, LD(s->busy_ns) + (uint64_t)(now - s->busy_since_ns));
  }
}

void run_stats_read(const struct run_stats *s, int64_t now, struct run_stats_view *v) {
  bool is_busy = atomic_load_explicit(&s->is_busy, memory_order_acquire);
  v->bytes = LD(s->bytes);
  v->busy_ns = LD(s->busy_ns);
  if (is_busy) {
    int64_t since = LD(s->busy_start_ns);
    if (now > since) v->busy_ns += (uint64_t)(now - since);
  }
  v->completions = LD(s->completions);
  v->lat_sum_ns = LD(s->lat_sum_ns);
  v->lat_max_ns = LD(s->lat_max_ns);
  for (int i = 0; i < RUN_LAT_BUCKETS; i++) v->lat_buckets[i] = LD(s->lat_buckets[i]);
  v->last_progress_ns = LD(s->last_progress_ns);
}

double run_stats_rate(const struct run_stats_view *v) {
  return v->busy_ns ? (double)v->bytes * 1e9 / (double)v->busy_ns : 0.0;
}

double run_stats_bucket_le(int i) { return (double)(1ULL << i) * 1e-6; }
