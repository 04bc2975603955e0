/* SPDX-License-Identifier: Apache-2.0 */
/* Per-connection run-time figures: bytes moved, time busy (at least one
 * request outstanding), completions, completion latency (post to done) and
 * the last progress. Each comm's figures are written by the one thread
 * that drives the comm (NCCL's proxy thread) and read by others (the
 * metrics writer, the stall check), so every field is an atomic written
 * with relaxed stores: no read-modify-write, no lock on the data path. */
#ifndef DIAG_TRANSPORT_RUN_STATS_H
#define DIAG_TRANSPORT_RUN_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Completion latency: log2 buckets of microseconds, bucket i holds
 * latencies in [2^(i-1), 2^i) us (bucket 0: under 1 us); the last one
 * everything longer. */
#define RUN_LAT_BUCKETS 24

struct run_stats {
  /* the driving thread's own: not read elsewhere */
  int outstanding;       /* requests posted and not yet done */
  int64_t busy_since_ns; /* when outstanding last went from 0 to 1 */

  /* published */
  _Atomic uint64_t bytes;       /* payload bytes of completed requests */
  _Atomic uint64_t busy_ns;     /* closed busy periods; add now - busy_since while busy */
  _Atomic uint64_t completions; /* requests done */
  _Atomic uint64_t lat_sum_ns;  /* sum of completion latencies */
  _Atomic uint64_t lat_max_ns;
  _Atomic uint64_t lat_buckets[RUN_LAT_BUCKETS];
  _Atomic int64_t last_progress_ns; /* CLOCK_MONOTONIC of the last completion; 0 before any */
  atomic_bool is_busy;
  _Atomic int64_t busy_start_ns; /* published copy of busy_since_ns */
};

/* A request was posted on the comm at now. */
void run_stats_post(struct run_stats *s, int64_t now);
/* A request posted at posted_ns completed at now with bytes payload. */
void run_stats_done(struct run_stats *s, int64_t posted_ns, uint64_t bytes, int64_t now);

/* A consistent-enough copy for readers on other threads. */
struct run_stats_view {
  uint64_t bytes, busy_ns, completions, lat_sum_ns, lat_max_ns;
  uint64_t lat_buckets[RUN_LAT_BUCKETS];
  int64_t last_progress_ns;
};
void run_stats_read(const struct run_stats *s, int64_t now, struct run_stats_view *v);
/* Bytes per second while busy; 0 when it never was. */
double run_stats_rate(const struct run_stats_view *v);
/* The upper bound, in seconds, of latency bucket i. */
double run_stats_bucket_le(int i);

#endif
