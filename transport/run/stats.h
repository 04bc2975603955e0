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
#include <time.h>

/* Completion latency is measured on one request in RUN_LAT_SAMPLE (a
 * clock read costs ~25-90 ns, a small message's whole turn ~1.5 us); busy
 * time needs the clock only when the comm goes idle or busy, and the last
 * progress takes the coarse clock (a few ns, a few ms of resolution). */
#define RUN_LAT_SAMPLE 16

/* Completion latency: log2 buckets of microseconds, bucket i holds
 * latencies in [2^(i-1), 2^i) us (bucket 0: under 1 us); the last one
 * everything from 16 ms. Counts are 32-bit, like everything here sized
 * for thousands of idle comms (a comm's memory has a budget). */
#define RUN_LAT_BUCKETS 16

struct run_stats {
  /* the driving thread's own: not read elsewhere */
  int outstanding;       /* requests posted and not yet done */
  uint32_t posts;        /* requests posted: picks the sampled ones */
  int64_t busy_since_ns; /* when outstanding last went from 0 to 1 */
  const void *sampled;   /* the request whose latency is measured, at most one at a time */
  int64_t sampled_ns;    /* when it was posted */

  /* published */
  _Atomic uint64_t bytes;       /* payload bytes of completed requests */
  _Atomic uint64_t busy_ns;     /* closed busy periods; add now - busy_since while busy */
  _Atomic uint64_t completions; /* requests done */
  _Atomic uint64_t lat_count;   /* completions whose latency was sampled */
  _Atomic uint64_t lat_sum_ns;  /* sum of their latencies */
  _Atomic uint64_t lat_max_ns;
  _Atomic uint32_t lat_buckets[RUN_LAT_BUCKETS];
  _Atomic int64_t last_progress_ns; /* CLOCK_MONOTONIC of the last completion; 0 before any */
  atomic_bool is_busy;
  _Atomic int64_t busy_start_ns; /* published copy of busy_since_ns */
};

/* NCCL_DIAG_RUN_STATS, read once: whether the data calls keep figures. */
bool run_stats_is_on(void);

/* Request req was posted on the comm. */
void run_stats_post(struct run_stats *s, const void *req);
/* Request req completed with bytes payload. */
void run_stats_done(struct run_stats *s, const void *req, uint64_t bytes);

/* A consistent-enough copy for readers on other threads. */
struct run_stats_view {
  uint64_t bytes, busy_ns, completions, lat_count, lat_sum_ns, lat_max_ns;
  uint64_t lat_buckets[RUN_LAT_BUCKETS];
  int64_t last_progress_ns;
};
void run_stats_read(const struct run_stats *s, int64_t now, struct run_stats_view *v);
/* Bytes per second while busy; 0 when it never was. */
double run_stats_rate(const struct run_stats_view *v);
/* The upper bound, in seconds, of latency bucket i. */
double run_stats_bucket_le(int i);

#endif
