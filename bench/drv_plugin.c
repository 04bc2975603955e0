/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin engine: loaded with netload exactly as NCCL loads it, and
 * driven the way NCCL's proxy progress thread drives a connection: one
 * thread posts a request into every free slot of the window (up to 8),
 * tests only the oldest request of each connection, and calls
 * sched_yield() when a pass over all connections made no progress. */
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/drv.h"
#include "common/progress.h"

#define RUN_TIMEOUT_NS (300LL * 1000000000LL)

static bool is_plugin_verbose;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                   const char *fmt, ...) {
  (void)file, (void)line, (void)flags;
  if (level > NCCL_LOG_WARN && !(is_plugin_verbose && level == NCCL_LOG_INFO)) return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "plugin %s: %s\n", level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
}

/* A TCP device is named after its interface; an RDMA device after its HCA
 * port. The ABI has no transport field, so the name is what we have. */
static bool is_rdma_dev(const struct netload_props *pr) { return if_nametoindex(pr->name) == 0; }

/* --fuse: the listed devices become one virtual NIC, as NCCL fuses ports
 * (makeVDevice); the driver measures over it. 0, or an errno (err). */
static int fuse(struct plugin_driver *p, const char *list, int *ndev, char *err, size_t cap) {
  int devs[8], n = 0, vd = -1;
  for (const char *c = list; *c && n < 8; c += strcspn(c, ","), c += *c == ',') devs[n++] = atoi(c);
  if (n < 1 || netload_make_vdevice(&p->net, n, devs, &vd) || vd < 0) {
    snprintf(err, cap, "makeVDevice of devices %s failed (the plugin's WARN above says why)", list);
    return EINVAL;
  }
  p->dev = vd;
  return netload_devices(&p->net, ndev) ? EIO : 0;
}

int plugin_driver_open(struct plugin_driver *p, const struct worker_cfg *cfg, const char *path,
                       int abi, char *err, size_t cap) {
  memset(p, 0, sizeof(*p));
  p->rank = cfg->rank;
  is_plugin_verbose = cfg->is_verbose;
  if (netload_open(&p->net, path, abi, err, cap)) return EIO;
  p->is_loaded = true;
  netload_init(&p->net, logger); /* never fails by contract; devices says what is usable */
  p->is_inited = true;
  int ndev = 0;
  if (netload_devices(&p->net, &ndev) || ndev <= 0) {
    snprintf(err, cap, "the plugin offers no device (its WARN above says why)");
    return ENODEV;
  }
  p->dev = cfg->dev >= 0 ? cfg->dev : 0;
  if (cfg->fuse && fuse(p, cfg->fuse, &ndev, err, cap)) return EINVAL;
  if (p->dev >= ndev) {
    snprintf(err, cap, "device %d asked for, the plugin offers %d", p->dev, ndev);
    return EINVAL;
  }
  struct netload_props pr;
  if (netload_props(&p->net, p->dev, &pr)) {
    snprintf(err, cap, "getProperties(%d) failed", p->dev);
    return EIO;
  }
  if (cfg->is_rdma_only && !is_rdma_dev(&pr)) {
    snprintf(err, cap, "the plugin offers no RDMA device (device %d is %s, a TCP interface)",
             p->dev, pr.name);
    return ENODEV;
  }
  snprintf(p->desc, sizeof(p->desc), "%s, ABI v%d \"%s\", device %d %s", p->net.path,
           p->net.version, netload_name(&p->net), p->dev, pr.name);
  return 0;
}

int plugin_driver_listen(struct plugin_driver *p, int ncomms, bool has_send, bool has_recv,
                         uint8_t *handles, char *err, size_t cap) {
  plugin_driver_close_comms(p);
  p->has_send = has_send;
  p->has_recv = has_recv;
  void **all = calloc(5 * (size_t)ncomms, sizeof(void *));
  if (!all) {
    snprintf(err, cap, "out of memory for %d comms", ncomms);
    return ENOMEM;
  }
  p->listen_comms = all, p->send_comms = all + ncomms, p->recv_comms = all + 2 * ncomms;
  p->send_mhandles = all + 3 * ncomms, p->recv_mhandles = all + 4 * ncomms;
  p->ncomms = ncomms;
  for (int i = 0; i < ncomms && has_recv; i++) {
    uint8_t *h = handles + (size_t)i * BENCH_HANDLE_LEN;
    memset(h, 0, BENCH_HANDLE_LEN);
    if (netload_listen(&p->net, p->dev, h, &p->listen_comms[i]) || !p->listen_comms[i]) {
      snprintf(err, cap, "listen %d of %d on device %d failed", i + 1, ncomms, p->dev);
      return EIO;
    }
  }
  return 0;
}

/* NCCL connects and accepts each comm in turn, retrying the ones that are
 * not ready on its next pass. */
static int connect_pass(struct plugin_driver *p, uint8_t *handles, int *left, char *err,
                        size_t cap) {
  *left = 0;
  for (int i = 0; i < p->ncomms; i++) {
    if (p->has_send && !p->send_comms[i] &&
        netload_connect(&p->net, p->dev, handles + (size_t)i * BENCH_HANDLE_LEN,
                        &p->send_comms[i])) {
      snprintf(err, cap, "connect of comm %d failed", i);
      return EIO;
    }
    if (p->has_recv && !p->recv_comms[i] &&
        netload_accept(&p->net, p->listen_comms[i], &p->recv_comms[i])) {
      snprintf(err, cap, "accept of comm %d failed", i);
      return EIO;
    }
    if (p->recv_comms[i] && p->listen_comms[i]) { /* NCCL closes the listener at once */
      netload_close_listen(&p->net, p->listen_comms[i]);
      p->listen_comms[i] = NULL;
    }
    *left += (p->has_send && !p->send_comms[i]) + (p->has_recv && !p->recv_comms[i]);
  }
  return 0;
}

static int connect_all(struct plugin_driver *p, const uint8_t *peer, char *err, size_t cap) {
  size_t len = (size_t)p->ncomms * BENCH_HANDLE_LEN;
  uint8_t *handles = malloc(len); /* NCCL's private, retried copy */
  if (!handles) {
    snprintf(err, cap, "out of memory");
    return ENOMEM;
  }
  memcpy(handles, peer, len);
  int64_t deadline = clock_mono_ns() + (60LL + p->ncomms / 50) * 1000000000LL;
  int rc = 0, left = 0;
  for (;;) {
    if ((rc = connect_pass(p, handles, &left, err, cap)) || !left) break;
    if (clock_mono_ns() > deadline) {
      snprintf(err, cap, "connect/accept of %d comms did not complete in %lld s (%d left)",
               p->ncomms, (long long)(60 + p->ncomms / 50), left);
      rc = ETIMEDOUT;
      break;
    }
    sched_yield();
  }
  free(handles);
  return rc;
}

int plugin_driver_connect(struct plugin_driver *p, const uint8_t *peer_handles, uint8_t *spool,
                          uint8_t *rpool, size_t pool_len, char *err, size_t cap) {
  int rc = connect_all(p, peer_handles, err, cap);
  if (rc) return rc;
  for (int i = 0; i < p->ncomms; i++) {
    if ((p->send_comms[i] && netload_reg_mr(&p->net, p->send_comms[i], spool, pool_len,
                                            NCCL_PTR_HOST, &p->send_mhandles[i])) ||
        (p->recv_comms[i] && netload_reg_mr(&p->net, p->recv_comms[i], rpool, pool_len,
                                            NCCL_PTR_HOST, &p->recv_mhandles[i]))) {
      snprintf(err, cap, "regMr of comm %d failed", i);
      return EIO;
    }
  }
  return 0;
}

/* One connection's window as the driving thread sees it. */
struct plugin_queue {
  struct stream *s;
  void *comm, *mh;
  uint64_t posted, done;
  void *req[BENCH_MAX_WINDOW];
};

/* Posts the next message of q: PROGRESS_PENDING when the plugin says "not
 * now" (NCCL retries on its next pass). */
static enum progress post(struct plugin_driver *p, struct plugin_queue *q,
                          const struct bench_cmd *c, char *err, size_t cap) {
  uint64_t m = q->posted;
  int slot = (int)(m % (uint64_t)c->window);
  uint8_t *buf = q->s->pool + (size_t)slot * c->size;
  void *req = NULL;
  ncclResult_t r;
  if (q->s->is_send) {
    pattern_stamp(buf, c->size, c->run_id, m, 0, c->size);
    r = netload_isend(&p->net, q->comm, buf, c->size, p->rank, q->mh, &req);
  } else {
    size_t sz = c->size;
    int tag = q->s->peer_rank;
    r = netload_irecv(&p->net, q->comm, 1, (void **)&buf, &sz, &tag, &q->mh, &req);
  }
  if (r) {
    snprintf(err, cap, "%s of message %llu on comm %d returned %d",
             q->s->is_send ? "isend" : "irecv", (unsigned long long)m, q->s->comm, r);
    return PROGRESS_FAILED;
  }
  if (!req) return PROGRESS_PENDING;
  q->req[slot] = req;
  q->posted++;
  return PROGRESS_DONE;
}

/* Tests q's oldest request: PROGRESS_DONE when it completed (and was
 * checked), PROGRESS_PENDING when not yet. */
static enum progress test_oldest(struct plugin_driver *p, struct plugin_queue *q,
                                 const struct bench_cmd *c, char *err, size_t cap) {
  uint64_t m = q->done;
  int done = 0, sizes[NCCL_NET_MAX_REQUESTS] = {0};
  ncclResult_t r = netload_test(&p->net, q->req[m % (uint64_t)c->window], &done, sizes);
  if (r) {
    snprintf(err, cap, "test of message %llu on comm %d (%s) returned %d", (unsigned long long)m,
             q->s->comm, q->s->is_send ? "send" : "recv", r);
    return PROGRESS_FAILED;
  }
  if (!done) return PROGRESS_PENDING;
  q->s->done_ns[m] = clock_mono_ns();
  if (!q->s->is_send) {
    if ((uint64_t)sizes[0] != c->size && !q->s->has_failed) {
      q->s->has_failed = true;
      snprintf(q->s->err, sizeof(q->s->err),
               "DATA MISMATCH: comm %d message %llu: test() reports %d bytes, %llu were sent",
               q->s->comm, (unsigned long long)m, sizes[0], (unsigned long long)c->size);
    }
    stream_check(q->s, c, m, false);
  }
  q->done++;
  return PROGRESS_DONE;
}

/* One pass: fill every window, test every oldest request until one is
 * not done. Returns 0 (*moved: whether anything moved) or EIO. */
static int pass(struct plugin_driver *p, struct plugin_queue *qs, int n, const struct bench_cmd *c,
                uint64_t total, bool *moved, char *err, size_t cap) {
  *moved = false;
  for (int i = 0; i < n; i++) {
    struct plugin_queue *q = &qs[i];
    while (q->posted < total && q->posted - q->done < (uint64_t)c->window) {
      enum progress r = post(p, q, c, err, cap);
      if (r == PROGRESS_FAILED) return EIO;
      if (r == PROGRESS_PENDING) break;
      *moved = true;
    }
    while (q->done < q->posted) {
      enum progress r = test_oldest(p, q, c, err, cap);
      if (r == PROGRESS_FAILED) return EIO;
      if (r == PROGRESS_PENDING) break;
      *moved = true;
    }
  }
  return 0;
}

static void plugin_queue_init(struct plugin_driver *p, struct run_ctx *r, struct plugin_queue *qs) {
  for (int i = 0; i < r->nstreams; i++) {
    struct stream *s = &r->streams[i];
    memset(&qs[i], 0, sizeof(qs[i]));
    qs[i].s = s;
    qs[i].comm = s->is_send ? p->send_comms[s->comm] : p->recv_comms[s->comm];
    qs[i].mh = s->is_send ? p->send_mhandles[s->comm] : p->recv_mhandles[s->comm];
  }
}

/* NCCL's proxy yields when a pass made no progress; --driver-idle-us
 * sleeps instead, to estimate what a plugin whose test() blocks until
 * something completes would save. */
static void no_progress(const struct bench_cmd *c) {
  if (c->idle_us > 0) usleep((useconds_t)c->idle_us);
  else sched_yield();
}

static int run_bw(struct plugin_driver *p, struct run_ctx *r) {
  const struct bench_cmd *c = r->cmd;
  uint64_t total = c->warm + c->iters;
  struct plugin_queue *qs = calloc((size_t)r->nstreams, sizeof(*qs));
  if (!qs) {
    snprintf(r->err, sizeof(r->err), "out of memory");
    return ENOMEM;
  }
  plugin_queue_init(p, r, qs);
  int64_t deadline = clock_mono_ns() + RUN_TIMEOUT_NS;
  unsigned idle = 0;
  int rc = 0;
  for (;;) {
    bool moved;
    if ((rc = pass(p, qs, r->nstreams, c, total, &moved, r->err, sizeof(r->err)))) break;
    int left = 0;
    for (int i = 0; i < r->nstreams && !left; i++) left = qs[i].done < total;
    if (!left) break;
    if (moved) continue;
    no_progress(c);
    if (++idle % 4096 == 0 && clock_mono_ns() > deadline) {
      snprintf(r->err, sizeof(r->err), "no completion within %lld s",
               RUN_TIMEOUT_NS / 1000000000LL);
      rc = ETIMEDOUT;
      break;
    }
  }
  free(qs);
  return rc;
}

/* Polls one request of a connection until it is done: 0, EIO when test()
 * failed, ETIMEDOUT. */
static int wait_one(struct plugin_driver *p, struct plugin_queue *q, const struct bench_cmd *c,
                    char *err, size_t cap) {
  int64_t deadline = clock_mono_ns() + RUN_TIMEOUT_NS;
  for (unsigned n = 1;; n++) {
    enum progress r = test_oldest(p, q, c, err, cap);
    if (r != PROGRESS_PENDING) return r == PROGRESS_FAILED ? EIO : 0;
    sched_yield();
    if (n % 4096 == 0 && clock_mono_ns() > deadline) {
      snprintf(err, cap, "ping-pong message %llu never completed", (unsigned long long)q->done);
      return ETIMEDOUT;
    }
  }
}

/* Posts until the plugin takes the request: 0 or EIO. */
static int post_retry(struct plugin_driver *p, struct plugin_queue *q, const struct bench_cmd *c,
                      char *err, size_t cap) {
  enum progress r;
  while ((r = post(p, q, c, err, cap)) == PROGRESS_PENDING) sched_yield();
  return r == PROGRESS_FAILED ? EIO : 0;
}

/* Ping-pong over a send comm and a receive comm (NCCL comms are one-way).
 * Rank 0 times each round trip from its isend to its irecv's completion;
 * its receive is posted before the clock starts, as NCCL posts ahead. */
static int run_lat(struct plugin_driver *p, struct run_ctx *r) {
  const struct bench_cmd *c = r->cmd;
  uint64_t total = c->warm + c->iters;
  struct plugin_queue qs[2];
  plugin_queue_init(p, r, qs);
  struct plugin_queue *tx = qs[0].s->is_send ? &qs[0] : &qs[1],
                      *rx = qs[0].s->is_send ? &qs[1] : &qs[0];
  char *err = r->err;
  size_t cap = sizeof(r->err);
  int rc = 0;
  if (p->rank == 1 && (rc = post_retry(p, rx, c, err, cap))) return rc;
  for (uint64_t i = 0; i < total; i++) {
    if (p->rank == 0) {
      if ((rc = post_retry(p, rx, c, err, cap))) return rc;
      int64_t t = clock_mono_ns();
      if ((rc = post_retry(p, tx, c, err, cap)) || (rc = wait_one(p, tx, c, err, cap)) ||
          (rc = wait_one(p, rx, c, err, cap)))
        return rc;
      if (i >= c->warm) r->lats[r->nlat++] = rx->s->done_ns[i] - t;
    } else {
      if ((rc = wait_one(p, rx, c, err, cap)) || (rc = post_retry(p, tx, c, err, cap))) return rc;
      if (i + 1 < total && (rc = post_retry(p, rx, c, err, cap))) return rc;
      if ((rc = wait_one(p, tx, c, err, cap))) return rc;
    }
  }
  return 0;
}

int plugin_driver_run(struct plugin_driver *p, struct run_ctx *r) {
  int64_t t = thread_cpu_ns();
  int rc = r->cmd->mode == MODE_LAT ? run_lat(p, r) : run_bw(p, r);
  r->cpu_drv_ns = thread_cpu_ns() - t;
  return rc;
}

void plugin_driver_close_comms(struct plugin_driver *p) {
  for (int i = 0; i < p->ncomms; i++) {
    if (p->send_mhandles[i]) netload_dereg_mr(&p->net, p->send_comms[i], p->send_mhandles[i]);
    if (p->recv_mhandles[i]) netload_dereg_mr(&p->net, p->recv_comms[i], p->recv_mhandles[i]);
    if (p->send_comms[i]) netload_close_send(&p->net, p->send_comms[i]);
    if (p->recv_comms[i]) netload_close_recv(&p->net, p->recv_comms[i]);
    if (p->listen_comms[i]) netload_close_listen(&p->net, p->listen_comms[i]);
  }
  free(p->listen_comms); /* one allocation holds all five arrays */
  p->listen_comms = p->send_comms = p->recv_comms = p->send_mhandles = p->recv_mhandles = NULL;
  p->ncomms = 0;
}

void plugin_driver_close(struct plugin_driver *p) {
  plugin_driver_close_comms(p);
  if (p->is_inited) netload_finalize(&p->net);
  if (p->is_loaded) netload_close(&p->net);
  memset(p, 0, sizeof(*p));
}
