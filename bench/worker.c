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
  int plugin_status; /* 0 ready, or the errno it failed with (plugin_err says why) */
  bool is_skip;      /* the failure means nothing to measure here (a skip) */
  char plugin_err[512];
  struct plugin_driver plugin, compare; /* this build's plugin, and the compared one */
  bool has_compare;
  bool is_one_way; /* this block's comms go from rank 0 to rank 1 only */
  struct raw_driver raw;
  int ncomms, window;     /* this block's comms; the largest window */
  size_t pool_len;        /* each region: every comm's window of slots */
  uint8_t *spool, *rpool; /* the send and receive regions */
  uint64_t filled_size;
  int filled_window, filled_comms, filled_mode; /* what the send slots hold */
  struct stream *streams;                       /* 2 x ncomms */
  int64_t *dones, *lats;                        /* per stream: completion times; latencies */
  size_t done_cap, lat_cap;
  int64_t cmd_cpu0;
  struct proc_usage usage[ENGINE_COUNT]; /* what each engine's comms added */
};

/* 0, the errno of the failed read or write, or EPIPE when the other end
 * closed. */
static int io_all(int fd, void *buf, size_t len, bool is_out) {
  uint8_t *p = buf;
  while (len) {
    ssize_t n = is_out ? write(fd, p, len) : read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EPIPE;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int io_write(int fd, const void *buf, size_t len) { return io_all(fd, (void *)buf, len, true); }
int io_read(int fd, void *buf, size_t len) { return io_all(fd, buf, len, false); }

/* Address space for every comm's window of the largest size, as one
 * region per direction; pages are touched only as far as a run uses them
 * (the parent caps that). */
static int alloc_pools(struct worker *w, const struct bench_cmd *c, char *err, size_t cap) {
  if (w->spool) return 0;
  w->window = c->max_window;
  w->pool_len = c->max_mem;
  /* Over RDMA the first registration pins (so touches) the whole region:
   * touched here, it is billed to neither plugin's memory figure. */
  int flags =
    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (w->cfg->is_rdma_only ? MAP_POPULATE : 0);
  w->spool = mmap(NULL, w->pool_len, PROT_READ | PROT_WRITE, flags, -1, 0);
  w->rpool = mmap(NULL, w->pool_len, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (w->spool == MAP_FAILED || w->rpool == MAP_FAILED) {
    int rc = errno;
    w->spool = w->rpool = NULL;
    snprintf(err, cap, "cannot map %zu bytes of buffers: %s", w->pool_len, strerror(rc));
    return rc;
  }
  return 0;
}

static void usage_add(struct proc_usage *acc, const struct proc_usage *a,
                      const struct proc_usage *b) {
  acc->threads += b->threads - a->threads;
  acc->fds += b->fds - a->fds;
  acc->rss_kb += b->rss_kb - a->rss_kb;
}

/* Every engine's comms of the previous block closed, then ncomms of each
 * listening; what each listen adds counts towards its engine's usage.
 * Returns 0 or an errno (res->err says why; res->is_skip for a skip). */
static int do_listen(struct worker *w, const struct bench_cmd *c, struct bench_res *res,
                     struct bench_handles *h) {
  if (w->plugin_status) {
    snprintf(res->err, sizeof(res->err), "%s", w->plugin_err);
    res->is_skip = w->is_skip;
    return w->plugin_status;
  }
  int rc = alloc_pools(w, c, res->err, sizeof(res->err));
  if (rc) return rc;
  plugin_driver_close_comms(&w->plugin);
  if (w->has_compare) plugin_driver_close_comms(&w->compare);
  raw_close(&w->raw);
  free(w->streams);
  w->streams = calloc(2 * (size_t)c->ncomms, sizeof(*w->streams));
  h->plugin = calloc((size_t)c->ncomms * (w->has_compare ? 2 : 1), BENCH_HANDLE_LEN);
  if (!w->streams || !h->plugin) {
    snprintf(res->err, sizeof(res->err), "out of memory for %d comms", c->ncomms);
    return ENOMEM;
  }
  h->compare = w->has_compare ? h->plugin + (size_t)c->ncomms * BENCH_HANDLE_LEN : NULL;
  w->ncomms = c->ncomms;
  w->filled_comms = 0;
  memset(w->usage, 0, sizeof(w->usage));
  struct proc_usage a, b;
  proc_usage_now(&a);
  bool has_send = !c->is_one_way || w->cfg->rank == 0,
       has_recv = !c->is_one_way || w->cfg->rank == 1;
  w->is_one_way = c->is_one_way;
  if ((rc = raw_listen(&w->raw, w->cfg->rank, w->cfg->addr, c->ncomms, c->shape.nsocks, has_send,
                       has_recv, &h->o, res->err, sizeof(res->err))))
    return rc;
  proc_usage_now(&b);
  usage_add(&w->usage[ENGINE_RAW], &a, &b);
  if ((rc = plugin_driver_listen(&w->plugin, c->ncomms, has_send, has_recv, h->plugin, res->err,
                                 sizeof(res->err))))
    return rc;
  proc_usage_now(&a);
  usage_add(&w->usage[ENGINE_PLUGIN], &b, &a);
  h->o.ncomms = c->ncomms;
  h->o.has_compare = w->has_compare;
  if (w->has_compare && (rc = plugin_driver_listen(&w->compare, c->ncomms, has_send, has_recv,
                                                   h->compare, res->err, sizeof(res->err))))
    return rc;
  proc_usage_now(&b);
  usage_add(&w->usage[ENGINE_COMPARE], &a, &b);
  /* for the report header: the plugin, then the compared one */
  snprintf(res->err, sizeof(res->err), "%.380s%s%.380s", w->plugin.desc, w->has_compare ? "\n" : "",
           w->has_compare ? w->compare.desc : "");
  return 0;
}

/* Each engine connects in turn, so what its comms cost the process is
 * measured on its own. */
static int do_connect(struct worker *w, const struct bench_handles *peer, struct bench_res *res) {
  struct proc_usage a, b;
  if (peer->o.ncomms != w->ncomms || peer->o.has_compare != w->has_compare) {
    snprintf(res->err, sizeof(res->err), "the peer offers %d comms, this rank listened for %d",
             peer->o.ncomms, w->ncomms);
    return EPROTO;
  }
  proc_usage_now(&a);
  int rc = plugin_driver_connect(&w->plugin, peer->plugin, w->spool, w->rpool, w->pool_len,
                                 res->err, sizeof(res->err));
  if (rc) return rc;
  proc_usage_now(&b);
  usage_add(&w->usage[ENGINE_PLUGIN], &a, &b);
  if (w->has_compare && (rc = plugin_driver_connect(&w->compare, peer->compare, w->spool, w->rpool,
                                                    w->pool_len, res->err, sizeof(res->err))))
    return rc;
  proc_usage_now(&a);
  usage_add(&w->usage[ENGINE_COMPARE], &b, &a);
  if ((rc = raw_connect(&w->raw, &peer->o, res->err, sizeof(res->err)))) return rc;
  proc_usage_now(&b);
  usage_add(&w->usage[ENGINE_RAW], &a, &b);
  memcpy(res->usage, w->usage, sizeof(res->usage));
  return 0;
}

/* Which directions of which comms this rank drives in a run; returns how
 * many streams it filled in. */
static int make_streams(struct worker *w, const struct bench_cmd *c, struct stream *s) {
  int n = 0, rank = w->cfg->rank;
  int ncomms = c->mode == MODE_LAT ? 1 : c->ncomms;
  bool sends = c->mode != MODE_UNI || rank == 0, recvs = c->mode != MODE_UNI || rank == 1;
  size_t per_comm = (size_t)c->window * c->size; /* comm i's slots start at i x this */
  for (int i = 0; i < ncomms; i++) {
    if (sends)
      s[n++] = (struct stream){.is_send = true, .comm = i, .pool = w->spool + i * per_comm};
    if (recvs)
      s[n++] = (struct stream){.is_send = false, .comm = i, .pool = w->rpool + i * per_comm};
  }
  uint64_t total = c->warm + c->iters;
  for (int i = 0; i < n; i++) {
    s[i].my_rank = rank;
    s[i].peer_rank = 1 - rank;
    s[i].done_ns = w->dones + (size_t)i * total;
  }
  return n;
}

/* Untimed: patterns into send slots (once per size), poison into receive
 * slots (every run, so the final full check sees only fresh bytes). */
static void prepare(struct worker *w, const struct bench_cmd *c, struct stream *s, int n) {
  int refill =
    w->filled_size != c->size || w->filled_window != c->window || w->filled_comms != c->ncomms ||
    w->filled_mode != c->mode; /* a rank that only received (uni) did not fill its send slots */
  for (int i = 0; i < n; i++)
    for (int k = 0; k < c->window; k++) {
      uint8_t *slot = s[i].pool + (size_t)k * c->size;
      if (!s[i].is_send) memset(slot, 0xee, c->size);
      else if (refill) pattern_fill(slot, c->size, pattern_key(s[i].my_rank, s[i].comm, k));
    }
  w->filled_size = c->size;
  w->filled_window = c->window;
  w->filled_comms = c->ncomms;
  w->filled_mode = c->mode;
}

static int grow(int64_t **p, size_t *cap, size_t want) {
  if (want <= *cap) return 0;
  free(*p);
  *p = malloc(want * sizeof(int64_t));
  *cap = *p ? want : 0;
  return *p ? 0 : ENOMEM;
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
      return EPROTO;
    }
  }
  return 0;
}

/* Both ranks say ready, then the parent starts both: neither side's
 * preparation is counted in the other's time or CPU. */
static int ready_go(struct worker *w) {
  char go;
  int rc = io_write(w->cfg->fd, "R", 1);
  return rc ? rc : io_read(w->cfg->fd, &go, 1);
}

static int do_run(struct worker *w, const struct bench_cmd *c, struct bench_res *res) {
  uint64_t total = c->warm + c->iters;
  if (c->ncomms > w->ncomms || c->window > w->window || c->window > BENCH_MAX_WINDOW ||
      c->warm < (uint64_t)c->window || c->size % 8 ||
      c->size * (uint64_t)c->window * (uint64_t)c->ncomms > w->pool_len ||
      (c->engine == ENGINE_COMPARE && !w->has_compare) || (c->mode != MODE_UNI && w->is_one_way)) {
    snprintf(res->err, sizeof(res->err), "run outside what was prepared");
    return ready_go(w), EINVAL;
  }
  if (grow(&w->dones, &w->done_cap, total * 2 * (size_t)c->ncomms) ||
      grow(&w->lats, &w->lat_cap, total * (size_t)c->ncomms)) {
    snprintf(res->err, sizeof(res->err), "out of memory for %llu timestamps",
             (unsigned long long)total);
    return ready_go(w), ENOMEM;
  }
  struct stream *s = w->streams;
  int n = make_streams(w, c, s);
  prepare(w, c, s, n);
  int rc = ready_go(w);
  if (rc) return rc;
  struct run_ctx r = {.cmd = c, .streams = s, .nstreams = n, .lats = w->lats};
  int64_t cpu = proc_cpu_ns();
  w->cmd_cpu0 = cpu;
  rc = c->engine == ENGINE_PLUGIN    ? plugin_driver_run(&w->plugin, &r)
       : c->engine == ENGINE_COMPARE ? plugin_driver_run(&w->compare, &r)
                                     : raw_run(&w->raw, &r);
  res->cpu_ns = proc_cpu_ns() - cpu;
  res->cpu_drv_ns = r.cpu_drv_ns;
  struct proc_usage u;
  proc_usage_now(&u);
  res->threads = u.threads;
  if (rc) {
    snprintf(res->err, sizeof(res->err), "%s", r.err);
    return rc;
  }
  if ((rc = check_streams(s, n, c, res->err, sizeof(res->err)))) return rc;
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
  if (w->has_compare) plugin_driver_close(&w->compare);
  raw_close(&w->raw);
  if (w->spool) munmap(w->spool, w->pool_len);
  if (w->rpool) munmap(w->rpool, w->pool_len);
  free(w->streams);
  free(w->dones);
  free(w->lats);
}

/* The handles in both directions: the offer, then its arrays. */
int handles_write(int fd, const struct bench_handles *h) {
  size_t len = (size_t)h->o.ncomms * BENCH_HANDLE_LEN;
  int rc = io_write(fd, &h->o, sizeof(h->o));
  if (!rc && len) rc = io_write(fd, h->plugin, len);
  if (!rc && len && h->o.has_compare) rc = io_write(fd, h->compare, len);
  return rc;
}

int handles_read(int fd, struct bench_handles *h) {
  memset(h, 0, sizeof(*h));
  int rc = io_read(fd, &h->o, sizeof(h->o));
  if (rc) return rc;
  if (h->o.ncomms < 0 || h->o.ncomms > BENCH_MAX_COMMS) return EPROTO;
  size_t len = (size_t)h->o.ncomms * BENCH_HANDLE_LEN;
  h->plugin = calloc(len ? 2 * len : 1, 1);
  if (!h->plugin) return ENOMEM;
  h->compare = h->o.has_compare ? h->plugin + len : NULL;
  if (len) rc = io_read(fd, h->plugin, len);
  if (!rc && len && h->o.has_compare) rc = io_read(fd, h->compare, len);
  return rc;
}

/* Serves commands until quit or the parent goes away. */
static int serve(struct worker *w) {
  int fd = w->cfg->fd;
  struct bench_cmd c;
  while (io_read(fd, &c, sizeof(c)) == 0) {
    struct bench_res res = {0};
    struct bench_handles h = {0};
    if (c.op == OP_QUIT) return 0;
    if (c.op == OP_LISTEN) {
      res.status = do_listen(w, &c, &res, &h);
      if (res.status) h.o.ncomms = 0, h.o.has_compare = false;
      int bad = io_write(fd, &res, sizeof(res)) || handles_write(fd, &h);
      free(h.plugin);
      if (bad) return 1;
      continue;
    }
    if (c.op == OP_CONNECT) {
      if (handles_read(fd, &h)) return 1;
      res.status = do_connect(w, &h, &res);
      free(h.plugin);
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
  if (cfg->netns) w.plugin_status = netns_enter(cfg->netns, w.plugin_err, sizeof(w.plugin_err));
  if (!w.plugin_status) {
    if (cfg->ifname) setenv("NCCL_SOCKET_IFNAME", cfg->ifname, 1);
    w.plugin_status =
      plugin_driver_open(&w.plugin, cfg, cfg->plugin, cfg->abi, w.plugin_err, sizeof(w.plugin_err));
    /* no (RDMA) device when one was insisted on: nothing to measure here */
    w.is_skip = w.plugin_status == ENODEV && cfg->is_rdma_only;
    if (!w.plugin_status && cfg->compare) {
      char err[400];
      int rc = plugin_driver_open(&w.compare, cfg, cfg->compare, 0, err, sizeof(err));
      if (rc) { /* even one without the device: the comparison was asked for */
        snprintf(w.plugin_err, sizeof(w.plugin_err), "the compared plugin: %s", err);
        w.plugin_status = rc;
      }
      w.has_compare = true; /* loaded as far as it went: closed at the end */
    }
  }
  int rc = serve(&w);
  worker_free(&w);
  return rc;
}
