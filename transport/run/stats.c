/* SPDX-License-Identifier: Apache-2.0 */
/* Per-connection figures (stats.h). One writer per comm, so each update is
 * a relaxed load and store, never a locked add: the data path pays a few
 * plain stores per completion. */
#include "transport/run/stats.h"

#include <stddef.h>

#include "common/clock.h"
#include "common/knobs.h"
#include "transport/prefs.h"

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

bool run_stats_is_on(void) {
  static atomic_int on = -1; /* unknown until the first request */
  int v = atomic_load_explicit(&on, memory_order_relaxed);
  if (v < 0) {
    v = transport_prefs()->is_run_stats;
    atomic_store_explicit(&on, v, memory_order_relaxed);
  }
  return v;
}

static void busy_start(struct run_stats *s, int64_t now) {
  s->busy_since_ns = now;
  ST(s->busy_start_ns, now);
  atomic_store_explicit(&s->is_busy, true, memory_order_release);
}

void run_stats_post(struct run_stats *s, const void *req) {
  int64_t now = 0;
  if (s->outstanding++ == 0) busy_start(s, now = clock_mono_ns());
  if (s->posts++ % RUN_LAT_SAMPLE || s->sampled) return;
  s->sampled = req;
  s->sampled_ns = now ? now : clock_mono_ns();
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

static void note_latency(struct run_stats *s, uint64_t lat) {
  ST(s->lat_count, LD(s->lat_count) + 1);
  ST(s->lat_sum_ns, LD(s->lat_sum_ns) + lat);
  if (lat > LD(s->lat_max_ns)) ST(s->lat_max_ns, lat);
  int b = lat_bucket(lat);
  ST(s->lat_buckets[b], LD(s->lat_buckets[b]) + 1);
}

static int64_t coarse_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void run_stats_done(struct run_stats *s, const void *req, uint64_t bytes) {
  int64_t now = 0;
  if (req == s->sampled) {
    now = clock_mono_ns();
    note_latency(s, now > s->sampled_ns ? (uint64_t)(now - s->sampled_ns) : 0);
    s->sampled = NULL;
  }
  ST(s->bytes, LD(s->bytes) + bytes);
  ST(s->completions, LD(s->completions) + 1);
  ST(s->last_progress_ns, now ? now : coarse_ns());
  if (s->outstanding > 0 && --s->outstanding == 0) {
    if (!now) now = clock_mono_ns();
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
  v->lat_count = LD(s->lat_count);
  v->lat_sum_ns = LD(s->lat_sum_ns);
  v->lat_max_ns = LD(s->lat_max_ns);
  for (int i = 0; i < RUN_LAT_BUCKETS; i++) v->lat_buckets[i] = LD(s->lat_buckets[i]);
  v->last_progress_ns = LD(s->last_progress_ns);
}

double run_stats_rate(const struct run_stats_view *v) {
  return v->busy_ns ? (double)v->bytes * 1e9 / (double)v->busy_ns : 0.0;
}

double run_stats_bucket_le(int i) { return (double)(1ULL << i) * 1e-6; }
