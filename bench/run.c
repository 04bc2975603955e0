/* SPDX-License-Identifier: Apache-2.0 */
/* The parent: starts the two worker ranks (in namespace hosts when asked),
 * and for each comm count has them connect that many comms of every
 * engine (relaying their handles), then runs the plan. For every size it
 * alternates the plugin, the compared plugin and the baseline shapes
 * within each repetition (and flips the order every other repetition), so
 * machine noise lands on all of them. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_report.h"
#include "bench/netns.h"

#define REPLY_TIMEOUT_MS (600 * 1000)

struct ranks {
  int fd[2];
  pid_t pid[2];
  int64_t *lats[2]; /* each rank's latencies of the last reply */
  size_t lat_caps[2];
  uint32_t run_id;
  bool is_skip; /* a rank has nothing to measure here (fail_msg says why) */
};

/* --rank-env entries for rank r; true when one of them names
 * NCCL_SOCKET_IFNAME (then the bench's own choice steps aside). */
static bool apply_rank_env(const struct opts *o, int r) {
  bool has_ifname = false;
  for (int i = 0; i < o->nrank_envs; i++) {
    if (o->rank_env_ranks[i] != r) continue;
    const char *kv = o->rank_envs[i], *eq = strchr(kv, '=');
    char name[128];
    snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
    setenv(name, eq + 1, 1);
    has_ifname |= !strcmp(name, "NCCL_SOCKET_IFNAME");
  }
  return has_ifname;
}

/* 0, or the errno of the failed socketpair or fork. */
static int spawn(struct ranks *k, const struct opts *o, const struct netns *ns) {
  for (int r = 0; r < 2; r++) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return errno;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return errno;
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
        .compare = o->compare,
        .abi = o->abi,
        .dev = o->dev,
        .fuse = o->fuse,
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
      if (apply_rank_env(o, r)) cfg.ifname = NULL; /* the user named this rank's interface */
      int rc = worker_main(&cfg);
      fflush(NULL); /* a plugin's buffered log (NCCL's own prints to stdout) */
      _exit(rc);
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
  int n = poll(&p, 1, REPLY_TIMEOUT_MS);
  if (n != 1) return n < 0 ? errno : ETIMEDOUT;
  return io_read(fd, buf, len);
}

static int read_one(struct ranks *k, int r, struct bench_res *res, bool has_lats) {
  int rc = io_read(k->fd[r], res, sizeof(*res));
  if (rc) return rc;
  if (!has_lats || !res->nlat) return 0;
  if (res->nlat > k->lat_caps[r]) {
    free(k->lats[r]);
    k->lats[r] = malloc(res->nlat * sizeof(int64_t));
    k->lat_caps[r] = k->lats[r] ? res->nlat : 0;
  }
  return k->lats[r] ? io_read(k->fd[r], k->lats[r], res->nlat * sizeof(int64_t)) : ENOMEM;
}

/* Reads both answers in whichever order they come, so the first rank to
 * fail is heard at once (its peer may be stuck waiting for it: the caller
 * then kills both). Returns 0 or an errno: ETIMEDOUT (a rank hung),
 * ECHILD (a rank died), or the one a rank failed with; rep->fail_msg
 * names the rank and cause. */
static int replies(struct ranks *k, struct bench_res res[2], struct report *rep, bool has_lats) {
  int have[2] = {0, 0};
  while (!have[0] || !have[1]) {
    struct pollfd p[2] = {{have[0] ? -1 : k->fd[0], POLLIN, 0},
                          {have[1] ? -1 : k->fd[1], POLLIN, 0}};
    if (poll(p, 2, REPLY_TIMEOUT_MS) <= 0) {
      snprintf(rep->fail_msg, sizeof(rep->fail_msg), "rank %d hung (no answer in %d s)",
               have[0] ? 1 : 0, REPLY_TIMEOUT_MS / 1000);
      return ETIMEDOUT;
    }
    for (int r = 0; r < 2; r++) {
      if (have[r] || !p[r].revents) continue;
      if (read_one(k, r, &res[r], has_lats)) {
        snprintf(rep->fail_msg, sizeof(rep->fail_msg), "rank %d died", r);
        return ECHILD;
      }
      have[r] = 1;
      if (res[r].status) {
        snprintf(rep->fail_msg, sizeof(rep->fail_msg), "rank %d: %s", r, res[r].err);
        k->is_skip = res[r].is_skip;
        return res[r].status;
      }
    }
  }
  return 0;
}

/* Baseline sockets per comm for a block: the most any shape that will run
 * uses (a thread per socket only while the threads stay few). */
static int raw_socks(const struct opts *o, int ncomms) {
  int n = 1;
  for (int i = 0; i < o->nraw_shapes; i++) {
    const struct raw_shape *s = &o->raw_shapes[i];
    if (!s->is_event && 2 * ncomms * s->nsocks <= RAW_MAX_THREADS && s->nsocks > n) n = s->nsocks;
  }
  return n;
}

/* The largest message of the plan, and the buffer region a rank maps. */
static void plan_limits(const struct opts *o, uint64_t *max_size, uint64_t *region) {
  /* Sized by what this run measures: a ping-pong needs one slot of its
   * largest size, a bandwidth mode a window of its largest. Real verbs pin
   * every registered byte, so a latency run must not map the sweep's 1 GiB. */
  uint64_t m = 8, all = 8;
  int c = 1;
  for (int i = 0; i < o->ncomms_list; i++) c = o->comms[i] > c ? o->comms[i] : c;
  if (o->modes[MODE_UNI] || o->modes[MODE_BIDIR])
    for (int i = 0; i < o->nsizes; i++) {
      m = o->sizes[i] > m ? o->sizes[i] : m;
      uint64_t need = o->sizes[i] * (uint64_t)o->window * (uint64_t)c;
      all = need > all ? need : all;
    }
  if (o->modes[MODE_LAT])
    for (int i = 0; i < o->nlat_sizes; i++) {
      m = o->lat_sizes[i] > m ? o->lat_sizes[i] : m;
      uint64_t need = o->lat_sizes[i] * (uint64_t)c;
      all = need > all ? need : all;
    }
  *max_size = m;
  *region = all < o->max_mem ? all : o->max_mem;
}

static int listen_both(struct ranks *k, struct report *rep, struct bench_cmd *c,
                       struct bench_handles h[2]) {
  struct bench_res res[2];
  for (int r = 0; r < 2; r++) io_write(k->fd[r], c, sizeof(*c));
  for (int r = 0; r < 2; r++) {
    struct pollfd p = {k->fd[r], POLLIN, 0};
    if (poll(&p, 1, REPLY_TIMEOUT_MS) != 1 || io_read(k->fd[r], &res[r], sizeof(res[r])) ||
        handles_read(k->fd[r], &h[r])) {
      snprintf(rep->fail_msg, sizeof(rep->fail_msg), "rank %d died while starting", r);
      return ECHILD;
    }
  }
  for (int r = 0; r < 2; r++)
    if (res[r].status) {
      snprintf(rep->fail_msg, sizeof(rep->fail_msg), "rank %d: %s", r, res[r].err);
      k->is_skip = res[r].is_skip;
      return res[r].status;
    }
  char *nl = strchr(res[0].err, '\n'); /* the plugin's description, then the compared one's */
  if (nl) *nl = 0;
  snprintf(rep->plugin_desc, sizeof(rep->plugin_desc), "%s", res[0].err);
  if (nl) snprintf(rep->compare_desc, sizeof(rep->compare_desc), "%s", nl + 1);
  return 0;
}

/* One comm count's connections: every engine listens and connects, and
 * each rank says what that cost it. 0 or an errno (rep->fail_msg; a skip
 * sets k->is_skip). */
static int setup(struct ranks *k, struct report *rep, struct block *b) {
  const struct opts *o = rep->o;
  uint64_t max_size, region;
  plan_limits(o, &max_size, &region);
  struct bench_cmd c = {.op = OP_LISTEN,
                        .ncomms = b->ncomms,
                        .max_window = o->window,
                        .max_size = max_size,
                        .max_mem = region};
  c.shape.nsocks = b->raw_socks = raw_socks(o, b->ncomms);
  c.is_one_way = b->is_one_way;
  struct bench_handles h[2] = {{{0}}};
  int rc = listen_both(k, rep, &c, h);
  c.op = OP_CONNECT;
  for (int r = 0; r < 2 && !rc; r++) {
    io_write(k->fd[r], &c, sizeof(c));
    handles_write(k->fd[r], &h[1 - r]);
  }
  free(h[0].plugin), free(h[1].plugin);
  if (rc) return rc;
  struct bench_res res[2];
  if ((rc = replies(k, res, rep, false))) return rc;
  for (int r = 0; r < 2; r++) memcpy(b->usage[r], res[r].usage, sizeof(b->usage[r]));
  return 0;
}

/* --wait-quiet: before a measurement, wait (up to a minute) for a moment
 * when other work leaves the host at least 90 % idle, since 2 CPUs shared
 * with builds make any single number meaningless. */
static void wait_quiet(const struct report *rep) {
  for (int tries = 0; tries < 300; tries++) {
    int64_t b = host_busy_ns(true), t = clock_mono_ns();
    usleep(200000);
    double busy = (double)(host_busy_ns(true) - b) / ((double)(clock_mono_ns() - t) * rep->ncpu);
    if (busy < 0.10) return;
  }
}

/* One measurement of one variant: both ranks prepare, then start together.
 * 0 or an errno (rep->fail_msg says why, but for ENOMEM here). */
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
      return ECHILD;
    }
  int64_t host = host_busy_ns(true), proc = host_busy_ns(false), t = clock_mono_ns();
  for (int r = 0; r < 2; r++) io_write(k->fd[r], "G", 1);
  struct bench_res res[2];
  int rc = replies(k, res, rep, true);
  if (rc) return rc;
  host = host_busy_ns(true) - host;
  proc = host_busy_ns(false) - proc;
  t = clock_mono_ns() - t;
  int i = v->nrep++;
  double gb = (double)(res[0].moved + res[1].moved) / 2 / 1e9;
  v->host_cpu[i] = (double)host / 1e9 / gb;
  /* CPU others (builds, tests) used while we measured; approximate */
  double other = (double)(proc - res[0].cpu_cmd_ns - res[1].cpu_cmd_ns) / ((double)t * rep->ncpu);
  /* /proc/stat ticks are 10 ms: shorter runs say nothing */
  v->foreign[i] = t < 100000000 ? NAN : other < 0 ? 0 : other;
  v->cpu[i] = (double)(res[0].cpu_ns + res[1].cpu_ns) / 1e9 / gb;
  for (int r = 0; r < 2; r++)
    v->threads = res[r].threads > v->threads ? res[r].threads : v->threads;
  v->cpu_drv[i] = (double)(res[0].cpu_drv_ns + res[1].cpu_drv_ns) / 1e9 / gb;
  size_t n = 0;
  v->gbps[i] = 0;
  for (int r = 0; r < 2; r++) {
    if (res[r].timed_msgs && res[r].t_end_ns > res[r].t0_ns)
      v->gbps[i] +=
        (double)res[r].timed_msgs * (double)row->size / (double)(res[r].t_end_ns - res[r].t0_ns);
    if (r == 1 && res[1].nlat) { /* pool both ranks' values */
      int64_t *all = realloc(k->lats[0], (res[0].nlat + res[1].nlat) * sizeof(int64_t));
      if (!all) return ENOMEM;
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

static void add_raw_shape(struct row *r, const struct raw_shape *sh) {
  struct variant *v = &r->variants[r->nvariant++];
  *v = (struct variant){.engine = ENGINE_RAW, .shape = *sh};
  if (r->mode == MODE_LAT)
    snprintf(v->name, sizeof(v->name), "%s %s", sh->is_spinning ? "spin" : "sleep",
             sh->is_shared ? "1conn" : "2conn");
  else if (sh->is_event) snprintf(v->name, sizeof(v->name), "epoll");
  else
    snprintf(v->name, sizeof(v->name), "%d sock%s%s", sh->nsocks, sh->nsocks > 1 ? "s" : "",
             sh->is_spinning ? " spin" : "");
}

/* The plugin, the compared plugin, then the baseline shapes this row can
 * run: a thread per socket only while the threads stay few; with several
 * comms the epoll shape is always among them. */
static void add_variants(const struct opts *o, struct row *r, int socks) {
  r->variants[0] = (struct variant){.engine = ENGINE_PLUGIN, .shape = {1, false, false, false}};
  snprintf(r->variants[0].name, sizeof(r->variants[0].name), "plugin");
  r->nvariant = 1;
  r->cmp = -1;
  if (o->compare) {
    r->cmp = r->nvariant++;
    r->variants[r->cmp] =
      (struct variant){.engine = ENGINE_COMPARE, .shape = {1, false, false, false}};
    snprintf(r->variants[r->cmp].name, sizeof(r->variants[r->cmp].name), "compare");
  }
  r->first_raw = r->nvariant;
  if (!o->has_baseline) return;
  if (r->mode == MODE_LAT) {
    for (int i = 0; i < (o->is_lat_one_conn ? 4 : 2); i++) add_raw_shape(r, &lat_shapes[i]);
    return;
  }
  int streams = r->ncomms * (r->mode == MODE_BIDIR ? 2 : 1);
  bool has_event = false;
  for (int i = 0; i < o->nraw_shapes && r->nvariant < r->first_raw + BENCH_MAX_SHAPES; i++) {
    const struct raw_shape *sh = &o->raw_shapes[i];
    if (!sh->is_event && (sh->nsocks > socks || streams * sh->nsocks > RAW_MAX_THREADS)) continue;
    has_event |= sh->is_event;
    add_raw_shape(r, sh);
  }
  const struct raw_shape ev = {1, false, false, true};
  if ((r->ncomms > 1 || r->nvariant == r->first_raw) && !has_event) add_raw_shape(r, &ev);
}

/* Window, warm-up and message count of a row; 0, or ENOBUFS when its
 * buffers would not fit in --max-mem. */
static int plan_row(const struct opts *o, int mode, int ncomms, uint64_t size, int socks,
                    struct row *r) {
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
    if (!w) return ENOBUFS;
    r->window = w < (uint64_t)o->window ? (int)w : o->window;
    uint64_t it = o->target_bytes / (size * (uint64_t)ncomms);
    if (it > o->max_msgs) it = o->max_msgs;
    if (it < 2 * (uint64_t)r->window) it = 2 * (uint64_t)r->window;
    r->iters = it;
    r->warm = it / 16 > (uint64_t)r->window ? it / 16 : (uint64_t)r->window;
  }
  add_variants(o, r, socks);
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
    int rc = measure(k, rep, &tmp, &tmp.variants[j]);
    if (rc) return rc;
  }
  return 0;
}

/* The baseline shape is chosen on pilot repetitions and then measured
 * against the plugin on fresh ones. Choosing the best of several shapes on
 * the same noisy repetitions the ratio comes from would flatter the
 * baseline: the largest of several noisy medians is biased upwards.
 * Returns 0 or measure's errno; *chosen is the chosen shape's variant, or
 * 0 when there was nothing to choose (every shape runs). */
static int select_shape(struct ranks *k, struct report *rep, struct row *row, int *chosen) {
  int first = row->first_raw;
  *chosen = 0;
  if (rep->o->select_reps == 0 || row->nvariant - first <= 1) return 0;
  for (int i = 0; i < rep->o->select_reps; i++)
    for (int j = first; j < row->nvariant; j++) {
      int rc = measure(k, rep, row, &row->variants[i % 2 ? row->nvariant - 1 - (j - first) : j]);
      if (rc) return rc;
    }
  row_finish(row);
  for (int j = first; j < row->nvariant; j++) {
    struct variant *v = &row->variants[j];
    v->pilot = row->mode == MODE_LAT ? v->m_p50 : v->m_gbps;
    v->nrep = 0;
  }
  /* every shape ran its pilot repetitions, so one of them is the best */
  *chosen = row->best;
  return 0;
}

static int run_row(struct ranks *k, struct report *rep, struct row *row) {
  int chosen, rc = row->mode != MODE_LAT ? prime_row(k, rep, row) : 0;
  if (rc || (rc = select_shape(k, rep, row, &chosen))) return rc;
  for (int i = 0; i < rep->o->reps; i++)
    for (int j = 0; j < row->nvariant; j++) {
      int v = i % 2 ? row->nvariant - 1 - j : j; /* flip the order every other repetition */
      if (chosen && v >= row->first_raw && v != chosen) continue;
      if ((rc = measure(k, rep, row, &row->variants[v]))) return rc;
    }
  row->is_verified = true; /* a run with a bad byte or a short count fails instead */
  row_finish(row);
  return 0;
}

static int run_mode(struct ranks *k, struct report *rep, int mode, const struct block *b) {
  const struct opts *o = rep->o;
  int first = 1;
  int ns = mode == MODE_LAT ? o->nlat_sizes : o->nsizes;
  for (int si = 0; si < ns && rep->nrows < BENCH_MAX_ROWS; si++) {
    uint64_t size = mode == MODE_LAT ? o->lat_sizes[si] : o->sizes[si];
    struct row *row = &rep->rows[rep->nrows];
    int nc = mode == MODE_LAT ? 1 : b->ncomms;
    if (plan_row(o, mode, nc, size, b->raw_socks, row)) {
      printf("# %llu bytes x %d comms skipped: its buffers exceed --max-mem\n",
             (unsigned long long)size, nc);
      continue;
    }
    if (first) report_block(stdout, rep, row);
    first = 0;
    int rc = run_row(k, rep, row);
    if (rc) return rc;
    report_row(stdout, row);
    fflush(stdout);
    rep->nrows++;
  }
  return 0;
}

/* Per comm count: connect, say what it cost, run the bandwidth modes (and
 * ping-pong, on one comm, in the first block). */
static int run_plan(struct ranks *k, struct report *rep) {
  const struct opts *o = rep->o;
  static const int order[] = {MODE_UNI, MODE_BIDIR, MODE_LAT};
  for (int ci = 0; ci < o->ncomms_list; ci++) {
    struct block *b = &rep->blocks[rep->nblocks];
    b->ncomms = o->comms[ci];
    b->is_one_way = !o->modes[MODE_BIDIR] && !(o->modes[MODE_LAT] && ci == 0);
    int rc = setup(k, rep, b);
    if (rc) return rc;
    rep->nblocks++;
    if (ci == 0) report_header(stdout, rep);
    report_usage(stdout, rep, b);
    for (int oi = 0; oi < MODE_COUNT; oi++) {
      int mode = order[oi];
      if (!o->modes[mode] || (mode == MODE_LAT && ci > 0)) continue;
      if ((rc = run_mode(k, rep, mode, b))) return rc;
    }
  }
  return 0;
}

/* Thousands of comms need tens of thousands of descriptors per rank: the
 * soft limit goes up to the hard one, and the hard one too where we may. */
static void raise_nofile(struct report *rep) {
  const struct opts *o = rep->o;
  int c = 1;
  for (int i = 0; i < o->ncomms_list; i++) c = o->comms[i] > c ? o->comms[i] : c;
  rlim_t want = (rlim_t)c * 24 + 1024;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl)) return;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
    struct rlimit up = {want, want};
    if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl = up;
  }
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) rep->nofile = (long)rl.rlim_cur;
}

int bench_run(struct report *rep) {
  const struct opts *o = rep->o;
  struct netns ns;
  int use_ns = !strcmp(o->placement, "netns"), rc = 0;
  char why[512] = "";
  enum netns_outcome nso = use_ns ? netns_setup(&ns, why, sizeof(why)) : NETNS_READY;
  if (nso != NETNS_READY) {
    bool is_skip = nso == NETNS_UNAVAILABLE;
    fprintf(stderr, "nccl-net-bench: %s%s\n", is_skip ? "SKIP: " : "", why);
    return is_skip ? 77 : 1;
  }
  if (use_ns)
    snprintf(rep->where, sizeof(rep->where), "namespace hosts %s (%s %s) and %s (%s %s), veth",
             ns.ns[0], ns.veth[0], ns.addr[0], ns.ns[1], ns.veth[1], ns.addr[1]);
  else snprintf(rep->where, sizeof(rep->where), "loopback (lo, 127.0.0.1), one host");
  struct ranks k = {0};
  raise_nofile(rep);
  signal(SIGPIPE, SIG_IGN); /* a rank that died is reported, not fatal to us */
  if ((rc = spawn(&k, o, use_ns ? &ns : NULL))) {
    snprintf(rep->fail_msg, sizeof(rep->fail_msg), "cannot start the ranks: %s", strerror(rc));
  } else {
    rc = run_plan(&k, rep);
  }
  stop(&k, rc != 0);
  if (use_ns) netns_cleanup(&ns);
  if (rc && k.is_skip) { /* nothing to measure here: a skip, not a failure */
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
