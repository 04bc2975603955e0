/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: QP objects, QP numbers and the error and reset paths.
 *
 * A QPN names where the QP can be reached: its upper 16 bits are the TCP
 * port of a listener of the QP's context, its low 8 bits a slot of that
 * listener. The peer learns the QPN out of band (as with any RC QP) and
 * connects to <remote GID's address>:<QPN >> 8> at RTR, so no shared
 * directory is needed between processes or hosts. */
#include "sv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Next free slot, round robin so that a destroyed QP's number comes back late. */
static int take_slot(struct sv_ctx *ctx, struct sv_qp *qp) {
  struct sv_listener *l = ctx->listeners;
  while (l && l->used == SV_QP_SLOTS) l = l->next;
  if (!l) {
    int err = sv_listener_new(ctx, &l);
    if (err) return err;
  }
  int s = l->next_slot;
  while (l->slot[s]) s = (s + 1) % SV_QP_SLOTS;
  l->slot[s] = qp;
  l->used++;
  l->next_slot = (s + 1) % SV_QP_SLOTS;
  qp->lis = l;
  qp->slot = s;
  qp->ibqp.qp_num = (uint32_t)l->port << 8 | (uint32_t)s;
  return 0;
}

/* The caps as the device gives them (sv_caps.c) in *cap. */
static int check_init_attr(const struct ibv_qp_init_attr *ia, struct ibv_qp_cap *cap) {
  if (ia->qp_type != IBV_QPT_RC || ia->srq) return EOPNOTSUPP;
  if (!ia->send_cq || !ia->recv_cq) return EINVAL;
  *cap = ia->cap;
  return sv_caps_size(cap);
}

/* One block for both queues: per send slot its SGEs and inline buffer. */
static int alloc_queues(struct sv_qp *qp) {
  struct ibv_qp_cap *c = &qp->cap;
  qp->sq_size = c->max_send_wr ? c->max_send_wr : 1;
  qp->rq_size = c->max_recv_wr ? c->max_recv_wr : 1;
  size_t ssge = c->max_send_sge ? c->max_send_sge : 1, rsge = c->max_recv_sge ? c->max_recv_sge : 1;
  size_t inl = c->max_send_wr ? c->max_inline_data : 0; /* no send queue: nothing inline */
  size_t per_s = sizeof(struct sv_swqe) + ssge * sizeof(struct ibv_sge) + inl;
  size_t per_r = sizeof(struct sv_rwqe) + rsge * sizeof(struct ibv_sge);
  char *m = calloc(1, qp->sq_size * (per_s + 8) + qp->rq_size * per_r + 16);
  if (!m) return ENOMEM;
  qp->wqe_mem = m;
  qp->sq = (struct sv_swqe *)m;
  qp->rq = (struct sv_rwqe *)(m + qp->sq_size * sizeof(struct sv_swqe));
  char *sge = (char *)(qp->rq + qp->rq_size);
  for (uint32_t i = 0; i < qp->sq_size; i++, sge += ssge * sizeof(struct ibv_sge))
    qp->sq[i].sge = (void *)sge;
  for (uint32_t i = 0; i < qp->rq_size; i++, sge += rsge * sizeof(struct ibv_sge))
    qp->rq[i].sge = (void *)sge;
  for (uint32_t i = 0; i < qp->sq_size; i++, sge += inl) qp->sq[i].inl = (uint8_t *)sge;
  return 0;
}

SV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia) {
  struct sv_ctx *ctx = sv_ctx_of(pd->context);
  struct ibv_qp_cap cap;
  int err = check_init_attr(ia, &cap);
  struct sv_qp *qp = err ? NULL : calloc(1, sizeof *qp);
  if (!qp) {
    errno = err ? err : ENOMEM;
    return NULL;
  }
  qp->ctx = ctx;
  qp->cap = cap;
  qp->sig_all = ia->sq_sig_all;
  if ((err = alloc_queues(qp)) != 0) goto free_qp;
  pthread_mutex_init(&qp->lock, NULL);
  pthread_mutex_init(&qp->modify_lock, NULL);
  pthread_mutex_init(&qp->ibqp.mutex, NULL);
  pthread_cond_init(&qp->ibqp.cond, NULL);
  qp->ibqp.context = pd->context;
  qp->ibqp.qp_context = ia->qp_context;
  qp->ibqp.pd = pd;
  qp->ibqp.send_cq = ia->send_cq;
  qp->ibqp.recv_cq = ia->recv_cq;
  qp->ibqp.state = qp->state = IBV_QPS_RESET;
  qp->ibqp.qp_type = IBV_QPT_RC;
  /* Published last: the progress thread walks ctx->qps. */
  pthread_mutex_lock(&ctx->qp_lock);
  err = take_slot(ctx, qp);
  if (!err) {
    qp->next = ctx->qps;
    ctx->qps = qp;
  }
  pthread_mutex_unlock(&ctx->qp_lock);
  if (err) goto destroy_locks;
  qp->ibqp.handle = qp->ibqp.qp_num;
  atomic_fetch_add(&((struct sv_pd *)pd)->refs, 1);
  atomic_fetch_add(&((struct sv_cq *)ia->send_cq)->refs, 1);
  atomic_fetch_add(&((struct sv_cq *)ia->recv_cq)->refs, 1);
  ia->cap = cap; /* what the application may rely on, as mlx5 reports it */
  sv_log("qp 0x%x created on %s (send %u x %u sge, %u inline; recv %u x %u sge)", qp->ibqp.qp_num,
         ctx->dev->ibdev.name, cap.max_send_wr, cap.max_send_sge, cap.max_inline_data,
         cap.max_recv_wr, cap.max_recv_sge);
  return &qp->ibqp;
destroy_locks:
  pthread_mutex_destroy(&qp->lock);
  pthread_mutex_destroy(&qp->modify_lock);
  pthread_mutex_destroy(&qp->ibqp.mutex);
  pthread_cond_destroy(&qp->ibqp.cond);
  free(qp->wqe_mem);
free_qp:
  free(qp);
  errno = err;
  return NULL;
}

SV_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp) {
  struct sv_qp *qp = (struct sv_qp *)ibqp, **pp;
  struct sv_ctx *ctx = qp->ctx;
  pthread_mutex_lock(&ctx->qp_lock);
  pthread_mutex_lock(&qp->lock);
  if (qp->out) sv_conn_kill(qp->out);
  if (qp->in) sv_conn_kill(qp->in);
  for (pp = &ctx->qps; *pp && *pp != qp; pp = &(*pp)->next) continue;
  if (*pp) *pp = qp->next;
  qp->lis->slot[qp->slot] = NULL;
  qp->lis->used--;
  pthread_mutex_unlock(&qp->lock);
  pthread_mutex_unlock(&ctx->qp_lock);
  /* As libibverbs: events not yet read are dropped, and the QP lives on
   * until every event the application did read is acknowledged. Its
   * completions leave the CQs, as mlx5 cleans them. */
  uint32_t reported = sv_async_forget(ctx, ibqp, &qp->events_reported);
  sv_cq_clean(ibqp->send_cq, qp);
  sv_cq_clean(ibqp->recv_cq, qp);
  char what[64];
  snprintf(what, sizeof what, "ibv_destroy_qp(qp 0x%x)", ibqp->qp_num);
  sv_wait_acks(ctx, &ibqp->mutex, &ibqp->cond, &ibqp->events_completed, reported, NULL, 0, what);
  atomic_fetch_sub(&((struct sv_pd *)ibqp->pd)->refs, 1);
  atomic_fetch_sub(&((struct sv_cq *)ibqp->send_cq)->refs, 1);
  atomic_fetch_sub(&((struct sv_cq *)ibqp->recv_cq)->refs, 1);
  pthread_mutex_destroy(&qp->lock);
  pthread_mutex_destroy(&qp->modify_lock);
  pthread_mutex_destroy(&ibqp->mutex);
  pthread_cond_destroy(&ibqp->cond);
  free(qp->wqe_mem);
  free(qp);
  return 0;
}

SV_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
                           struct ibv_qp_init_attr *init_attr) {
  struct sv_qp *qp = (struct sv_qp *)ibqp;
  (void)attr_mask; /* everything is cheap to report */
  pthread_mutex_lock(&qp->lock);
  *attr = qp->attr;
  attr->qp_state = attr->cur_qp_state = qp->state;
  attr->cap = qp->cap;
  pthread_mutex_unlock(&qp->lock);
  memset(init_attr, 0, sizeof *init_attr);
  init_attr->qp_context = ibqp->qp_context;
  init_attr->send_cq = ibqp->send_cq;
  init_attr->recv_cq = ibqp->recv_cq;
  init_attr->cap = qp->cap;
  init_attr->qp_type = IBV_QPT_RC;
  init_attr->sq_sig_all = qp->sig_all;
  return 0;
}

/* Data lands in memory in the order it was sent. */
SV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags) {
  (void)qp, (void)op;
  return flags ? 0 : 1;
}

struct sv_port *sv_qp_port(struct sv_qp *qp) {
  return sv_device_port(qp->ctx->dev, qp->attr.port_num);
}

bool sv_qp_is_cut(struct sv_qp *qp) {
  struct sv_port *p = sv_qp_port(qp);
  return p && atomic_load_explicit(&p->is_cut, memory_order_relaxed);
}

/* 4.096 us x 2^timeout, scaled by SOFTVERBS_TIME_SCALE; 0 means wait forever. */
uint64_t sv_qp_ack_timeout_ns(struct sv_qp *qp) {
  if (!qp->attr.timeout) return 0;
  double ns = (double)(4096ull << qp->attr.timeout) * sv_env_double("SOFTVERBS_TIME_SCALE", 1.0);
  return ns < 1000.0 ? 1000 : (uint64_t)ns;
}

/* The QP enters ERR: it stops sending (its requester connection closes),
 * drops what it receives (the responder connection stays open, so a NAK
 * just queued still reaches the peer) and every outstanding WR completes
 * with IBV_WC_WR_FLUSH_ERR. qp->lock held. */
void sv_qp_error(struct sv_qp *qp, int async_event) {
  bool was_err = qp->state == IBV_QPS_ERR;
  qp->state = IBV_QPS_ERR;
  if (qp->out) sv_conn_kill(qp->out);
  qp->ack_deadline = qp->rnr_until = 0;
  sv_req_flush_sq(qp, IBV_WC_WR_FLUSH_ERR);
  sv_resp_flush_rq(qp);
  if (!was_err) sv_log("qp 0x%x enters ERR", qp->ibqp.qp_num);
  if (async_event >= 0 && !was_err)
    sv_async_raise(qp->ctx, (enum ibv_event_type)async_event, &qp->ibqp);
}

/* RESET drops queued WRs without completions, removes the QP's
 * completions from its CQs (as mlx5_modify_qp does) and forgets the path.
 * The CQs are cleaned first: a poll under way finishes its slot release
 * before the counters start over. */
void sv_qp_reset(struct sv_qp *qp) {
  if (qp->out) sv_conn_kill(qp->out);
  if (qp->in) sv_conn_kill(qp->in);
  sv_cq_clean(qp->ibqp.send_cq, qp);
  sv_cq_clean(qp->ibqp.recv_cq, qp);
  qp->sq_head = qp->sq_tx = qp->sq_max = qp->sq_tail = 0;
  qp->rq_head = qp->rq_tail = 0;
  atomic_store(&qp->sq_freed, 0);
  atomic_store(&qp->rq_freed, 0);
  memset(&qp->attr, 0, sizeof qp->attr);
  qp->state = IBV_QPS_RESET;
  qp->ack_deadline = qp->rnr_until = qp->ack_ns = 0;
  qp->nak_sent = qp->ack_pending = false;
}

/* Sends what can be sent now: new requests, a pending ACK, queued bytes. */
void sv_qp_drive(struct sv_qp *qp) {
  sv_req_push(qp);
  sv_resp_flush_ack(qp);
  if (qp->in && sv_conn_flush(qp->in)) sv_conn_kill(qp->in);
  if (qp->out && sv_conn_flush(qp->out)) sv_conn_kill(qp->out);
}
