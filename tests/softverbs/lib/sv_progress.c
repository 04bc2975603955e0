/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: one progress thread per context.
 *
 * It owns the context's listeners and sockets (epoll, level-triggered),
 * accepts requester connections and binds each to the QP its hello names,
 * runs the requester and responder logic as bytes arrive, and fires the
 * ACK and RNR timers. Locking: it holds ctx->qp_lock for a whole batch of
 * events (so a QP cannot be destroyed under it) and each QP's lock while it
 * serves that QP. Connections killed by other threads are freed here, after
 * the batch that may still name them. */
#include "sv.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

void sv_ctx_wake(struct sv_ctx *ctx) {
  uint64_t one = 1;
  if (write(ctx->wakefd, &one, sizeof one) < 0) sv_log("wake: %s", strerror(errno));
}

int sv_conn_watch(struct sv_conn *c) {
  c->want_out = c->state == SV_CONNECTING || c->oq;
  struct epoll_event ev = {.events = EPOLLIN | (c->want_out ? EPOLLOUT : 0), .data.ptr = c};
  return epoll_ctl(c->ctx->epfd, EPOLL_CTL_ADD, c->fd, &ev) ? errno : 0;
}

static int listen_socket(bool any, uint16_t *port) {
  int fd = any ? socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0) : -1;
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  socklen_t len = sizeof(struct sockaddr_in6);
  if (fd >= 0) {
    int off = 0; /* dual stack: IPv4 GIDs arrive as mapped addresses */
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
    ((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
  } else {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(any ? INADDR_ANY : INADDR_LOOPBACK);
    len = sizeof *in;
  }
  if (fd < 0) return -1;
  if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 128) ||
      getsockname(fd, (struct sockaddr *)&ss, &len)) {
    close(fd);
    return -1;
  }
  *port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                        : ((struct sockaddr_in6 *)&ss)->sin6_port);
  return fd;
}

/* A listener for up to 256 QPs; on every address when a port of the
 * device is in net mode, else on 127.0.0.1 only. ctx->qp_lock held. */
int sv_listener_new(struct sv_ctx *ctx, struct sv_listener **out) {
  bool any = false;
  for (int i = 0; i <= SV_MAX_PORTS; i++) any |= ctx->net[i];
  struct sv_listener *l = calloc(1, sizeof *l);
  if (!l) return ENOMEM;
  l->kind = SV_EV_LISTENER;
  l->fd = listen_socket(any, &l->port);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = l};
  if (l->fd < 0 || epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, l->fd, &ev)) {
    int err = errno ? errno : EIO;
    if (l->fd >= 0) close(l->fd);
    free(l);
    return err;
  }
  l->next = ctx->listeners;
  ctx->listeners = l;
  *out = l;
  return 0;
}

static void accept_all(struct sv_ctx *ctx, struct sv_listener *l) {
  for (;;) {
    int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sv_conn *c = sv_conn_new(ctx, fd, false);
    if (!c) {
      close(fd);
      continue;
    }
    c->state = SV_HELLO;
    if (sv_conn_watch(c)) {
      sv_conn_free(c);
      continue;
    }
    c->next = ctx->pending;
    ctx->pending = c;
  }
}

static void pending_unlink(struct sv_ctx *ctx, struct sv_conn *c) {
  for (struct sv_conn **pp = &ctx->pending; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      return;
    }
}

static struct sv_qp *qp_by_num(struct sv_ctx *ctx, uint32_t qpn) {
  for (struct sv_listener *l = ctx->listeners; l; l = l->next)
    if (l->port == qpn >> 8) return l->slot[qpn & 0xff];
  return NULL;
}

/* A new connection: its hello names the QP it is for. */
static void serve_pending(struct sv_ctx *ctx, struct sv_conn *c) {
  int r = sv_conn_input(c);
  if (r == 0) return;
  pending_unlink(ctx, c);
  struct sv_qp *qp = r > 0 ? qp_by_num(ctx, c->hello.dst_qpn) : NULL;
  if (!qp) {
    if (r > 0) sv_log("connection for unknown qp 0x%x dropped", c->hello.dst_qpn);
    sv_conn_kill(c);
    return;
  }
  pthread_mutex_lock(&qp->lock);
  if (qp->in) sv_conn_kill(qp->in);
  qp->in = c;
  c->qp = qp;
  c->state = SV_UP;
  if (sv_conn_input(c) < 0) sv_conn_kill(c); /* bytes that came with the hello */
  sv_qp_drive(qp);
  pthread_mutex_unlock(&qp->lock);
}

/* qp->lock held. */
static void serve(struct sv_conn *c, uint32_t events) {
  if (c->state == SV_CONNECTING) {
    if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err) {
      sv_log("qp 0x%x: connect failed (%s): its traffic will time out", c->qp->ibqp.qp_num,
             strerror(err));
      sv_conn_kill(c);
      return;
    }
    c->state = SV_UP;
  }
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && sv_conn_input(c) < 0) sv_conn_kill(c);
  sv_qp_drive(c->qp);
}

static void dispatch(struct sv_ctx *ctx, struct epoll_event *ev) {
  int kind = *(int *)ev->data.ptr;
  if (kind == SV_EV_WAKE) {
    uint64_t v;
    while (read(ctx->wakefd, &v, sizeof v) > 0) continue;
  } else if (kind == SV_EV_LISTENER) {
    accept_all(ctx, ev->data.ptr);
  } else {
    struct sv_conn *c = ev->data.ptr;
    if (atomic_load(&c->dead)) return;
    if (!c->qp) {
      serve_pending(ctx, c);
      return;
    }
    struct sv_qp *qp = c->qp;
    pthread_mutex_lock(&qp->lock);
    if (!atomic_load(&c->dead)) serve(c, ev->events);
    pthread_mutex_unlock(&qp->lock);
  }
}

/* Timers and pending sends of every QP; the ms until the next deadline. */
static int tick_all(struct sv_ctx *ctx) {
  uint64_t now = sv_now_ns(), next = UINT64_MAX;
  for (struct sv_qp *qp = ctx->qps; qp; qp = qp->next) {
    pthread_mutex_lock(&qp->lock);
    bool cq_failed = sv_cq_in_error(qp->ibqp.send_cq) || sv_cq_in_error(qp->ibqp.recv_cq);
    if (cq_failed && qp->state != IBV_QPS_RESET && qp->state != IBV_QPS_ERR) sv_qp_error(qp, -1);
    sv_req_tick(qp, now);
    sv_qp_drive(qp);
    uint64_t t = qp->rnr_until ? qp->rnr_until : qp->ack_deadline;
    if (qp->state == IBV_QPS_RTS && t && t < next) next = t;
    pthread_mutex_unlock(&qp->lock);
  }
  if (next == UINT64_MAX) return -1;
  return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

static void bury(struct sv_ctx *ctx) {
  pthread_mutex_lock(&ctx->grave_lock);
  struct sv_conn *c = ctx->grave;
  ctx->grave = NULL;
  pthread_mutex_unlock(&ctx->grave_lock);
  while (c) {
    struct sv_conn *next = c->next;
    sv_conn_free(c);
    c = next;
  }
}

static void *progress_main(void *arg) {
  struct sv_ctx *ctx = arg;
  struct epoll_event evs[64];
  int timeout = -1;
  while (!atomic_load(&ctx->stop)) {
    int n = epoll_wait(ctx->epfd, evs, 64, timeout);
    pthread_mutex_lock(&ctx->qp_lock);
    for (int i = 0; i < n; i++) dispatch(ctx, &evs[i]);
    timeout = tick_all(ctx);
    pthread_mutex_unlock(&ctx->qp_lock);
    sv_counters_flush();
    bury(ctx);
  }
  return NULL;
}

int sv_progress_start(struct sv_ctx *ctx) {
  ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
  ctx->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &ctx->wake_kind};
  int err =
    ctx->epfd < 0 || ctx->wakefd < 0 || epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->wakefd, &ev)
      ? errno
      : 0;
  if (!err) {
    /* Signals belong to the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&ctx->thread, NULL, progress_main, ctx);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  if (err) {
    if (ctx->epfd >= 0) close(ctx->epfd);
    if (ctx->wakefd >= 0) close(ctx->wakefd);
    return err;
  }
  return 0;
}

void sv_progress_stop(struct sv_ctx *ctx) {
  atomic_store(&ctx->stop, true);
  sv_ctx_wake(ctx);
  pthread_join(ctx->thread, NULL);
  /* QPs the application did not destroy keep their memory; their sockets close. */
  for (struct sv_qp *qp = ctx->qps; qp; qp = qp->next) {
    if (qp->out) sv_conn_kill(qp->out);
    if (qp->in) sv_conn_kill(qp->in);
  }
  while (ctx->pending) {
    struct sv_conn *c = ctx->pending;
    ctx->pending = c->next;
    sv_conn_free(c);
  }
  bury(ctx);
  while (ctx->listeners) {
    struct sv_listener *l = ctx->listeners;
    ctx->listeners = l->next;
    close(l->fd);
    free(l);
  }
  close(ctx->epfd);
  close(ctx->wakefd);
}
