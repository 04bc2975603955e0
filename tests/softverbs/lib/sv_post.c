/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: ibv_post_send and ibv_post_recv (reached through ctx->ops).
 *
 * Checked at post time, in the order and with the errnos of mlx5_post_send
 * and mlx5_post_recv (providers/mlx5/qp.c), after the QP state (sends need
 * RTS, receives anything but RESET, EINVAL; in ERR both are accepted and
 * flushed): an unknown opcode is EINVAL; a full queue is ENOMEM; more SGEs
 * than max_send_sge is ENOMEM on a send, EINVAL on a receive; inline data
 * beyond max_inline_data is ENOMEM. A queue is full when max_send_wr
 * (max_recv_wr) WRs were posted whose slots no polled completion has
 * released yet (mlx5_wq_overflow): an unsignaled send keeps its slot until
 * a later signaled send on the QP completes and that completion is polled.
 * *bad_wr is the first WR not posted. lkeys are checked later, when the
 * data moves, and fail as completions. Inline data is copied now. */
#include "sv.h"

#include <errno.h>
#include <string.h>

static int check_send(struct sv_qp *qp, const struct ibv_send_wr *wr, uint64_t *total) {
  if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR) return EINVAL;
  switch (wr->opcode) {
  case IBV_WR_SEND:
  case IBV_WR_SEND_WITH_IMM:
  case IBV_WR_RDMA_WRITE:
  case IBV_WR_RDMA_WRITE_WITH_IMM:
  case IBV_WR_RDMA_READ: break;
  default: return EINVAL;
  }
  if (!qp->cap.max_send_wr || qp->sq_tail - atomic_load(&qp->sq_freed) >= qp->cap.max_send_wr)
    return ENOMEM;
  if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge) return ENOMEM;
  *total = 0;
  for (int i = 0; i < wr->num_sge; i++) *total += wr->sg_list[i].length;
  if (*total > 1ull << 31) return EINVAL;
  bool inl = (wr->send_flags & IBV_SEND_INLINE) && wr->opcode != IBV_WR_RDMA_READ;
  if (inl && *total > qp->cap.max_inline_data) return ENOMEM;
  return 0;
}

static void enqueue_send(struct sv_qp *qp, const struct ibv_send_wr *wr, uint64_t total) {
  struct sv_swqe *w = sv_sq_at(qp, qp->sq_tail++);
  w->wr_id = wr->wr_id;
  w->op = (uint8_t)wr->opcode;
  w->signaled = qp->sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
  w->solicited = wr->send_flags & IBV_SEND_SOLICITED;
  w->is_inline = (wr->send_flags & IBV_SEND_INLINE) && wr->opcode != IBV_WR_RDMA_READ;
  w->status = 0;
  w->imm = wr->imm_data;
  w->raddr = wr->wr.rdma.remote_addr;
  w->rkey = wr->wr.rdma.rkey;
  w->len = (uint32_t)total;
  w->nsge = w->is_inline ? 0 : wr->num_sge;
  if (w->is_inline) {
    size_t off = 0;
    for (int i = 0; i < wr->num_sge; i++) {
      memcpy(w->inl + off, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
      off += wr->sg_list[i].length;
    }
  } else if (wr->num_sge) {
    memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof *w->sge);
  }
  w->psn = qp->next_psn;
  qp->next_psn = (qp->next_psn + 1) & 0xffffff;
}

int sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
  struct sv_qp *qp = (struct sv_qp *)ibqp;
  int err = 0;
  pthread_mutex_lock(&qp->lock);
  for (; wr; wr = wr->next) {
    uint64_t total;
    if ((err = check_send(qp, wr, &total)) != 0) break;
    enqueue_send(qp, wr, total);
    sv_count_tx(ibqp->context->device->name, qp->attr.port_num, total,
                wr->opcode == IBV_WR_RDMA_READ);
  }
  if (qp->state == IBV_QPS_ERR) sv_req_flush_sq(qp, IBV_WC_WR_FLUSH_ERR);
  else sv_qp_drive(qp);
  pthread_mutex_unlock(&qp->lock);
  sv_ctx_wake(qp->ctx); /* the progress thread arms the ACK timer */
  if (err) {
    *bad = wr;
    errno = err;
  }
  return err;
}

int sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
  struct sv_qp *qp = (struct sv_qp *)ibqp;
  int err = 0;
  pthread_mutex_lock(&qp->lock);
  for (; wr; wr = wr->next) {
    if (qp->state == IBV_QPS_RESET) {
      err = EINVAL;
      break;
    }
    if (!qp->cap.max_recv_wr || qp->rq_tail - atomic_load(&qp->rq_freed) >= qp->cap.max_recv_wr) {
      err = ENOMEM;
      break;
    }
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
      err = EINVAL;
      break;
    }
    struct sv_rwqe *r = sv_rq_at(qp, qp->rq_tail++);
    r->wr_id = wr->wr_id;
    r->nsge = wr->num_sge;
    if (wr->num_sge) memcpy(r->sge, wr->sg_list, (size_t)wr->num_sge * sizeof *r->sge);
  }
  if (qp->state == IBV_QPS_ERR) sv_resp_flush_rq(qp);
  pthread_mutex_unlock(&qp->lock);
  if (err) {
    *bad = wr;
    errno = err;
  }
  return err;
}
