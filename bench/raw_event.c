/* SPDX-License-Identifier: Apache-2.0 */
/* The raw baseline's event shape: one socket per comm and every stream of
 * this rank on the calling thread, with non-blocking send/recv and an
 * edge-triggered epoll to wait. It is how a plain-socket program with
 * hundreds or thousands of connections is written (a thread per socket
 * does not scale there), so it is the baseline of runs with many comms.
 * Streams that can move take turns one message at a time (a FIFO), so no
 * comm runs ahead of the others. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/drv.h"
#include "common/progress.h"

#define EVENT_TIMEOUT_NS (300LL * 1000000000LL)

struct ev_stream {
  struct stream *s;
  int fd;
  uint64_t m; /* the message being moved */
  size_t off; /* its bytes moved */
  bool is_queued;
};

struct ev_run {
  const struct bench_cmd *c;
  struct ev_stream *es;
  int *fifo; /* stream indices that can move, n of them from head */
  int n, head, cap;
  uint64_t total;
  int left; /* streams not finished */
};

static void enqueue(struct ev_run *v, int i) {
  if (v->es[i].is_queued || v->es[i].m >= v->total) return;
  v->es[i].is_queued = true;
  v->fifo[(v->head + v->n++) % v->cap] = i;
}

/* Moves the stream's current message as far as the socket lets it:
 * PROGRESS_DONE = it completed (the stream goes to the back of the queue),
 * PROGRESS_PENDING = EAGAIN (it waits for its edge), PROGRESS_FAILED = a
 * socket error (*fail is its errno, err says why). */
static enum progress step(struct ev_run *v, struct ev_stream *e, int *fail, char *err, size_t cap) {
  const struct bench_cmd *c = v->c;
  uint8_t *buf = e->s->pool + (size_t)(e->m % (uint64_t)c->window) * c->size;
  if (e->s->is_send && e->off == 0) pattern_stamp(buf, c->size, c->run_id, e->m, 0, c->size);
  while (e->off < c->size) {
    ssize_t n = e->s->is_send
                  ? send(e->fd, buf + e->off, c->size - e->off, MSG_DONTWAIT | MSG_NOSIGNAL)
                  : recv(e->fd, buf + e->off, c->size - e->off, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return PROGRESS_PENDING;
    if (n <= 0) {
      *fail = n < 0 ? errno : EPIPE;
      snprintf(err, cap, "baseline comm %d %s: %s", e->s->comm, e->s->is_send ? "send" : "recv",
               n < 0 ? strerror(*fail) : "the peer closed the connection");
      return PROGRESS_FAILED;
    }
    e->off += (size_t)n;
  }
  e->s->done_ns[e->m] = clock_mono_ns();
  if (!e->s->is_send) stream_check(e->s, c, e->m, false);
  e->off = 0;
  if (++e->m == v->total) v->left--;
  return PROGRESS_DONE;
}

static int setup(struct raw_driver *w, struct run_ctx *r, struct ev_run *v, int ep) {
  v->c = r->cmd;
  v->total = r->cmd->warm + r->cmd->iters;
  v->cap = r->nstreams;
  v->left = r->nstreams;
  v->es = calloc((size_t)r->nstreams, sizeof(*v->es));
  v->fifo = calloc((size_t)r->nstreams, sizeof(int));
  if (!v->es || !v->fifo) {
    snprintf(r->err, sizeof(r->err), "out of memory");
    return ENOMEM;
  }
  for (int i = 0; i < r->nstreams; i++) {
    struct ev_stream *e = &v->es[i];
    e->s = &r->streams[i];
    e->fd = (e->s->is_send ? w->send_fds : w->recv_fds)[(size_t)e->s->comm * (size_t)w->nsocks];
    struct epoll_event ev = {.events = EPOLLET | (e->s->is_send ? EPOLLOUT : EPOLLIN),
                             .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, e->fd, &ev)) {
      int rc = errno;
      snprintf(r->err, sizeof(r->err), "baseline epoll_ctl: %s", strerror(rc));
      return rc;
    }
    enqueue(v, i);
  }
  return 0;
}

static int drive(struct ev_run *v, int ep, char *err, size_t cap) {
  struct epoll_event evs[256];
  int64_t deadline = clock_mono_ns() + EVENT_TIMEOUT_NS;
  while (v->left) {
    while (v->n) {
      int i = v->fifo[v->head];
      v->head = (v->head + 1) % v->cap;
      v->n--;
      v->es[i].is_queued = false;
      int fail = 0;
      enum progress r = step(v, &v->es[i], &fail, err, cap);
      if (r == PROGRESS_FAILED) return fail;
      if (r == PROGRESS_DONE) enqueue(v, i);
    }
    if (!v->left) break;
    int n = epoll_wait(ep, evs, 256, 1000);
    if (n < 0 && errno != EINTR) {
      int rc = errno;
      snprintf(err, cap, "baseline epoll_wait: %s", strerror(rc));
      return rc;
    }
    for (int k = 0; k < n; k++) enqueue(v, (int)evs[k].data.u32);
    if (n <= 0 && clock_mono_ns() > deadline) {
      snprintf(err, cap, "baseline: no completion within %lld s", EVENT_TIMEOUT_NS / 1000000000LL);
      return ETIMEDOUT;
    }
  }
  return 0;
}

int raw_run_event(struct raw_driver *w, struct run_ctx *r) {
  struct ev_run v = {0};
  int ep = epoll_create1(EPOLL_CLOEXEC);
  int rc = ep < 0 ? errno : 0;
  int64_t t = thread_cpu_ns();
  if (!rc) rc = setup(w, r, &v, ep);
  if (ep < 0) snprintf(r->err, sizeof(r->err), "baseline epoll_create1: %s", strerror(rc));
  if (!rc) rc = drive(&v, ep, r->err, sizeof(r->err));
  r->cpu_drv_ns = thread_cpu_ns() - t;
  if (ep >= 0) close(ep); /* the sockets leave the set with it */
  free(v.es);
  free(v.fifo);
  return rc;
}
