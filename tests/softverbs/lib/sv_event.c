/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: asynchronous events and completion channels.
 *
 * Async events wait in a queue per context; the context's async_fd is one
 * end of a socket pair that carries one byte per queued event, so the
 * application can poll() it as with libibverbs. As the kernel and
 * libibverbs do, an event counts against its QP or CQ once the application
 * has read it (ibv_get_async_event); destroying the object drops the events
 * not read yet and waits until every event read was acknowledged
 * (ibv_ack_async_event). A real libibverbs waits forever; softverbs names
 * the object and aborts after SOFTVERBS_ACK_WAIT_MS (default 30000).
 *
 * A completion channel is a pipe that carries the CQ pointer. The write
 * ends are non-blocking: the progress thread never waits on an application
 * that does not read; an event that does not fit is dropped and logged. */
#include "sv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct sv_aev {
  struct sv_aev *next;
  struct ibv_async_event ev;
};

static bool is_cq_event(enum ibv_event_type t) { return t == IBV_EVENT_CQ_ERR; }

/* Port and device events carry a port number, not an object. */
static bool is_port_event(enum ibv_event_type t) {
  return t == IBV_EVENT_PORT_ACTIVE || t == IBV_EVENT_PORT_ERR || t == IBV_EVENT_DEVICE_FATAL ||
         t == IBV_EVENT_LID_CHANGE || t == IBV_EVENT_PKEY_CHANGE || t == IBV_EVENT_SM_CHANGE ||
         t == IBV_EVENT_GID_CHANGE || t == IBV_EVENT_CLIENT_REREGISTER;
}

void sv_async_raise(struct sv_ctx *ctx, enum ibv_event_type type, void *element) {
  struct sv_aev *a = calloc(1, sizeof *a);
  if (!a) {
    sv_log("async event %s dropped: out of memory", ibv_event_type_str(type));
    return;
  }
  a->ev.event_type = type;
  if (is_cq_event(type)) a->ev.element.cq = element;
  else if (is_port_event(type)) a->ev.element.port_num = (int)(intptr_t)element;
  else a->ev.element.qp = element;
  char token = 1;
  pthread_mutex_lock(&ctx->ev_lock);
  if (send(ctx->async_wfd, &token, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
    pthread_mutex_unlock(&ctx->ev_lock);
    sv_log("async event %s dropped: %s", ibv_event_type_str(type), strerror(errno));
    free(a);
    return;
  }
  if (ctx->ev_tail) ctx->ev_tail->next = a;
  else ctx->ev_head = a;
  ctx->ev_tail = a;
  pthread_mutex_unlock(&ctx->ev_lock);
}

/* Drops the events for element not read yet (with their tokens) and
 * returns *reported, the number read: no event for it is read after this. */
uint32_t sv_async_forget(struct sv_ctx *ctx, void *element, const uint32_t *reported) {
  pthread_mutex_lock(&ctx->ev_lock);
  struct sv_aev **pp = &ctx->ev_head, *last = NULL;
  while (*pp) {
    struct sv_aev *a = *pp;
    if ((void *)a->ev.element.qp != element) {
      last = a;
      pp = &a->next;
      continue;
    }
    *pp = a->next;
    free(a);
    /* A reader may hold this token already; it then finds the queue shorter. */
    char token;
    if (recv(ctx->ibctx.async_fd, &token, 1, MSG_DONTWAIT) != 1) sv_log("async token in flight");
  }
  ctx->ev_tail = last;
  uint32_t n = *reported;
  pthread_mutex_unlock(&ctx->ev_lock);
  return n;
}

void sv_async_free_all(struct sv_ctx *ctx) {
  while (ctx->ev_head) {
    struct sv_aev *a = ctx->ev_head;
    ctx->ev_head = a->next;
    free(a);
  }
  ctx->ev_tail = NULL;
}

SV_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event) {
  struct sv_ctx *ctx = sv_ctx_of(context);
  for (;;) {
    char token;
    ssize_t n = read(context->async_fd, &token, 1);
    if (n != 1) {
      if (n == 0) errno = EIO;
      return -1;
    }
    pthread_mutex_lock(&ctx->ev_lock);
    struct sv_aev *a = ctx->ev_head;
    if (a) {
      ctx->ev_head = a->next;
      if (!ctx->ev_head) ctx->ev_tail = NULL;
      if (is_cq_event(a->ev.event_type)) ((struct sv_cq *)a->ev.element.cq)->async_reported++;
      else if (!is_port_event(a->ev.event_type))
        ((struct sv_qp *)a->ev.element.qp)->events_reported++;
    }
    pthread_mutex_unlock(&ctx->ev_lock);
    if (!a) continue; /* its object was destroyed after we took the token */
    *event = a->ev;
    free(a);
    return 0;
  }
}

SV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event) {
  switch (event->event_type) {
  case IBV_EVENT_CQ_ERR: {
    struct ibv_cq *cq = event->element.cq;
    pthread_mutex_lock(&cq->mutex);
    cq->async_events_completed++;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
    break;
  }
  case IBV_EVENT_QP_FATAL:
  case IBV_EVENT_QP_REQ_ERR:
  case IBV_EVENT_QP_ACCESS_ERR:
  case IBV_EVENT_COMM_EST:
  case IBV_EVENT_SQ_DRAINED:
  case IBV_EVENT_PATH_MIG:
  case IBV_EVENT_PATH_MIG_ERR:
  case IBV_EVENT_QP_LAST_WQE_REACHED: {
    struct ibv_qp *qp = event->element.qp;
    pthread_mutex_lock(&qp->mutex);
    qp->events_completed++;
    pthread_cond_signal(&qp->cond);
    pthread_mutex_unlock(&qp->mutex);
    break;
  }
  default: break;
  }
}

/* Waits, as libibverbs' destroy does, until *done == want (and *done2 ==
 * want2); bounded, see above. */
void sv_wait_acks(struct sv_ctx *ctx, pthread_mutex_t *mu, pthread_cond_t *cond,
                  const uint32_t *done, uint32_t want, const uint32_t *done2, uint32_t want2,
                  const char *what) {
  long ms = sv_env_long("SOFTVERBS_ACK_WAIT_MS", 30000, 1, 86400000);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += ms / 1000;
  until.tv_nsec += (ms % 1000) * 1000000;
  if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
  pthread_mutex_lock(mu);
  while (*done != want || (done2 && *done2 != want2)) {
    if (pthread_cond_timedwait(cond, mu, &until) != ETIMEDOUT) continue;
    if (*done == want && (!done2 || *done2 == want2)) break;
    fprintf(stderr,
            "softverbs: %s on %s waited %ld ms for events the application read and never "
            "acknowledged (%u of %u async%s): libibverbs blocks here forever; aborting\n",
            what, ctx->dev->ibdev.name, ms, *done, want,
            done2 ? ", completion events counted too" : "");
    abort();
  }
  pthread_mutex_unlock(mu);
}

SV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context) {
  struct sv_chan *c = calloc(1, sizeof *c);
  int fds[2];
  if (!c) return NULL;
  if (pipe2(fds, O_CLOEXEC)) {
    free(c);
    return NULL;
  }
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  c->ch.context = context;
  c->ch.fd = fds[0];
  c->wfd = fds[1];
  return &c->ch;
}

SV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel) {
  struct sv_chan *c = (struct sv_chan *)channel;
  if (__atomic_load_n(&channel->refcnt, __ATOMIC_SEQ_CST)) return EBUSY;
  close(c->ch.fd);
  close(c->wfd);
  free(c);
  return 0;
}

void sv_chan_notify(struct ibv_comp_channel *ch, struct ibv_cq *cq) {
  struct sv_chan *c = (struct sv_chan *)ch;
  if (write(c->wfd, &cq, sizeof cq) != (ssize_t)sizeof cq)
    sv_log("completion event dropped: %s", strerror(errno));
}

SV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                               void **cq_context) {
  struct ibv_cq *got;
  ssize_t n = read(channel->fd, &got, sizeof got);
  if (n != (ssize_t)sizeof got) {
    if (n >= 0) errno = EIO;
    return -1;
  }
  pthread_mutex_lock(&got->mutex);
  ((struct sv_cq *)got)->comp_reported++;
  pthread_mutex_unlock(&got->mutex);
  *cq = got;
  *cq_context = got->cq_context;
  return 0;
}

SV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents) {
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}
