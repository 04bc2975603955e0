/* SPDX-License-Identifier: Apache-2.0 */
/* What the parent collects: one row per (mode, comms, size), each with the
 * plugin and every baseline shape, every repetition kept. report.c prints
 * the table and the JSON, plot.c draws the SVG. */
#ifndef DIAG_BENCH_REPORT_H
#define DIAG_BENCH_REPORT_H

#include <stdio.h>

#include "bench/bench.h"

#define BENCH_MAX_REPS 15
#define BENCH_MAX_ROWS 256

struct variant {
  int engine;
  struct raw_shape shape;
  char name[24];
  int nrep;
  /* per repetition: GB/s, latency p50/p99 in us, CPU s/GB (whole
   * processes, and only the thread that drives the requests) */
  double gbps[BENCH_MAX_REPS], p50[BENCH_MAX_REPS], p99[BENCH_MAX_REPS];
  double cpu[BENCH_MAX_REPS], cpu_drv[BENCH_MAX_REPS];
  double host_cpu[BENCH_MAX_REPS]; /* busy CPU of the whole host, s/GB */
  double foreign[BENCH_MAX_REPS];  /* share of the host's CPU others used meanwhile */
  double m_gbps, m_p50, m_p99, m_cpu, m_cpu_drv, m_host_cpu; /* medians */
  double pilot; /* the shape's median GB/s (p50 us for lat) in the selection pass */
};

struct row {
  int mode, ncomms, window;
  uint64_t size, warm, iters;
  int nvariant; /* variants[0] is the plugin */
  struct variant variants[1 + BENCH_MAX_SHAPES];
  int best;                    /* the baseline shape compared against; -1 without baseline */
  double r_gbps, r_p50, r_cpu; /* plugin / baseline; 0 when there is none */
  bool is_verified;
};

struct opts {
  const char *placement; /* loopback | netns */
  const char *transport; /* tcp | ib */
  const char *plugin;
  int abi, dev;
  bool is_verbose, has_baseline, is_corrupting, is_lat_one_conn, is_wait_quiet, is_pinned;
  int modes[MODE_COUNT];
  uint64_t sizes[BENCH_MAX_SIZES], lat_sizes[BENCH_MAX_SIZES];
  int nsizes, nlat_sizes;
  int comms[BENCH_MAX_COMMS], ncomms_list;
  struct raw_shape raw_shapes[BENCH_MAX_SHAPES];
  int nraw_shapes;
  int window, reps, idle_us;
  int select_reps; /* pilot repetitions that choose each size's baseline shape */
  uint64_t target_bytes, max_mem, raw_min_stripe;
  uint64_t max_msgs, lat_iters;
  const char *json, *svg;
  char command[2048];
};

struct report {
  const struct opts *o;
  char where[256]; /* placement in words */
  char plugin_desc[512];
  char started[32];
  double load1;
  int ncpu;
  struct row rows[BENCH_MAX_ROWS];
  int nrows;
  bool has_failed;
  char fail_msg[1024];
};

extern const char *const mode_name[MODE_COUNT];

/* run.c */
int bench_run(struct report *rep);

/* report.c */
void report_header(FILE *f, const struct report *rep);
void report_block(FILE *f, const struct report *rep, const struct row *r);
void report_row(FILE *f, const struct row *r);
/* Medians, the best baseline shape, ratios. */
void row_finish(struct row *r);
/* Target verdicts (README's targets), printed under the table. */
void report_targets(FILE *f, const struct report *rep);
int report_json(const struct report *rep, const char *path);

/* plot.c */
int plot_svg(const struct report *rep, const char *path);

#endif
