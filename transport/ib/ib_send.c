/* SPDX-License-Identifier: Apache-2.0 */
/* isend: wait for the receiver's clear-to-send entry, match it, post. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "transport/ib/ib_comm.h"
#include "transport/ib/ib_prof.h"
#include "transport/report.h"

/* The entries of a slot are ready when every one carries this sequence. */
static uint32_t load_idx(const struct ib_cts *e) {
  return __atomic_load_n(&e->idx, __ATOMIC_ACQUIRE);
}

enum slot_state { SLOT_WAITING, SLOT_READY, SLOT_CORRUPT };

static enum slot_state slot_state(const struct ib_cts *e, uint32_t seq, int *n) {
  uint32_t want = seq + 1;
  if (load_idx(&e[0]) != want) return SLOT_WAITING;
  int k = (int)e[0].nreqs;
  if (k < 1 || k > IB_MAX_RECVS) return SLOT_CORRUPT;
  for (int i = 1; i < k; i++)
    if (load_idx(&e[i]) != want) return SLOT_WAITING;
  *n = k;
  return SLOT_READY;
}

/* The index of the entry a send with this tag fills, or -1: none. */
static int match_entry(struct ib_comm *c, struct ib_slot *sl, const struct ib_cts *e, int tag) {
  for (int i = 0; i < sl->n; i++)
    if (!sl->is_used[i] && e[i].tag == tag) return i;
  if (sl->n == 1 && !sl->is_used[0]) {
    /* NCCL pairs n == 1 receives by order; a differing tag is odd, not fatal. */
    if (!c->has_warned_tag)
      WARN("send connection with %s: a send with tag %d meets a receive posted with tag %d; the "
           "data is delivered in order, but the ranks' send/receive calls may not pair up",
           c->base.peer.desc, tag, e[0].tag);
    c->has_warned_tag = true;
    return 0;
  }
  return -1;
}

ncclResult_t ib_isend(struct transport_comm *xc, void *data, size_t size, int tag, void *mhandle,
                      void **request) {
  struct ib_comm *c = (struct ib_comm *)xc;
  struct ib_mh *mh = mhandle;
  *request = NULL;
  if (c->is_failed) return transport_result(c->fail_err);
  if (size && (!mh || mh->obj != OBJ_MR || (uintptr_t)data < mh->addr ||
               (uintptr_t)data + size > mh->addr + mh->len)) {
    WARN("isend of %zu bytes to %s: buffer %p lies outside its registration (or the registration "
         "is not live)",
         size, xc->peer.desc, data);
    return ncclInternalError;
  }
  uint32_t seq = c->send_seq;
  int slot = (int)(seq % IB_SLOTS), n = 0;
  struct ib_cts *e = &c->fifo[slot * IB_MAX_RECVS];
  enum slot_state ready = slot_state(e, seq, &n);
  if (ready == SLOT_CORRUPT)
    return transport_result(
      ib_fail(c, EPROTO, true,
              "clear-to-send slot %d announces %u receives (1 to %d allowed): the FIFO is "
              "corrupt or the peer is not a compatible libnccl-net-diag",
              slot, e[0].nreqs, IB_MAX_RECVS));
  if (ready == SLOT_WAITING) {
    /* NCCL calls again; meanwhile a receiver that died must not leave it
     * waiting for an entry that never comes. */
    if (!ib_poll(c) && !ib_check_peer(c)) ib_check_cts_wait(c, seq, size, tag);
    return transport_result(c->is_failed ? c->fail_err : 0);
  }
  c->cts_wait_since = 0;
  struct ib_slot *sl = &c->slots[slot];
  if (sl->is_posted) { /* its previous use has not completed yet */
    ib_poll(c);
    if (sl->is_posted) return transport_result(c->is_failed ? c->fail_err : 0);
  }
  if (!sl->n) memset(sl, 0, sizeof(*sl)), sl->n = n;
  int i = match_entry(c, sl, e, tag);
  if (i < 0)
    return transport_result(
      ib_fail(c, ENOMSG, true,
              "a send with tag %d matches none of the %d receives grouped in message %u: the "
              "ranks' send and receive calls do not pair up",
              tag, n, seq));
  if (size > e[i].size) {
    char cause[1600];
    report_size_mismatch(c->settings_diff, c->base.peer.host, cause, sizeof(cause));
    return transport_result(ib_fail(c, EMSGSIZE, true,
                                    "message %u to %s is %zu bytes but the posted receive holds "
                                    "%u bytes: %s",
                                    seq, c->base.peer.desc, size, e[i].size, cause));
  }
  struct ib_req *r = ib_req_get(c);
  if (!r) {
    WARN("isend to %s: more than %d requests in flight on one connection (an API misuse)",
         xc->peer.desc, IB_SEND_REQS);
    return ncclInternalError;
  }
  r->is_send = true;
  r->seq = seq;
  r->n = 1;
  r->bytes = size;
  r->tag = tag;
  r->sizes[0] = (int)size;
  r->is_gpu = mh && mh->is_gpu;
  sl->is_used[i] = true;
  sl->reqs[i] = r;
  sl->bufs[i] = data;
  sl->lkeys[i] = mh ? mh->mr->lkey : 0;
  sl->matched++;
  *request = r;
  if (sl->matched < sl->n) return ncclSuccess; /* the rest of the group comes next */
  c->send_seq++;
  return transport_result(ib_post_slot(c, seq));
}

/* Posts the data writes of every send of the slot, then the one signaled
 * write-with-immediate that completes them all on the receiver. */
int ib_post_slot(struct ib_comm *c, uint32_t seq) {
  int slot = (int)(seq % IB_SLOTS);
  struct ib_slot *sl = &c->slots[slot];
  const struct ib_cts *e = &c->fifo[slot * IB_MAX_RECVS];
  struct ib_qp *q = &c->qps[seq % (uint32_t)c->nqps];
  struct ibv_sge sge[IB_MAX_RECVS + 1];
  struct ibv_send_wr wr[IB_MAX_RECVS + 1], *bad = NULL;
  int nwr = 0;
  memset(wr, 0, sizeof(wr));
  for (int i = 0; i < sl->n; i++) {
    uint32_t sz = (uint32_t)sl->reqs[i]->sizes[0];
    c->sizes_out[slot * IB_MAX_RECVS + i] = sz;
    if (!sz) continue;
    sge[nwr] = (struct ibv_sge){(uintptr_t)sl->bufs[i], sz, sl->lkeys[i]};
    wr[nwr].sg_list = &sge[nwr];
    wr[nwr].num_sge = 1;
    wr[nwr].opcode = IBV_WR_RDMA_WRITE;
    wr[nwr].wr_id = WR_ID(WR_DATA, slot); /* unsignaled, but an error completes it */
    wr[nwr].wr.rdma.remote_addr = e[i].addr;
    wr[nwr].wr.rdma.rkey = e[i].rkey;
    wr[nwr].wr_id = WR_ID(WR_DATA, slot); /* unsignaled: seen only if it fails */
    wr[nwr].next = &wr[nwr + 1];
    nwr++;
  }
  struct ibv_send_wr *last = &wr[nwr];
  last->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  last->send_flags = IBV_SEND_SIGNALED;
  last->wr_id = WR_ID(WR_DATA, slot);
  if (sl->n == 1) {
    last->imm_data = htonl((uint32_t)sl->reqs[0]->sizes[0]);
  } else {
    sge[nwr] = (struct ibv_sge){(uintptr_t)&c->sizes_out[slot * IB_MAX_RECVS],
                                (uint32_t)((size_t)sl->n * sizeof(uint32_t)), c->sizes_mr->lkey};
    last->sg_list = &sge[nwr];
    last->num_sge = 1;
    last->wr.rdma.remote_addr = c->peer_cr_addr + (uint64_t)slot * IB_MAX_RECVS * sizeof(uint32_t);
    last->wr.rdma.rkey = c->peer_cr_rkey;
    last->imm_data = htonl((uint32_t)sl->n);
  }
  last->next = NULL;
  sl->is_posted = true;
  ib_prof_send(c, q, sl, wr); /* NCCL profiler events */
  int err = ibv_post_send(q->qp, wr, &bad);
  if (err)
    return ib_fail(c, err, true, "posting message %u on qp 0x%x failed: %s", seq, q->qp->qp_num,
                   strerror(err));
  return 0;
}
