/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: the responder side of an RC QP.
 *
 * Requests are executed in PSN order while the QP is in RTR or RTS (before
 * that, and in ERR, they are dropped unanswered, as a HCA drops them). A
 * duplicate is answered again without being executed (a READ is read
 * again); a request past a gap gets one PSN-sequence NAK. A SEND or
 * WRITE_WITH_IMM with no receive posted gets an RNR NAK. The rkey, PD,
 * access and bounds checks are made here, against this side's MRs; a
 * violation is NAKed (the requester sees IBV_WC_REM_ACCESS_ERR) and puts
 * this QP in ERR with IBV_EVENT_QP_ACCESS_ERR. ACKs are cumulative and
 * sent when the input drains. All of it runs under qp->lock. */
#include "sv.h"

#include <string.h>

static void queue_rsp(struct sv_conn *c, const struct sv_msg *m, void *data) {
  struct sv_out *o = c ? sv_out_new(m, false) : NULL;
  if (!o) return;
  sv_out_add(o, data, m->len);
  sv_conn_queue(c, o);
}

void sv_resp_flush_ack(struct sv_qp *qp) {
  if (!qp->ack_pending || !qp->in) return;
  struct sv_msg m = {.kind = SV_RSP_ACK, .psn = qp->ack_psn};
  qp->ack_pending = false;
  queue_rsp(qp->in, &m, NULL);
}

/* Mid-way through a long request: ACK what is complete so far. */
void sv_resp_alive(struct sv_qp *qp) {
  if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS) return;
  qp->ack_pending = true;
  qp->ack_psn = (qp->epsn - 1) & 0xffffff;
  sv_resp_flush_ack(qp);
  if (qp->in && sv_conn_flush(qp->in)) sv_conn_kill(qp->in);
}

static void nak(struct sv_qp *qp, struct sv_conn *c, uint8_t syndrome, uint32_t psn) {
  struct sv_msg m = {
    .kind = SV_RSP_NAK, .syndrome = syndrome, .psn = psn, .rnr_timer = qp->attr.min_rnr_timer};
  sv_resp_flush_ack(qp);
  queue_rsp(c, &m, NULL);
}

/* A request this QP cannot serve: NAK it and enter ERR. */
static void fatal(struct sv_qp *qp, struct sv_conn *c, uint8_t syndrome, int async_event) {
  nak(qp, c, syndrome, c->msg.psn);
  sv_log("qp 0x%x rejects psn %u (%s)", qp->ibqp.qp_num, c->msg.psn,
         syndrome == SV_NAK_ACCESS ? "remote access error" : "invalid request");
  sv_qp_error(qp, async_event);
}

static void recv_complete(struct sv_qp *qp, struct sv_conn *c, enum ibv_wc_status st) {
  struct sv_rwqe *r = sv_rq_at(qp, qp->rq_head++);
  const struct sv_msg *m = &c->msg;
  struct sv_cqe_src src = {.qp = qp};
  if (st != IBV_WC_SUCCESS) {
    sv_cq_push_error(qp->ibqp.recv_cq, r->wr_id, st, &src);
    return;
  }
  bool imm = m->kind != SV_REQ_SEND;
  struct ibv_wc wc;
  memset(&wc, 0, sizeof wc);
  wc.wr_id = r->wr_id;
  wc.qp_num = qp->ibqp.qp_num;
  wc.opcode = m->kind == SV_REQ_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
  wc.byte_len = m->len;
  wc.imm_data = imm ? m->imm : 0;
  wc.wc_flags = imm ? IBV_WC_WITH_IMM : 0;
  wc.src_qp = qp->attr.dest_qp_num;
  wc.pkey_index = qp->attr.pkey_index;
  wc.slid = c->hello.slid;
  wc.sl = qp->attr.ah_attr.sl;
  sv_cq_push(qp->ibqp.recv_cq, &wc, m->flags & SV_MSG_SOLICITED, &src);
}

void sv_resp_flush_rq(struct sv_qp *qp) {
  struct sv_cqe_src src = {.qp = qp};
  for (; qp->rq_head != qp->rq_tail; qp->rq_head++)
    sv_cq_push_error(qp->ibqp.recv_cq, sv_rq_at(qp, qp->rq_head)->wr_id, IBV_WC_WR_FLUSH_ERR, &src);
}

/* Points the sink at the receive's SGEs; a status when they cannot take it. */
static enum ibv_wc_status recv_target(struct sv_qp *qp, struct sv_conn *c,
                                      const struct sv_rwqe *r) {
  size_t room = 0, left = c->msg.len;
  for (int i = 0; i < r->nsge; i++) room += r->sge[i].length;
  if (left > room) return IBV_WC_LOC_LEN_ERR;
  sv_sink_set(&c->sink, left, false);
  for (int i = 0; i < r->nsge && left; i++) {
    size_t n = r->sge[i].length < left ? r->sge[i].length : left;
    void *host;
    if (!n) continue;
    if (sv_mr_check(qp->ctx, qp->ibqp.pd, r->sge[i].lkey, r->sge[i].addr, n, IBV_ACCESS_LOCAL_WRITE,
                    &host))
      return IBV_WC_LOC_PROT_ERR;
    sv_sink_add(&c->sink, host, n);
    left -= n;
  }
  return IBV_WC_SUCCESS;
}

static bool need_recv(struct sv_qp *qp, struct sv_conn *c) {
  if (qp->rq_head != qp->rq_tail) return true;
  nak(qp, c, SV_NAK_RNR, c->msg.psn);
  qp->nak_sent = true;
  return false;
}

static void on_send(struct sv_qp *qp, struct sv_conn *c) {
  if (!need_recv(qp, c)) return;
  enum ibv_wc_status st = recv_target(qp, c, sv_rq_at(qp, qp->rq_head));
  if (st == IBV_WC_SUCCESS) {
    c->accepted = true;
    return;
  }
  sv_sink_set(&c->sink, c->msg.len, true);
  recv_complete(qp, c, st);
  fatal(qp, c, st == IBV_WC_LOC_LEN_ERR ? SV_NAK_INV_REQ : SV_NAK_OP_ERR, -1);
}

static void on_write(struct sv_qp *qp, struct sv_conn *c) {
  const struct sv_msg *m = &c->msg;
  void *host = NULL;
  if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE)) {
    fatal(qp, c, SV_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
    return;
  }
  if (m->kind == SV_REQ_WRITE_IMM && !need_recv(qp, c)) return;
  if (m->len && sv_mr_check(qp->ctx, qp->ibqp.pd, m->rkey, m->raddr, m->len,
                            IBV_ACCESS_REMOTE_WRITE, &host)) {
    fatal(qp, c, SV_NAK_ACCESS, IBV_EVENT_QP_ACCESS_ERR);
    return;
  }
  sv_sink_set(&c->sink, m->len, false);
  sv_sink_add(&c->sink, host, m->len);
  c->accepted = true;
}

static void on_read(struct sv_qp *qp, struct sv_conn *c, bool duplicate) {
  const struct sv_msg *m = &c->msg;
  void *host = NULL;
  if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_READ)) {
    fatal(qp, c, SV_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
    return;
  }
  if (m->len &&
      sv_mr_check(qp->ctx, qp->ibqp.pd, m->rkey, m->raddr, m->len, IBV_ACCESS_REMOTE_READ, &host)) {
    fatal(qp, c, SV_NAK_ACCESS, IBV_EVENT_QP_ACCESS_ERR);
    return;
  }
  struct sv_msg rsp = {.kind = SV_RSP_READ, .psn = m->psn, .len = m->len};
  sv_resp_flush_ack(qp);
  queue_rsp(c, &rsp, host);
  if (!duplicate) qp->epsn = (qp->epsn + 1) & 0xffffff;
}

/* The requester must be talking to this port: its GID (RoCE) or LID (IB). */
static bool dest_ok(struct sv_qp *qp, const struct sv_hello *h) {
  struct sv_port *p = sv_qp_port(qp);
  if (!p) return false;
  if (p->link_layer == IBV_LINK_LAYER_INFINIBAND)
    return h->dlid >= p->lid && h->dlid < p->lid + (1u << p->lmc);
  for (int i = 0; i < p->ngids; i++)
    if (!sv_gid_is_zero(&h->dgid) && !memcmp(&p->gids[i].gid, &h->dgid, sizeof h->dgid))
      return true;
  return false;
}

void sv_resp_on_msg(struct sv_conn *c) {
  struct sv_qp *qp = c->qp;
  const struct sv_msg *m = &c->msg;
  c->accepted = false;
  if (!qp || m->kind > SV_REQ_READ || (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS))
    return;
  if (sv_qp_is_cut(qp)) return; /* its link is down: lost, the requester sends it again */
  if (!c->checked && !dest_ok(qp, &c->hello)) {
    sv_log("qp 0x%x: a peer reached it through an address that is not its port's: dropped",
           qp->ibqp.qp_num);
    sv_conn_kill(c);
    return;
  }
  c->checked = true;
  int32_t d = sv_psn_diff(m->psn, qp->epsn);
  if (d > 0) {
    sv_count_hw(qp->ctx->dev->ibdev.name, qp->attr.port_num, SV_HW_OUT_OF_SEQUENCE);
    if (!qp->nak_sent) nak(qp, c, SV_NAK_SEQ, qp->epsn);
    qp->nak_sent = true;
    return;
  }
  if (d < 0) {
    sv_count_hw(qp->ctx->dev->ibdev.name, qp->attr.port_num, SV_HW_DUPLICATE);
    if (m->kind == SV_REQ_READ) on_read(qp, c, true);
    else {
      qp->ack_pending = true;
      qp->ack_psn = (qp->epsn - 1) & 0xffffff;
    }
    return;
  }
  qp->nak_sent = false;
  if (m->kind == SV_REQ_SEND || m->kind == SV_REQ_SEND_IMM) on_send(qp, c);
  else if (m->kind == SV_REQ_READ) on_read(qp, c, false);
  else on_write(qp, c);
}

void sv_resp_on_payload(struct sv_conn *c) {
  struct sv_qp *qp = c->qp;
  const struct sv_msg *m = &c->msg;
  if (!c->accepted || !qp || (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS)) return;
  c->accepted = false;
  if (m->kind != SV_REQ_WRITE) recv_complete(qp, c, IBV_WC_SUCCESS);
  qp->epsn = (qp->epsn + 1) & 0xffffff;
  qp->ack_pending = true;
  qp->ack_psn = m->psn;
}
