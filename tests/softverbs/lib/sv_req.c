/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: the requester side of an RC QP.
 *
 * WRs are sent in order and complete in order when the responder's
 * cumulative ACK (or, for a READ, its response) covers them. The local ACK
 * timer runs while WRs are outstanding and restarts whenever the peer shows
 * life (a response, or every MiB of a long READ response); when it expires the
 * outstanding WRs are sent again (go-back-N), and after retry_cnt retries
 * the oldest completes with IBV_WC_RETRY_EXC_ERR: (retry_cnt + 1) x
 * 4.096 us x 2^timeout after the peer went silent, times
 * SOFTVERBS_TIME_SCALE. An RNR NAK holds the SQ for the responder's
 * min_rnr_timer, up to rnr_retry times (7: forever), then
 * IBV_WC_RNR_RETRY_EXC_ERR. All of it runs under qp->lock. */
#include "sv.h"

#include <stdlib.h>
#include <string.h>

enum { SV_OUT_WINDOW = 4 << 20 }; /* bytes queued per connection before we stop sending */

/* min_rnr_timer codes (IBA table) in units of 10 us. */
static const uint32_t rnr_10us[32] = {65536, 1,    2,    3,     4,     6,     8,     12,
                                      16,    24,   32,   48,    64,    96,    128,   192,
                                      256,   384,  512,  768,   1024,  1536,  2048,  3072,
                                      4096,  6144, 8192, 12288, 16384, 24576, 32768, 49152};

static enum ibv_wc_opcode wc_opcode(uint8_t op) {
  switch (op) {
  case IBV_WR_RDMA_WRITE:
  case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
  case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
  default: return IBV_WC_SEND;
  }
}

static void arm(struct sv_qp *qp, uint64_t now) {
  qp->ack_deadline = qp->ack_ns && qp->sq_head != qp->sq_tail ? now + qp->ack_ns : 0;
}

/* Send WR n is done; its slot (and those of the unsignaled WRs before it)
 * is free once this completion is polled, or now with SOFTVERBS_SQ_FREE=ack. */
static struct sv_cqe_src sq_done(struct sv_qp *qp, uint32_t n) {
  if (sv_sq_free_on_ack()) atomic_store(&qp->sq_freed, n + 1);
  return (struct sv_cqe_src){.qp = qp, .upto = n + 1, .is_send = true};
}

/* Completes the oldest WR; on error the QP enters ERR, flushing the rest. */
static void complete_head(struct sv_qp *qp, enum ibv_wc_status st) {
  struct sv_swqe *w = sv_sq_at(qp, qp->sq_head);
  struct sv_cqe_src src = sq_done(qp, qp->sq_head);
  if (st == IBV_WC_SUCCESS) st = sv_fault_wc(qp->ctx->dev->ibdev.name);
  if (st != IBV_WC_SUCCESS) {
    sv_cq_push_error(qp->ibqp.send_cq, w->wr_id, st, &src);
  } else if (w->signaled) {
    struct ibv_wc wc;
    memset(&wc, 0, sizeof wc);
    wc.wr_id = w->wr_id;
    wc.qp_num = qp->ibqp.qp_num;
    wc.opcode = wc_opcode(w->op);
    wc.byte_len = w->len;
    sv_cq_push(qp->ibqp.send_cq, &wc, false, &src);
  }
  qp->sq_head++;
  if ((int32_t)(qp->sq_tx - qp->sq_head) < 0) qp->sq_tx = qp->sq_head;
  if ((int32_t)(qp->sq_max - qp->sq_head) < 0) qp->sq_max = qp->sq_head;
  if (st != IBV_WC_SUCCESS) {
    sv_log("qp 0x%x wr %llu completes with %s", qp->ibqp.qp_num, (unsigned long long)w->wr_id,
           ibv_wc_status_str(st));
    sv_qp_error(qp, -1);
    return;
  }
  qp->retries_left = qp->attr.retry_cnt;
  qp->rnr_left = qp->attr.rnr_retry;
  arm(qp, sv_now_ns());
}

void sv_req_flush_sq(struct sv_qp *qp, enum ibv_wc_status st) {
  for (; qp->sq_head != qp->sq_tail; qp->sq_head++) {
    struct sv_cqe_src src = sq_done(qp, qp->sq_head);
    sv_cq_push_error(qp->ibqp.send_cq, sv_sq_at(qp, qp->sq_head)->wr_id, st, &src);
  }
  qp->sq_tx = qp->sq_max = qp->sq_head;
}

static void go_back(struct sv_qp *qp) {
  if (qp->out) sv_conn_drop_unstarted(qp->out);
  qp->sq_tx = qp->sq_head;
}

static uint8_t kind_of(uint8_t op) {
  switch (op) {
  case IBV_WR_SEND_WITH_IMM: return SV_REQ_SEND_IMM;
  case IBV_WR_RDMA_WRITE: return SV_REQ_WRITE;
  case IBV_WR_RDMA_WRITE_WITH_IMM: return SV_REQ_WRITE_IMM;
  case IBV_WR_RDMA_READ: return SV_REQ_READ;
  default: return SV_REQ_SEND;
  }
}

/* The request for a WR, gathering from its SGEs (checked now, as a HCA
 * checks them when it fetches the data) or its inline copy. NULL with
 * w->status set when an lkey does not cover the data. */
static struct sv_out *build(struct sv_qp *qp, struct sv_swqe *w) {
  struct sv_msg m = {.kind = kind_of(w->op),
                     .psn = w->psn,
                     .raddr = w->raddr,
                     .rkey = w->rkey,
                     .len = w->len,
                     .imm = w->imm,
                     .flags = w->solicited ? SV_MSG_SOLICITED : 0};
  struct sv_out *o = sv_out_new(&m, true);
  if (!o || w->op == IBV_WR_RDMA_READ) return o;
  if (w->is_inline) {
    sv_out_add(o, w->inl, w->len);
    return o;
  }
  for (int i = 0; i < w->nsge; i++) {
    void *host;
    if (!w->sge[i].length) continue;
    if (sv_mr_check(qp->ctx, qp->ibqp.pd, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length, 0,
                    &host)) {
      w->status = IBV_WC_LOC_PROT_ERR;
      free(o);
      return NULL;
    }
    sv_out_add(o, host, w->sge[i].length);
  }
  return o;
}

/* A WR that failed locally completes once everything before it has. */
static void local_error(struct sv_qp *qp) {
  if (qp->sq_head == qp->sq_tx && qp->sq_tx != qp->sq_tail && sv_sq_at(qp, qp->sq_tx)->status)
    complete_head(qp, sv_sq_at(qp, qp->sq_tx)->status);
}

void sv_req_push(struct sv_qp *qp) {
  if (qp->state != IBV_QPS_RTS || qp->rnr_until) return;
  struct sv_conn *c = qp->out;
  while (qp->sq_tx != qp->sq_tail && c && c->state == SV_UP && c->oq_bytes < SV_OUT_WINDOW) {
    struct sv_swqe *w = sv_sq_at(qp, qp->sq_tx);
    const char *dev = qp->ctx->dev->ibdev.name;
    if (!w->status && w->op != IBV_WR_RDMA_READ &&
        (sv_qp_is_cut(qp) || sv_fault_drops(dev, w->len) ||
         sv_fault_loses(dev, &qp->attr.ah_attr.grh.dgid))) {
      qp->sq_tx++; /* sent, and lost on the way: no ACK comes */
      if ((int32_t)(qp->sq_tx - qp->sq_max) > 0) qp->sq_max = qp->sq_tx;
      continue;
    }
    struct sv_out *o = w->status ? NULL : build(qp, w);
    if (!o) break;
    sv_conn_queue(c, o);
    qp->sq_tx++;
    if ((int32_t)(qp->sq_tx - qp->sq_max) > 0) qp->sq_max = qp->sq_tx;
  }
  local_error(qp);
  if (qp->state == IBV_QPS_RTS && !qp->ack_deadline) arm(qp, sv_now_ns());
}

void sv_req_tick(struct sv_qp *qp, uint64_t now) {
  if (qp->state != IBV_QPS_RTS) return;
  if (qp->rnr_until) {
    if (now < qp->rnr_until) return;
    qp->rnr_until = 0;
    go_back(qp);
    arm(qp, now);
    return;
  }
  if (!qp->ack_deadline || now < qp->ack_deadline) return;
  if (qp->sq_head == qp->sq_tail) {
    qp->ack_deadline = 0;
    return;
  }
  if (qp->retries_left <= 0) {
    complete_head(qp, IBV_WC_RETRY_EXC_ERR);
    return;
  }
  qp->retries_left--;
  sv_count_hw(qp->ctx->dev->ibdev.name, qp->attr.port_num, SV_HW_ACK_TIMEOUT);
  sv_log("qp 0x%x ack timeout, %d retries left", qp->ibqp.qp_num, qp->retries_left);
  go_back(qp);
  arm(qp, now);
}

/* Everything up to psn has been executed by the responder. */
static void acked_through(struct sv_qp *qp, uint32_t psn) {
  while (qp->state == IBV_QPS_RTS && qp->sq_head != qp->sq_max) {
    struct sv_swqe *w = sv_sq_at(qp, qp->sq_head);
    if (sv_psn_diff(w->psn, psn) > 0 || w->op == IBV_WR_RDMA_READ) break;
    complete_head(qp, IBV_WC_SUCCESS);
  }
}

static void on_nak(struct sv_qp *qp, const struct sv_msg *m) {
  if (qp->state != IBV_QPS_RTS || qp->sq_head == qp->sq_max ||
      sv_sq_at(qp, qp->sq_head)->psn != m->psn)
    return;
  switch (m->syndrome) {
  case SV_NAK_RNR:
    if (qp->attr.rnr_retry != 7 && qp->rnr_left-- <= 0) {
      complete_head(qp, IBV_WC_RNR_RETRY_EXC_ERR);
      return;
    }
    qp->rnr_until = sv_now_ns() + (uint64_t)rnr_10us[m->rnr_timer & 31] * 10000ull;
    qp->ack_deadline = 0;
    go_back(qp);
    return;
  case SV_NAK_SEQ:
    sv_count_hw(qp->ctx->dev->ibdev.name, qp->attr.port_num, SV_HW_SEQ_NAK);
    if (qp->retries_left-- <= 0) {
      complete_head(qp, IBV_WC_RETRY_EXC_ERR);
      return;
    }
    go_back(qp);
    return;
  case SV_NAK_ACCESS: complete_head(qp, IBV_WC_REM_ACCESS_ERR); return;
  case SV_NAK_OP_ERR: complete_head(qp, IBV_WC_REM_OP_ERR); return;
  default: complete_head(qp, IBV_WC_REM_INV_REQ_ERR); return;
  }
}

/* A READ response goes into the READ's SGEs, which need local write. */
static void read_target(struct sv_qp *qp, struct sv_conn *c) {
  struct sv_swqe *w = sv_sq_at(qp, qp->sq_head);
  c->accepted = false;
  if (qp->state != IBV_QPS_RTS || qp->sq_head == qp->sq_max || w->op != IBV_WR_RDMA_READ ||
      w->psn != c->msg.psn)
    return; /* a duplicate response */
  c->accepted = true;
  sv_sink_set(&c->sink, c->msg.len, false);
  size_t room = 0;
  for (int i = 0; i < w->nsge; i++) {
    void *host;
    if (!w->sge[i].length) continue;
    if (sv_mr_check(qp->ctx, qp->ibqp.pd, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length,
                    IBV_ACCESS_LOCAL_WRITE, &host)) {
      w->status = IBV_WC_LOC_PROT_ERR;
      sv_sink_set(&c->sink, c->msg.len, true);
      return;
    }
    sv_sink_add(&c->sink, host, w->sge[i].length);
    room += w->sge[i].length;
  }
  if (room < c->msg.len) {
    w->status = IBV_WC_LOC_LEN_ERR;
    sv_sink_set(&c->sink, c->msg.len, true);
  }
}

/* The responder answers: restart the ACK timer. */
void sv_req_alive(struct sv_qp *qp) {
  if (qp->ack_deadline) qp->ack_deadline = sv_now_ns() + qp->ack_ns;
}

void sv_req_on_msg(struct sv_conn *c) {
  struct sv_qp *qp = c->qp;
  const struct sv_msg *m = &c->msg;
  if (!qp || qp->state != IBV_QPS_RTS || sv_qp_is_cut(qp)) return; /* a dead link brings nothing */
  sv_req_alive(qp);
  switch (m->kind) {
  case SV_RSP_ACK: acked_through(qp, m->psn); break;
  case SV_RSP_NAK:
    acked_through(qp, m->psn - 1);
    on_nak(qp, m);
    break;
  case SV_RSP_READ:
    acked_through(qp, m->psn - 1);
    read_target(qp, c);
    break;
  default: break;
  }
}

void sv_req_on_payload(struct sv_conn *c) {
  struct sv_qp *qp = c->qp;
  if (c->msg.kind != SV_RSP_READ || !c->accepted || !qp || qp->state != IBV_QPS_RTS) return;
  c->accepted = false;
  struct sv_swqe *w = sv_sq_at(qp, qp->sq_head);
  complete_head(qp, w->status ? w->status : IBV_WC_SUCCESS);
}
