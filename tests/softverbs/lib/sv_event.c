/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: asynchronous events and completion channels.
 *
 * Both are pipes that carry the event itself (an ibv_async_event, or the CQ
 * pointer), so the application can poll() the fd as with libibverbs, and a
 * read is one whole event (writes below PIPE_BUF are atomic). The write ends
 * are non-blocking: the progress thread never waits on an application that
 * does not read; an event that does not fit is dropped and logged. */
#include "sv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sv_async_raise(struct sv_ctx *ctx, enum ibv_event_type type, void *element) {
  struct ibv_async_event ev;
  memset(&ev, 0, sizeof ev);
  ev.event_type = type;
  if (type == IBV_EVENT_CQ_ERR) ev.element.cq = element;
  else ev.element.qp = element;
  if (write(ctx->async_wfd, &ev, sizeof ev) != (ssize_t)sizeof ev)
    sv_log("async event %s dropped: %s", ibv_event_type_str(type), strerror(errno));
}

SV_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event) {
  ssize_t n = read(context->async_fd, event, sizeof *event);
  if (n == (ssize_t)sizeof *event) return 0;
  if (n >= 0) errno = EIO;
  return -1;
}

SV_EXPORT void ibv_ack_async_event(struct ibv_async_event *event) {
  switch (event->event_type) {
  case IBV_EVENT_CQ_ERR: {
    struct ibv_cq *cq = event->element.cq;
    pthread_mutex_lock(&cq->mutex);
    cq->async_events_completed++;
    pthread_mutex_unlock(&cq->mutex);
    break;
  }
  case IBV_EVENT_QP_FATAL:
  case IBV_EVENT_QP_REQ_ERR:
  case IBV_EVENT_QP_ACCESS_ERR: {
    struct ibv_qp *qp = event->element.qp;
    pthread_mutex_lock(&qp->mutex);
    qp->events_completed++;
    pthread_mutex_unlock(&qp->mutex);
    break;
  }
  default: break;
  }
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
  *cq = got;
  *cq_context = got->cq_context;
  return 0;
}

SV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents) {
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_mutex_unlock(&cq->mutex);
}
