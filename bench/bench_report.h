/* SPDX-License-Identifier: Apache-2.0 */
/* What the parent collects: one row per (mode, comms, size), each with the
 * plugin, the compared plugin (--compare) and every baseline shape, every
 * repetition kept; and per comm count, what each engine's comms cost the
 * rank processes. report.c prints the table, targets.c judges the targets,
 * report_json.c writes the JSON, plot.c draws the SVG. */
#ifndef DIAG_BENCH_BENCH_REPORT_H
#define DIAG_BENCH_BENCH_REPORT_H

#include <stdio.h>

#include "bench/bench.h"
#include "tools/json_dest.h"

#define BENCH_MAX_REPS 15
#define BENCH_MAX_ROWS 256

struct variant {
  int engine; /* enum bench_engine */
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
  int threads;  /* the most threads either rank had at the end of a repetition */
};

struct row {
  int mode, ncomms, window;
  uint64_t size, warm, iters;
  int nvariant; /* variants[0] is the plugin, then the compared plugin (cmp), then the baseline
                   shapes */
  struct variant variants[2 + BENCH_MAX_SHAPES + 1];
  int cmp;                     /* the compared plugin's variant; -1 without --compare */
  int first_raw;               /* the first baseline shape's variant */
  int best;                    /* the baseline shape compared against; -1 without baseline */
  double r_gbps, r_p50, r_cpu; /* plugin / baseline; 0 when there is none */
  double c_gbps, c_p50, c_cpu; /* plugin / compared plugin; 0 when there is none */
  bool is_verified;
};

/* What one comm count's connections cost each rank process, per engine. */
struct block {
  int ncomms;
  int raw_socks;   /* baseline sockets per comm opened for this block */
  bool is_one_way; /* only rank 0 -> rank 1 comms (no bidir or ping-pong in the block) */
  struct proc_usage usage[2][ENGINE_COUNT];
};

enum { BENCH_MAX_RANK_ENVS = 16 };

struct opts {
  const char *placement; /* loopback | netns */
  const char *transport; /* tcp | ib */
  const char *plugin;
  const char *compare; /* the compared plugin's path, or NULL */
  int abi, dev;
  const char *fuse; /* --fuse: devices each rank fuses with makeVDevice ("0,1"), or NULL */
  bool is_verbose, has_baseline, is_corrupting, is_lat_one_conn, is_wait_quiet, is_pinned;
  bool is_nccl_shape; /* --nccl-shape: the grid NCCL runs, and its table */
  bool has_targets;   /* --targets: the development goals' verdicts */
  int modes[MODE_COUNT];
  uint64_t sizes[BENCH_MAX_SIZES], lat_sizes[BENCH_MAX_SIZES];
  int nsizes, nlat_sizes;
  int comms[BENCH_MAX_COMM_COUNTS], ncomms_list;
  struct raw_shape raw_shapes[BENCH_MAX_SHAPES];
  int nraw_shapes;
  int window, reps, idle_us;
  int select_reps; /* pilot repetitions that choose each size's baseline shape */
  uint64_t target_bytes, max_mem, raw_min_stripe;
  uint64_t max_msgs, lat_iters;
  struct json_dest json; /* --json[=FILE] */
  const char *svg;
  /* --rank-env R:NAME=VALUE: set in rank R only, before it loads a plugin */
  const char *rank_envs[BENCH_MAX_RANK_ENVS];
  int rank_env_ranks[BENCH_MAX_RANK_ENVS];
  int nrank_envs;
  char command[2048];
};

struct report {
  const struct opts *o;
  char where[256]; /* placement in words */
  char plugin_desc[512];
  char compare_desc[512];
  long nofile; /* RLIMIT_NOFILE the ranks run with */
  struct block blocks[BENCH_MAX_COMM_COUNTS];
  int nblocks;
  char started[32];
  double load1;
  int ncpu;
  struct row rows[BENCH_MAX_ROWS];
  int nrows;
  bool has_failed;
  char fail_msg[1024];
};

extern const char *const mode_name[MODE_COUNT];

/* run.c: the whole run. Returns the process exit status: 0, 1 (failed:
 * fail_msg says why), 77 (nothing to measure here: a skip). */
int bench_run(struct report *rep);

/* report.c */
void report_header(FILE *f, const struct report *rep);
/* What a comm count's connections cost, under its blocks. */
void report_usage(FILE *f, const struct report *rep, const struct block *b);
void report_block(FILE *f, const struct report *rep, const struct row *r);
void report_row(FILE *f, const struct row *r);
/* Medians, the best baseline shape, ratios. */
void row_finish(struct row *r);

/* targets.c: verdicts on the README's targets, printed under the table
 * and kept in the JSON. */
#define NTARGETS 7
struct verdict {
  const char *name;
  double worst;   /* the worst ratio seen */
  char where[64]; /* the row it was seen in */
  bool is_seen, has_passed;
};
void targets_judge(const struct report *rep, struct verdict v[NTARGETS]);
/* The host's other load while measuring, then (--targets only: they are
 * development goals, not a user's verdict) the targets. */
void report_targets(FILE *f, const struct report *rep);

/* shape.c: the NCCL-shape table (--nccl-shape), after the blocks and in
 * the JSON */
struct json;
void report_shape(FILE *f, const struct report *rep);
void json_shape(struct json *j, const struct report *rep);

/* report_json.c */
/* The JSON record on f; the caller checks and closes f. */
void report_json(const struct report *rep, FILE *f);

/* plot.c */
/* Writes the SVG to path: 0, or the errno of the open or write that failed. */
int plot_svg(const struct report *rep, const char *path);

#endif
