/* SPDX-License-Identifier: Apache-2.0 */
/* A worker process: one rank. It enters its namespace host, loads the
 * plugin and answers the parent's commands: listen (offer handles),
 * connect (to the peer's handles, both engines), run (one measurement),
 * quit. Buffers live here, shared by both engines, so a plugin run and the
 * baseline run beside it move the same bytes from the same pages. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench/drv.h"
#include "bench/netns.h"

struct worker {
  const struct worker_cfg *cfg;
  int plugin_status; /* 0 ready, -1 failed, 1 nothing to measure (skip) */
  char plugin_err[512];
  struct plugin_driver plugin;
  struct raw_driver raw;
  int ncomms, window;
  size_t pool_len;
  uint8_t *spool[BENCH_MAX_COMMS], *rpool[BENCH_MAX_COMMS];
  uint64_t filled_size;
  int filled_window;
  int64_t *dones[2 * BENCH_MAX_COMMS];
  int64_t *lats;
  size_t done_cap, lat_cap;
  int64_t cmd_cpu0;
};

static int io_all(int fd, void *buf, size_t len, bool is_out) {
  uint8_t *p = buf;
  while (len) {
    ssize_t n = is_out ? write(fd, p, len) : read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int io_write(int fd, const void *buf, size_t len) { return io_all(fd, (void *)buf, len, true); }
int io_read(int fd, void *buf, size_t len) { return io_all(fd, buf, len, false); }

/* Address space for the largest window of the largest size; pages are
 * touched only as far as a run uses them (the parent caps that). */
static int alloc_pools(struct worker *w, const struct bench_cmd *c, char *err, size_t cap) {
  w->ncomms = c->max_comms;
  w->window = c->max_window;
  w->pool_len = (size_t)c->max_window * (size_t)c->max_size;
  for (int i = 0; i < w->ncomms; i++) {
    w->spool[i] = mmap(NULL, w->pool_len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    w->rpool[i] = mmap(NULL, w->pool_len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (w->spool[i] == MAP_FAILED || w->rpool[i] == MAP_FAILED) {
      w->spool[i] = w->rpool[i] = NULL;
      snprintf(err, cap, "cannot map %zu bytes of buffers: %s", w->pool_len, strerror(errno));
      return -1;
    }
  }
  return 0;
}

static int do_listen(struct worker *w, const struct bench_cmd *c, struct bench_res *res,
                     struct bench_handles *h) {
  memset(h, 0, sizeof(*h));
  if (alloc_pools(w, c, res->err, sizeof(res->err)) ||
      raw_listen(&w->raw, w->cfg->rank, w->cfg->addr, c->max_comms, BENCH_MAX_SOCKS, h, res->err,
                 sizeof(res->err)))
    return -1;
  if (w->plugin_status) {
    snprintf(res->err, sizeof(res->err), "%s", w->plugin_err);
    return w->plugin_status;
  }
  if (plugin_driver_listen(&w->plugin, c->max_comms, h, res->err, sizeof(res->err))) return -1;
  snprintf(res->err, sizeof(res->err), "%s", w->plugin.desc); /* for the report header */
  return 0;
}

static int do_connect(struct worker *w, const struct bench_handles *peer, struct bench_res *res) {
  if (raw_connect(&w->raw, peer, res->err, sizeof(res->err))) return -1;
  return plugin_driver_connect(&w->plugin, peer, w->spool, w->rpool, w->pool_len, res->err,
                               sizeof(res->err));
}

/* Which directions of which comms this rank drives in a run. */
static int make_streams(struct worker *w, const struct bench_cmd *c, struct stream *s) {
  int n = 0, rank = w->cfg->rank;
  int ncomms = c->mode == MODE_LAT ? 1 : c->ncomms;
  bool sends = c->mode != MODE_UNI || rank == 0, recvs = c->mode != MODE_UNI || rank == 1;
  for (int i = 0; i < ncomms; i++) {
    if (sends) s[n++] = (struct stream){.is_send = true, .comm = i, .pool = w->spool[i]};
    if (recvs) s[n++] = (struct stream){.is_send = false, .comm = i, .pool = w->rpool[i]};
  }
  for (int i = 0; i < n; i++) {
    s[i].my_rank = rank;
    s[i].peer_rank = 1 - rank;
    s[i].done_ns = w->dones[i];
  }
  return n;
}

/* Untimed: patterns into send slots (once per size), poison into receive
 * slots (every run, so the final full check sees only fresh bytes). */
static void prepare(struct worker *w, const struct bench_cmd *c, struct stream *s, int n) {
  int refill = w->filled_size != c->size || w->filled_window != c->window;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < c->window; k++) {
      uint8_t *slot = s[i].pool + (size_t)k * c->size;
      if (!s[i].is_send) memset(slot, 0xee, c->size);
      else if (refill) pattern_fill(slot, c->size, pattern_key(s[i].my_rank, s[i].comm, k));
    }
  w->filled_size = c->size;
  w->filled_window = c->window;
}

static int grow(int64_t **p, size_t *cap, size_t want, int count) {
  if (want <= *cap) return 0;
  for (int i = 0; i < count; i++) {
    free(p[i]);
    p[i] = malloc(want * sizeof(int64_t));
    if (!p[i]) return -1;
  }
  *cap = want;
  return 0;
}

static int check_streams(struct stream *s, int n, const struct bench_cmd *c, char *err,
                         size_t cap) {
  uint64_t total = c->warm + c->iters;
  uint64_t from = total > (uint64_t)c->window ? total - (uint64_t)c->window : 0;
  for (int i = 0; i < n; i++) {
    if (s[i].is_send) continue;
    for (uint64_t m = from; m < total; m++) stream_check(&s[i], c, m, true);
    if (s[i].has_failed) {
      snprintf(err, cap, "%s", s[i].err);
      return -1;
    }
  }
  return 0;
}

/* Both ranks say ready, then the parent starts both: neither side's
 * preparation is counted in the other's time or CPU. */
static int ready_go(struct worker *w) {
  char go;
  return io_write(w->cfg->fd, "R", 1) || io_read(w->cfg->fd, &go, 1) ? -1 : 0;
}

static int do_run(struct worker *w, const struct bench_cmd *c, struct bench_res *res) {
  uint64_t total = c->warm + c->iters;
  if (c->ncomms > w->ncomms || c->window > w->window || c->window > BENCH_MAX_WINDOW ||
      c->warm < (uint64_t)c->window || c->size % 8 || c->size * (uint64_t)c->window > w->pool_len) {
    snprintf(res->err, sizeof(res->err), "run outside what was prepared");
    return ready_go(w), -1;
  }
  if (grow(w->dones, &w->done_cap, total, 2 * BENCH_MAX_COMMS) ||
      grow(&w->lats, &w->lat_cap, total * (size_t)c->ncomms, 1)) {
    snprintf(res->err, sizeof(res->err), "out of memory for %llu timestamps",
             (unsigned long long)total);
    return ready_go(w), -1;
  }
  struct stream s[2 * BENCH_MAX_COMMS];
  int n = make_streams(w, c, s);
  prepare(w, c, s, n);
  if (ready_go(w)) return -1;
  struct run_ctx r = {.cmd = c, .streams = s, .nstreams = n, .lats = w->lats};
  int64_t cpu = proc_cpu_ns();
  w->cmd_cpu0 = cpu;
  int rc = c->engine == ENGINE_PLUGIN ? plugin_driver_run(&w->plugin, &r) : raw_run(&w->raw, &r);
  res->cpu_ns = proc_cpu_ns() - cpu;
  res->cpu_drv_ns = r.cpu_drv_ns;
  if (rc) {
    snprintf(res->err, sizeof(res->err), "%s", r.err);
    return -1;
  }
  if (check_streams(s, n, c, res->err, sizeof(res->err))) return -1;
  res->moved = (c->mode == MODE_LAT ? 2 : (uint64_t)n) * total * c->size;
  if (c->mode == MODE_LAT) {
    res->nlat = r.nlat;
    return 0;
  }
  stream_window(s, n, c->warm, total, res);
  for (int i = 0; i < n; i++)
    if (!s[i].is_send)
      res->nlat += (uint32_t)stream_lat(&s[i], c->warm, total, c->window, w->lats + res->nlat);
  return 0;
}

static void worker_free(struct worker *w) {
  plugin_driver_close(&w->plugin);
  raw_close(&w->raw);
  for (int i = 0; i < BENCH_MAX_COMMS; i++) {
    if (w->spool[i]) munmap(w->spool[i], w->pool_len);
    if (w->rpool[i]) munmap(w->rpool[i], w->pool_len);
  }
  for (int i = 0; i < 2 * BENCH_MAX_COMMS; i++) free(w->dones[i]);
  free(w->lats);
}

/* Serves commands until quit or the parent goes away. */
static int serve(struct worker *w) {
  int fd = w->cfg->fd;
  struct bench_cmd c;
  while (io_read(fd, &c, sizeof(c)) == 0) {
    struct bench_res res = {0};
    struct bench_handles h;
    if (c.op == OP_QUIT) return 0;
    if (c.op == OP_LISTEN) {
      res.status = do_listen(w, &c, &res, &h);
      if (io_write(fd, &res, sizeof(res)) || io_write(fd, &h, sizeof(h))) return 1;
      continue;
    }
    if (c.op == OP_CONNECT) {
      if (io_read(fd, &h, sizeof(h))) return 1;
      res.status = do_connect(w, &h, &res);
    } else if (c.op == OP_RUN) {
      res.status = do_run(w, &c, &res);
      res.cpu_cmd_ns = proc_cpu_ns() - w->cmd_cpu0;
    }
    if (io_write(fd, &res, sizeof(res)) ||
        (res.nlat && io_write(fd, w->lats, res.nlat * sizeof(int64_t))))
      return 1;
  }
  return 1;
}

int worker_main(const struct worker_cfg *cfg) {
  struct worker w;
  memset(&w, 0, sizeof(w));
  w.cfg = cfg;
  if (cfg->cpu >= 0) { /* before any thread exists, so all inherit it */
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cfg->cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
  }
  if (cfg->netns && netns_enter(cfg->netns, w.plugin_err, sizeof(w.plugin_err))) {
    w.plugin_status = -1;
  } else {
    if (cfg->ifname) setenv("NCCL_SOCKET_IFNAME", cfg->ifname, 1);
    w.plugin_status = plugin_driver_open(&w.plugin, cfg, w.plugin_err, sizeof(w.plugin_err));
  }
  int rc = serve(&w);
  worker_free(&w);
  return rc;
}
