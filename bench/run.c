/* SPDX-License-Identifier: Apache-2.0 */
/* The parent: starts the two worker ranks (in namespace hosts when asked),
 * relays their handles, and runs the plan. For every size it alternates
 * the plugin and the baseline shapes within each repetition (and flips the
 * order every other repetition), so machine noise lands on both. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/netns.h"
#include "bench/report.h"

#define REPLY_TIMEOUT_MS (600 * 1000)

struct ranks {
  int fd[2];
  pid_t pid[2];
  int64_t *lats[2]; /* each rank's latencies of the last reply */
  size_t lat_caps[2];
  uint32_t run_id;
};

static int spawn(struct ranks *k, const struct opts *o, const struct netns *ns) {
  for (int r = 0; r < 2; r++) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
      close(sv[0]);
      if (r == 1) close(k->fd[0]);
      signal(SIGINT, SIG_DFL); /* the parent removes the namespaces */
      signal(SIGTERM, SIG_DFL);
      signal(SIGHUP, SIG_DFL);
      struct worker_cfg cfg = {
        .rank = r,
        .fd = sv[1],
        .plugin = o->plugin,
        .abi = o->abi,
        .dev = o->dev,
        .netns = ns ? ns->ns[r] : NULL,
        .is_verbose = o->is_verbose,
        .is_rdma_only = !strcmp(o->transport, "ib"),
        .cpu = o->is_pinned ? r % (int)sysconf(_SC_NPROCESSORS_ONLN) : -1,
      };
      /* The plugin must use the path the baseline uses; an RDMA check may
       * need the fixture's own interface names, so the user's win there. */
      char ifname[24];
      snprintf(ifname, sizeof(ifname), "=%s", ns ? ns->veth[r] : "lo");
      cfg.ifname = cfg.is_rdma_only && getenv("NCCL_SOCKET_IFNAME") ? NULL : ifname;
      cfg.addr = ns ? ns->addr[r] : "127.0.0.1";
      _exit(worker_main(&cfg));
    }
    close(sv[1]);
    k->fd[r] = sv[0];
    k->pid[r] = pid;
  }
  return 0;
}

static void stop(struct ranks *k, bool must_kill) {
  struct bench_cmd q = {.op = OP_QUIT};
  for (int r = 0; r < 2; r++) {
    if (k->pid[r] <= 0) continue;
    if (must_kill) kill(k->pid[r], SIGKILL);
    else io_write(k->fd[r], &q, sizeof(q));
    close(k->fd[r]);
    waitpid(k->pid[r], NULL, 0);
    k->pid[r] = 0;
    free(k->lats[r]);
  }
}

static int read_timed(int fd, void *buf, size_t len) {
  struct pollfd p = {fd, POLLIN, 0};
  if (poll(&p, 1, REPLY_TIMEOUT_MS) != 1) return -1;
  return io_read(fd, buf, len);
}

static int read_one(struct ranks *k, int r, struct bench_res *res, bool has_lats) {
  if (io_read(k->fd[r], res, sizeof(*res))) return -1;
  if (!has_lats || !res->nlat) return 0;
  if (res->nlat > k->lat_caps[r]) {
    free(k->lats[r]);
    k->lats[r] = malloc(res->nlat * sizeof(int64_t));
    k->lat_caps[r] = k->lats[r] ? res->nlat : 0;
  }
  return k->lats[r] ? io_read(k->fd[r], k->lats[r], res->nlat * sizeof(int64_t)) : -1;
}

/* Reads both answers in whichever order they come, so the first rank to
 * fail is heard at once (its peer may be stuck waiting for it: the caller
 * then kills both). On failure rep->fail_msg names the rank and cause. */
static int replies(struct ranks *k, struct bench_res res[2], struct report *rep, bool has_lats) {
  int have[2] = {0, 0};
  while (!have[0] || !have[1]) {
    struct pollfd p[2] = {{have[0] ? -1 : k->fd[0], POLLIN, 0},
                          {have[1] ? -1 : k->fd[1], POLLIN, 0}};
    if (poll(p, 2, REPLY_TIMEOUT_MS) <= 0) {
      snprintf(rep->fail_msg, sizeof(rep->fail_msg), "rank %d hung (no answer in %d s)",
               have[0] ? 1 : 0, REPLY_TIMEOUT_MS / 1000);
      return -1;
    }
    for (int r = 0; r < 2; r++) {
      if (have[r] || !p[r].revents) continue;
      if (read_one(k, r, &res[r], has_lats)) {
        snprintf(rep->fail_msg, sizeof(rep->fail_msg), "rank %d died", r);
        return -1;
      }
      have[r] = 1;
      if (res[r].status) {
        snprintf(rep->fail_msg, sizeof(rep->fail_msg), "rank %d: %s", r, res[r].err);
        return res[r].status;
      }
    }
  }
  return 0;
}

static int setup(struct ranks *k, struct report *rep) {
  const struct opts *o = rep->o;
  uint64_t max_size = 8;
  for (int i = 0; i < o->nsizes; i++) max_size = o->sizes[i] > max_size ? o->sizes[i] : max_size;
  for (int i = 0; i < o->nlat_sizes; i++)
    max_size = o->lat_sizes[i] > max_size ? o->lat_sizes[i] : max_size;
  int max_comms = 1;
  for (int i = 0; i < o->ncomms_list; i++)
    max_comms = o->comms[i] > max_comms ? o->comms[i] : max_comms;
  struct bench_cmd c = {
    .op = OP_LISTEN, .max_comms = max_comms, .max_window = o->window, .max_size = max_size};
  struct bench_res res[2];
  struct bench_handles h[2];
  for (int r = 0; r < 2; r++) io_write(k->fd[r], &c, sizeof(c));
  for (int r = 0; r < 2; r++) {
    if (read_timed(k->fd[r], &res[r], sizeof(res[r])) ||
        read_timed(k->fd[r], &h[r], sizeof(h[r]))) {
      snprintf(rep->fail_msg, sizeof(rep->fail_msg), "rank %d died while starting", r);
      return -1;
    }
  }
  for (int r = 0; r < 2; r++)
    if (res[r].status) {
      snprintf(rep->fail_msg, sizeof(rep->fail_msg), "rank %d: %s", r, res[r].err);
      return res[r].status;
    }
  snprintf(rep->plugin_desc, sizeof(rep->plugin_desc), "%s", res[0].err);
  c.op = OP_CONNECT;
  for (int r = 0; r < 2; r++) {
    io_write(k->fd[r], &c, sizeof(c));
    io_write(k->fd[r], &h[1 - r], sizeof(h[r]));
  }
  return replies(k, res, rep, false);
}

/* --wait-quiet: before a measurement, wait (up to a minute) for a moment
 * when other work leaves the host at least 90 % idle, since 2 CPUs shared
 * with builds make any single number meaningless. */
static void wait_quiet(const struct report *rep) {
  for (int tries = 0; tries < 300; tries++) {
    int64_t b = host_busy_ns(true), t = mono_ns();
    usleep(200000);
    double busy = (double)(host_busy_ns(true) - b) / ((double)(mono_ns() - t) * rep->ncpu);
    if (busy < 0.10) return;
  }
}

/* One measurement of one variant: both ranks prepare, then start together. */
static int measure(struct ranks *k, struct report *rep, struct row *row, struct variant *v) {
  struct bench_cmd c = {.op = OP_RUN,
                        .engine = v->engine,
                        .mode = row->mode,
                        .ncomms = row->ncomms,
                        .window = row->window,
                        .shape = v->shape,
                        .raw_min_stripe = rep->o->raw_min_stripe,
                        .size = row->size,
                        .warm = row->warm,
                        .iters = row->iters,
                        .run_id = ++k->run_id,
                        .is_corrupting = rep->o->is_corrupting,
                        .idle_us = rep->o->idle_us};
  char ready[2];
  if (rep->o->is_wait_quiet) wait_quiet(rep);
  for (int r = 0; r < 2; r++) io_write(k->fd[r], &c, sizeof(c));
  for (int r = 0; r < 2; r++)
    if (read_timed(k->fd[r], &ready[r], 1)) {
      snprintf(rep->fail_msg, sizeof(rep->fail_msg), "rank %d died or hung", r);
      return -1;
    }
  int64_t host = host_busy_ns(true), proc = host_busy_ns(false), t = mono_ns();
  for (int r = 0; r < 2; r++) io_write(k->fd[r], "G", 1);
  struct bench_res res[2];
  if (replies(k, res, rep, true)) return -1;
  host = host_busy_ns(true) - host;
  proc = host_busy_ns(false) - proc;
  t = mono_ns() - t;
  int i = v->nrep++;
  double gb = (double)(res[0].moved + res[1].moved) / 2 / 1e9;
  v->host_cpu[i] = (double)host / 1e9 / gb;
  /* CPU others (builds, tests) used while we measured; approximate */
  double other = (double)(proc - res[0].cpu_cmd_ns - res[1].cpu_cmd_ns) / ((double)t * rep->ncpu);
  /* /proc/stat ticks are 10 ms: shorter runs say nothing */
  v->foreign[i] = t < 100000000 ? NAN : other < 0 ? 0 : other;
  v->cpu[i] = (double)(res[0].cpu_ns + res[1].cpu_ns) / 1e9 / gb;
  v->cpu_drv[i] = (double)(res[0].cpu_drv_ns + res[1].cpu_drv_ns) / 1e9 / gb;
  size_t n = 0;
  v->gbps[i] = 0;
  for (int r = 0; r < 2; r++) {
    if (res[r].timed_msgs && res[r].t_end_ns > res[r].t0_ns)
      v->gbps[i] +=
        (double)res[r].timed_msgs * (double)row->size / (double)(res[r].t_end_ns - res[r].t0_ns);
    if (r == 1 && res[1].nlat) { /* pool both ranks' values */
      int64_t *all = realloc(k->lats[0], (res[0].nlat + res[1].nlat) * sizeof(int64_t));
      if (!all) return -1;
      memcpy(all + res[0].nlat, k->lats[1], res[1].nlat * sizeof(int64_t));
      k->lats[0] = all;
      k->lat_caps[0] = res[0].nlat + res[1].nlat;
    }
    n += res[r].nlat;
  }
  v->p50[i] = (double)percentile(k->lats[0], n, 0.50) / 1e3;
  v->p99[i] = (double)percentile(k->lats[0], n, 0.99) / 1e3;
  if (row->mode == MODE_LAT) v->gbps[i] = v->p50[i] > 0 ? (double)row->size / (v->p50[i] * 500) : 0;
  return 0;
}

/* Latency baselines: sleep in recv or spin on it, over one connection each
 * way, as NCCL's two one-way comms are; --lat-one-conn adds both ways on
 * one connection (replies carry the ACKs: faster, but no plugin can do it,
 * since NCCL connects each direction on its own). */
static const struct raw_shape lat_shapes[] = {
  {1, false, false}, {1, true, false}, {1, false, true}, {1, true, true}};

static void add_variants(const struct opts *o, struct row *r) {
  r->variants[0] = (struct variant){.engine = ENGINE_PLUGIN, .shape = {1, 0, 0}};
  snprintf(r->variants[0].name, sizeof(r->variants[0].name), "plugin");
  r->nvariant = 1;
  if (!o->has_baseline) return;
  int n = r->mode == MODE_LAT ? (o->is_lat_one_conn ? 4 : 2) : o->nraw_shapes;
  for (int i = 0; i < n && r->nvariant <= BENCH_MAX_SHAPES; i++) {
    struct variant *v = &r->variants[r->nvariant++];
    *v = (struct variant){.engine = ENGINE_RAW};
    if (r->mode == MODE_LAT) {
      v->shape = lat_shapes[i];
      snprintf(v->name, sizeof(v->name), "%s %s", v->shape.is_spinning ? "spin" : "sleep",
               v->shape.is_shared ? "1conn" : "2conn");
    } else {
      v->shape = o->raw_shapes[i];
      snprintf(v->name, sizeof(v->name), "%d sock%s%s", v->shape.nsocks,
               v->shape.nsocks > 1 ? "s" : "", v->shape.is_spinning ? " spin" : "");
    }
  }
}

/* Window, warm-up and message count of a row; -1 when its buffers would
 * not fit in --max-mem. */
static int plan_row(const struct opts *o, int mode, int ncomms, uint64_t size, struct row *r) {
  memset(r, 0, sizeof(*r));
  r->mode = mode;
  r->ncomms = ncomms;
  r->size = size;
  r->best = -1;
  if (mode == MODE_LAT) {
    uint64_t it = o->lat_iters, by_bytes = o->target_bytes / size;
    if (it > by_bytes) it = by_bytes > 100 ? by_bytes : 100;
    r->window = 1;
    r->iters = it;
    r->warm = it / 10 > 1 ? it / 10 : 1;
  } else {
    uint64_t per_slot = size * (uint64_t)ncomms * (mode == MODE_BIDIR ? 2 : 1);
    uint64_t w = o->max_mem / per_slot;
    if (!w) return -1;
    r->window = w < (uint64_t)o->window ? (int)w : o->window;
    uint64_t it = o->target_bytes / (size * (uint64_t)ncomms);
    if (it > o->max_msgs) it = o->max_msgs;
    if (it < 2 * (uint64_t)r->window) it = 2 * (uint64_t)r->window;
    r->iters = it;
    r->warm = it / 16 > (uint64_t)r->window ? it / 16 : (uint64_t)r->window;
  }
  add_variants(o, r);
  return 0;
}

/* Untimed first pass of every variant at a new size: socket buffers
 * autotune over the first few hundred MB of a connection, and the first
 * repetition would pay for it. Its data is still verified. */
static int prime_row(struct ranks *k, struct report *rep, struct row *row) {
  struct row tmp = *row;
  tmp.iters =
    row->iters / 4 > 2 * (uint64_t)row->window ? row->iters / 4 : 2 * (uint64_t)row->window;
  for (int j = 0; j < row->nvariant; j++) {
    tmp.variants[j].nrep = 0;
    if (measure(k, rep, &tmp, &tmp.variants[j])) return -1;
  }
  return 0;
}

/* The baseline shape is chosen on pilot repetitions and then measured
 * against the plugin on fresh ones. Choosing the best of several shapes on
 * the same noisy repetitions the ratio comes from would flatter the
 * baseline: the largest of several noisy medians is biased upwards. */
static int select_shape(struct ranks *k, struct report *rep, struct row *row) {
  if (rep->o->select_reps == 0 || row->nvariant <= 2) return 0;
  for (int i = 0; i < rep->o->select_reps; i++)
    for (int j = 1; j < row->nvariant; j++)
      if (measure(k, rep, row, &row->variants[i % 2 ? row->nvariant - j : j])) return -1;
  row_finish(row);
  for (int j = 1; j < row->nvariant; j++) {
    struct variant *v = &row->variants[j];
    v->pilot = row->mode == MODE_LAT ? v->m_p50 : v->m_gbps;
    v->nrep = 0;
  }
  return row->best;
}

static int run_row(struct ranks *k, struct report *rep, struct row *row) {
  if (row->mode != MODE_LAT && prime_row(k, rep, row)) return -1;
  int chosen = select_shape(k, rep, row);
  if (chosen < 0) return -1;
  for (int i = 0; i < rep->o->reps; i++)
    for (int j = 0; j < row->nvariant; j++) {
      int v = i % 2 ? row->nvariant - 1 - j : j; /* flip the order every other repetition */
      if (chosen && v && v != chosen) continue;
      if (measure(k, rep, row, &row->variants[v])) return -1;
    }
  row->is_verified = true; /* a run with a bad byte or a short count fails instead */
  row_finish(row);
  return 0;
}

static int run_plan(struct ranks *k, struct report *rep) {
  const struct opts *o = rep->o;
  static const int order[] = {MODE_UNI, MODE_BIDIR, MODE_LAT};
  for (int oi = 0; oi < MODE_COUNT; oi++) {
    int mode = order[oi];
    if (!o->modes[mode]) continue;
    int nc = mode == MODE_LAT ? 1 : o->ncomms_list;
    for (int ci = 0; ci < nc; ci++) {
      int first = 1;
      int ns = mode == MODE_LAT ? o->nlat_sizes : o->nsizes;
      for (int si = 0; si < ns && rep->nrows < BENCH_MAX_ROWS; si++) {
        uint64_t size = mode == MODE_LAT ? o->lat_sizes[si] : o->sizes[si];
        struct row *row = &rep->rows[rep->nrows];
        if (plan_row(o, mode, mode == MODE_LAT ? 1 : o->comms[ci], size, row)) {
          printf("# %llu bytes x %d comms skipped: its buffers exceed --max-mem\n",
                 (unsigned long long)size, o->comms[ci]);
          continue;
        }
        if (first) report_block(stdout, rep, row);
        first = 0;
        if (run_row(k, rep, row)) return -1;
        report_row(stdout, row);
        fflush(stdout);
        rep->nrows++;
      }
    }
  }
  return 0;
}

int bench_run(struct report *rep) {
  const struct opts *o = rep->o;
  struct netns ns;
  int use_ns = !strcmp(o->placement, "netns"), rc = 0;
  char why[512] = "";
  if (use_ns && (rc = netns_setup(&ns, why, sizeof(why))) != 0) {
    fprintf(stderr, "nccl-net-bench: %s%s\n", rc > 0 ? "SKIP: " : "", why);
    return rc > 0 ? 77 : 1;
  }
  if (use_ns)
    snprintf(rep->where, sizeof(rep->where), "namespace hosts %s (%s %s) and %s (%s %s), veth",
             ns.ns[0], ns.veth[0], ns.addr[0], ns.ns[1], ns.veth[1], ns.addr[1]);
  else snprintf(rep->where, sizeof(rep->where), "loopback (lo, 127.0.0.1), one host");
  struct ranks k = {0};
  signal(SIGPIPE, SIG_IGN); /* a rank that died is reported, not fatal to us */
  if (spawn(&k, o, use_ns ? &ns : NULL)) {
    snprintf(rep->fail_msg, sizeof(rep->fail_msg), "cannot start the ranks: %s", strerror(errno));
    rc = -1;
  } else if ((rc = setup(&k, rep)) == 0) {
    report_header(stdout, rep);
    rc = run_plan(&k, rep);
  }
  stop(&k, rc != 0);
  if (use_ns) netns_cleanup(&ns);
  if (rc > 0) { /* nothing to measure here: a skip, not a failure */
    fprintf(stderr, "nccl-net-bench: SKIP: %s\n", rep->fail_msg);
    return 77;
  }
  if (rc) {
    rep->has_failed = true;
    fprintf(stderr, "nccl-net-bench: FAILED: %s\n", rep->fail_msg);
    printf("# FAILED: %s\n", rep->fail_msg);
    return 1;
  }
  return 0;
}
