/* SPDX-License-Identifier: Apache-2.0 */
/* irecv (post a receive for the immediate, then write clear-to-send entries
 * into the sender's FIFO) and iflush (an RDMA read on a queue pair
 * connected to itself, so GPU memory sees the data that landed). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "transport/ib/data/ib_comm.h"
#include "transport/ib/data/ib_prof.h"

/* The receive of the immediate on the queue pair the message comes on,
 * or on each of them when every message is split over all. */
int ib_post_recvs(struct ib_comm *c, uint32_t seq, int slot) {
  int first = ib_msg_first(c, seq), count = ib_msg_qps(c);
  for (int k = 0; k < count; k++) {
    struct ib_qp *q = &c->qps[first + k];
    struct ibv_recv_wr rwr = {.wr_id = WR_ID(WR_RECV, slot)}, *rbad;
    int err = ibv_post_recv(q->qp, &rwr, &rbad);
    if (err)
      return ib_fail(c, err, true, "posting receive %u on qp 0x%x failed: %s", seq, q->qp->qp_num,
                     strerror(err));
  }
  c->recv_pending[slot] = (uint8_t)count;
  return 0;
}

/* The clear-to-send entries go on the first queue pair only (one per
 * device, as NCCL does). An unsignaled write leaves a send queue only when
 * a later signaled completion of the same queue pair is polled (mlx5), so
 * the count of unsignaled writes is kept per queue pair; an unsignaled one
 * that fails still completes, under its wr_id. */
int ib_post_cts(struct ib_comm *c, uint32_t seq, int slot, int n) {
  struct ib_qp *q = &c->qps[0];
  /* a slot's entries, striped ones with their keys before each (ib.h) */
  size_t width = (size_t)c->cts_w * sizeof(struct ib_cts);
  struct ib_cts *e = &c->shadow[slot * IB_MAX_RECVS * c->cts_w];
  struct ibv_sge sge = {(uintptr_t)e, (uint32_t)((size_t)n * width), c->shadow_mr->lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof(wr));
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = c->peer_fifo_addr + (uint64_t)slot * IB_MAX_RECVS * width;
  wr.wr.rdma.rkey = c->peer_fifo_rkey;
  wr.wr_id = WR_ID(WR_CTS, slot);
  if (++c->unsignaled[0] >= IB_CTS_SIGNAL_EVERY) {
    wr.send_flags = IBV_SEND_SIGNALED;
    c->unsignaled[0] = 0;
  }
  int err = ibv_post_send(q->qp, &wr, &bad);
  if (err)
    return ib_fail(c, err, true, "posting the clear-to-send of receive %u on qp 0x%x failed: %s",
                   seq, q->qp->qp_num, strerror(err));
  return 0;
}

ncclResult_t ib_irecv(struct transport_comm *xc, int n, void **data, size_t *sizes, int *tags,
                      void **mhandles, void **request) {
  struct ib_comm *c = (struct ib_comm *)xc;
  *request = NULL;
  if (c->is_failed || ib_fatal_guard(c)) return transport_result(c->fail_err);
  if (c->verdict != IB_VERDICT_NONE || ib_fo_moving(c)) {
    /* a failure is being judged, or the connection moves to another port: NCCL calls again */
    int64_t now = 0;
    return transport_result(ib_idle(c, NULL, &now));
  }
  uint32_t seq = c->recv_seq;
  int slot = (int)(seq % IB_SLOTS);
  if (c->slot_reqs[slot]) {
    WARN("irecv from %s: more than %d receives in flight on one connection (an API misuse)",
         xc->peer.desc, IB_MAX_REQS);
    return ncclInternalError;
  }
  for (int i = 0; i < n; i++) {
    struct ib_mh *mh = mhandles ? mhandles[i] : NULL;
    /* A 0-byte receive needs no memory: the sender writes nothing there. */
    bool is_empty = sizes[i] == 0 && !mh;
    if (!is_empty &&
        (!mh || mh->obj != OBJ_MR || (uintptr_t)data[i] < mh->addr ||
         (uintptr_t)data[i] + sizes[i] > mh->addr + mh->len || sizes[i] > UINT32_MAX)) {
      WARN("irecv of %zu bytes from %s: buffer %d (%p) lies outside its registration (or the "
           "registration is not live)",
           sizes[i], xc->peer.desc, i, data[i]);
      return ncclInternalError;
    }
    struct ib_cts *ei = ib_fifo_at(c, slot, i);
    if (c->cts_w > 1) /* striped: the buffer's key on each of this side's ports */
      for (int k = 0; k < IB_MAX_STRIPE; k++)
        ib_cts_keys_of(ei)->rkeys[k] =
          is_empty || k >= c->ndevs ? 0 : ib_mh_mr(mh, c->members[k])->rkey;
    *ei = (struct ib_cts){(uintptr_t)data[i],
                          is_empty ? 0 : mh->mr->rkey,
                          (uint32_t)sizes[i],
                          tags ? tags[i] : 0,
                          (uint32_t)n,
                          0,
                          seq + 1};
  }
  struct ib_req *r = ib_req_get(c);
  if (!r) {
    WARN("irecv from %s: more than %d requests in flight (an API misuse)", xc->peer.desc,
         IB_MAX_REQS);
    return ncclInternalError;
  }
  r->seq = seq;
  r->n = n;
  for (int i = 0; i < n; i++) /* a 0-byte receive may come without a registration */
    r->is_gpu |= mhandles[i] && ((struct ib_mh *)mhandles[i])->is_gpu;
  r->tag = tags ? tags[0] : 0;
  for (int i = 0; i < n; i++) r->bytes += sizes[i];
  /* after a move to another port */
  int err = ib_fo_recv_keys(c, r, slot, n);
  if (!err) err = ib_post_recvs(c, seq, slot);
  if (!err) err = ib_post_cts(c, seq, slot, n);
  if (err) {
    ib_req_put(c, r);
    return transport_result(c->fail_err);
  }
  c->slot_reqs[slot] = r;
  /* NCCL profiler events, on the queue pair that takes the receive first */
  ib_prof_recv(c, &c->qps[ib_msg_first(c, seq)], r, WR_ID(WR_RECV, slot), sizes);
  c->recv_seq++;
  *request = r;
  return ncclSuccess;
}

/* A flush queue pair connected to itself on port d (its completions on
 * cq), reading into the flush buffer through *mr: 0 or an errno (logged). */
static int flush_qp_on(struct ib_comm *c, struct ib_dev *d, struct ibv_cq *cq, struct ib_qp *q,
                       struct ibv_mr **mr) {
  *mr = ib_mr_plain(d, c->flush_buf, 64, IBV_ACCESS_LOCAL_WRITE, "the flush buffer");
  if (!*mr) return ENOMEM; /* logged */
  const struct topo_dev *t = d->td;
  bool is_own = c->gid_dev == d; /* the connection's first port, not moved by a fail-over */
  struct ib_path_ends self_end = {.is_roce = t->ll != TOPO_LL_IB,
                                  .local_mtu = d->mtu,
                                  .local_gid = is_own ? c->gid : t->gid,
                                  .local_gid_index = is_own ? c->gid_index : t->gid_index,
                                  .remote_lid = t->lid,
                                  .is_grh_required = d->is_grh_required};
  struct ib_path p;
  ib_path_self(&self_end, &p);
  p.qpn = 0;
  char why[1024];
  struct hello self;
  memset(&self, 0, sizeof(self));
  snprintf(self.host, sizeof(self.host), "this host");
  int err = ib_qp_create(q, d, cq, IB_SLOTS, 1, "itself (flush)", why, sizeof(why));
  if (!err) err = ib_qp_init(q, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_LOCAL_WRITE, why, sizeof(why));
  if (!err) p.qpn = q->qp->qp_num;
  if (!err) err = ib_qp_rtr(q, &p, &self, why, sizeof(why));
  if (!err) err = ib_qp_rts(q, why, sizeof(why));
  if (err)
    WARN("connection with %s on %s: the flush queue pair (GPU memory) cannot be set up: %s",
         c->base.peer.desc, d->label, why);
  return err;
}

/* One flush queue pair per port of the connection: a striped one's data
 * reaches GPU memory through each port, so each is flushed (as NCCL
 * flushes every device of a virtual NIC). */
int ib_flush_setup(struct ib_comm *c) {
  c->flush_buf = aligned_alloc(64, 64);
  if (!c->flush_buf) {
    WARN("connection with %s on %s: out of memory for the flush buffer", c->base.peer.desc,
         c->dev->label);
    return ENOMEM;
  }
  int err = flush_qp_on(c, c->dev, c->cq, &c->flush_qp, &c->flush_mr);
  for (int k = 1; !err && k < c->ndevs; k++)
    err = flush_qp_on(c, c->devs[k], c->cqs[k], &c->flush_qps[k], &c->flush_mrs[k]);
  if (!err) c->has_flush = true;
  return err;
}

/* The same read through the connection's other ports (striped). */
static int flush_others(struct ib_comm *c, struct ibv_send_wr *wr, const struct ib_mh *mh,
                        struct ibv_sge *sge) {
  for (int k = 1; k < c->ndevs; k++) {
    struct ibv_send_wr *bad;
    sge->lkey = c->flush_mrs[k]->lkey;
    wr->wr.rdma.rkey = ib_mh_mr(mh, c->members[k])->rkey;
    int err = ibv_post_send(c->flush_qps[k].qp, wr, &bad);
    if (err) return err;
  }
  return 0;
}

ncclResult_t ib_iflush(struct transport_comm *xc, int n, void **data, int *sizes, void **mhandles,
                       void **request) {
  struct ib_comm *c = (struct ib_comm *)xc;
  *request = NULL;
  if (c->is_failed || ib_fatal_guard(c)) return transport_result(c->fail_err);
  if (!c->has_flush) return ncclSuccess; /* host memory: nothing to flush */
  int last = -1;
  for (int i = 0; i < n; i++)
    if (sizes && sizes[i] > 0) last = i;
  if (last < 0) return ncclSuccess;
  struct ib_mh *mh = mhandles[last];
  int slot = (int)(c->flush_seq % IB_SLOTS);
  if (c->flush_reqs[slot]) {
    WARN("iflush on the connection with %s: too many flushes in flight", xc->peer.desc);
    return ncclInternalError;
  }
  struct ib_req *r = ib_req_get(c);
  if (!r) return ncclInternalError;
  struct ibv_sge sge = {(uintptr_t)c->flush_buf, 1, c->flush_mr->lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = WR_ID(WR_FLUSH, slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = (uintptr_t)data[last];
  wr.wr.rdma.rkey = mh->mr->rkey;
  r->is_gpu = mh->is_gpu;
  if (ib_fo_moved(c)) { /* the buffer's key on the port the connection moved to */
    if (ib_fo_key(c, r, 0, (uintptr_t)data[last], (size_t)sizes[last])) {
      ib_req_put(c, r);
      return transport_result(c->fail_err);
    }
    wr.wr.rdma.rkey = r->alt[0]->mr->rkey;
  }
  int err = ibv_post_send(c->flush_qp.qp, &wr, &bad);
  if (!err) err = flush_others(c, &wr, mh, &sge);
  if (err) {
    ib_req_put(c, r);
    return transport_result(
      ib_fail(c, err, false, "posting a flush read failed: %s", strerror(err)));
  }
  r->n = 0;
  r->is_gpu = mh->is_gpu; /* the read's source */
  r->is_flush = true;
  r->seq = c->flush_seq;
  c->flush_pending[slot] = (uint8_t)c->ndevs; /* done when every port's read is */
  c->flush_reqs[slot] = r;
  c->flush_seq++;
  *request = r;
  return ncclSuccess;
}
