/* SPDX-License-Identifier: Apache-2.0 */
/* isend: wait for the receiver's clear-to-send entry, match it, post. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "transport/ib/data/ib_comm.h"
#include "transport/ib/data/ib_prof.h"
#include "transport/report.h"

/* The entries of a slot are ready when every one carries this sequence. */
static uint32_t load_idx(const struct ib_cts *e) {
  return __atomic_load_n(&e->idx, __ATOMIC_ACQUIRE);
}

enum slot_state { SLOT_WAITING, SLOT_READY, SLOT_CORRUPT };

static enum slot_state slot_state(const struct ib_comm *c, int slot, uint32_t seq, int *n) {
  uint32_t want = seq + 1;
  const struct ib_cts *e0 = ib_fifo_at(c, slot, 0);
  if (load_idx(e0) != want) return SLOT_WAITING;
  int k = (int)e0->nreqs;
  if (k < 1 || k > IB_MAX_RECVS) return SLOT_CORRUPT;
  for (int i = 1; i < k; i++)
    if (load_idx(ib_fifo_at(c, slot, i)) != want) return SLOT_WAITING;
  *n = k;
  return SLOT_READY;
}

/* The index of the free entry of the slot posted with this tag, or -1:
 * none (NCCL's rule, for a single receive too: the send is not posted and
 * NCCL calls again, as when a shared connection's other sender is a step
 * ahead). */
static int match_entry(const struct ib_comm *c, int slot, const struct ib_slot *sl, int tag) {
  for (int i = 0; i < sl->n; i++)
    if (!sl->is_used[i] && ib_fifo_at(c, slot, i)->tag == tag) return i;
  return -1;
}

/* No request this time (NCCL calls again); every IB_IDLE_EVERY such calls
 * look at the peer and at how long the send has waited, and for what. */
static ncclResult_t not_now(struct ib_comm *c, uint32_t seq, size_t size, int tag,
                            bool is_tag_unmatched) {
  c->is_tag_unmatched = is_tag_unmatched;
  int64_t now = 0;
  int err = ib_idle(c, NULL, &now);
  if (!err && now) ib_check_cts_wait(c, now, seq, size, tag);
  return transport_result(err);
}

ncclResult_t ib_isend(struct transport_comm *xc, void *data, size_t size, int tag, void *mhandle,
                      void **request) {
  struct ib_comm *c = (struct ib_comm *)xc;
  struct ib_mh *mh = mhandle;
  *request = NULL;
  if (c->is_failed || ib_fatal_guard(c)) return transport_result(c->fail_err);
  if (size && (!mh || mh->obj != OBJ_MR || (uintptr_t)data < mh->addr ||
               (uintptr_t)data + size > mh->addr + mh->len)) {
    WARN("isend of %zu bytes to %s: buffer %p lies outside its registration (or the registration "
         "is not live)",
         size, xc->peer.desc, data);
    return ncclInternalError;
  }
  uint32_t seq = c->send_seq;
  int slot = (int)(seq % IB_SLOTS), n = 0;
  enum slot_state ready =
    c->verdict || ib_fo_moving(c) ? SLOT_WAITING : slot_state(c, slot, seq, &n);
  if (ready == SLOT_CORRUPT)
    return transport_result(
      ib_fail(c, EPROTO, true,
              "clear-to-send slot %d announces %u receives (1 to %d allowed): the FIFO is "
              "corrupt or the peer is not a compatible libnccl-net-diag",
              slot, ib_fifo_at(c, slot, 0)->nreqs, IB_MAX_RECVS));
  /* A receiver that died must not leave NCCL calling for an entry that
   * never comes: not_now looks at it. */
  if (ready == SLOT_WAITING) return not_now(c, seq, size, tag, false);
  struct ib_slot *sl = &c->slots[slot];
  if (sl->is_posted) { /* its previous use has not completed yet */
    ib_poll(c, NULL);
    if (sl->is_posted) return transport_result(c->is_failed ? c->fail_err : 0);
  }
  if (!sl->n) memset(sl, 0, sizeof(*sl)), sl->n = n;
  int i = match_entry(c, slot, sl, tag);
  if (i < 0) return not_now(c, seq, size, tag, true);
  c->cts_wait_since = 0;
  uint32_t room = ib_fifo_at(c, slot, i)->size;
  if (size > room) {
    char cause[1600];
    report_size_mismatch(c->settings_diff, c->base.peer.host, cause, sizeof(cause));
    return transport_result(ib_fail(c, EMSGSIZE, true,
                                    "message %u to %s is %zu bytes but the posted receive holds "
                                    "%u bytes: %s",
                                    seq, c->base.peer.desc, size, room, cause));
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
  sl->mhs[i] = mh;
  sl->matched++;
  *request = r;
  if (sl->matched < sl->n) return ncclSuccess; /* the rest of the group comes next */
  c->send_seq++;
  return transport_result(ib_post_slot(c, seq));
}

/* The part of a message a queue pair carries when a message is split over
 * parts of them: 128-byte multiples, so NCCL's LL and LL128 protocols
 * still see whole lines (NCCL's rule). */
static void part_of(uint32_t size, int part, int parts, uint32_t *off, uint32_t *len) {
  uint32_t chunk = parts == 1 ? size : (((size + parts - 1) / parts + 127) / 128) * 128;
  uint64_t start = (uint64_t)chunk * (uint64_t)part;
  *off = start >= size ? size : (uint32_t)start;
  *len = size - *off < chunk ? size - *off : chunk;
}

/* One queue pair's share of a slot, ending in the one signaled
 * write-with-immediate that completes it on the receiver (every post on a
 * queue pair ends signaled, so its send queue always drains). A single
 * receive's data rides in the write-with-immediate itself; a grouped one
 * writes the sizes there, and with adaptive routing a large message is
 * written before a 0-byte immediate (the fabric may reorder a write's
 * packets, not two writes). */
static int post_part(struct ib_comm *c, int slot, int j, int part, int parts) {
  struct ib_slot *sl = &c->slots[slot];
  struct ib_qp *q = &c->qps[j];
  int ld = j % c->ndevs, rd = j % c->nrdevs; /* this side's port and the peer's */
  struct ibv_sge sge[IB_MAX_RECVS + 1];
  struct ibv_send_wr wr[IB_MAX_RECVS + 1], *bad = NULL;
  memset(wr, 0, sizeof(wr[0]) * (size_t)(sl->n + 1)); /* what this slot uses, at most */
  uint32_t size0 = (uint32_t)sl->reqs[0]->sizes[0];
  bool is_fold = sl->n == 1 && !(c->is_ar && size0 > c->ar_threshold);
  int nwr = 0;
  for (int i = 0; i < sl->n; i++) {
    uint32_t off, len;
    part_of((uint32_t)sl->reqs[i]->sizes[0], part, parts, &off, &len);
    if (!len) continue;
    struct ib_cts *e = ib_fifo_at(c, slot, i);
    uint32_t lkey = ld && sl->mhs[i] ? ib_mh_mr(sl->mhs[i], c->members[ld])->lkey : sl->lkeys[i];
    sge[nwr] = (struct ibv_sge){(uintptr_t)sl->bufs[i] + off, len, lkey};
    wr[nwr].sg_list = &sge[nwr];
    wr[nwr].num_sge = 1;
    wr[nwr].opcode = IBV_WR_RDMA_WRITE;
    wr[nwr].wr_id = WR_ID(WR_DATA, slot); /* unsignaled: seen only if it fails */
    wr[nwr].wr.rdma.remote_addr = e->addr + off;
    wr[nwr].wr.rdma.rkey = rd ? ib_cts_keys_of(e)->rkeys[rd] : e->rkey;
    wr[nwr].next = &wr[nwr + 1];
    nwr++;
  }
  struct ibv_send_wr *last = &wr[nwr];
  if (is_fold && nwr) last = &wr[--nwr]; /* the data write carries the immediate */
  last->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  last->send_flags = IBV_SEND_SIGNALED;
  last->wr_id = WR_ID(WR_DATA, slot);
  last->next = NULL;
  if (sl->n == 1) {
    last->imm_data = htonl(size0);
  } else {
    sge[nwr] = (struct ibv_sge){(uintptr_t)&c->sizes_out[slot * IB_MAX_RECVS],
                                (uint32_t)((size_t)sl->n * sizeof(uint32_t)),
                                (ld ? c->sizes_mrs[ld] : c->sizes_mr)->lkey};
    last->sg_list = &sge[nwr];
    last->num_sge = 1;
    last->wr.rdma.remote_addr = c->peer_cr_addr + (uint64_t)slot * IB_MAX_RECVS * sizeof(uint32_t);
    last->wr.rdma.rkey = rd ? c->peer_cr_rkeys[rd] : c->peer_cr_rkey;
    last->imm_data = htonl((uint32_t)sl->n);
  }
  if (part == 0) ib_prof_send(c, q, sl, wr); /* NCCL profiler events: one per request */
  return ibv_post_send(q->qp, wr, &bad);
}

/* Every send of the slot is there: its writes go on the queue pair of the
 * message, or on all of them when messages are split. After a move to
 * another port, the messages sent again there go first (ib_failover.c). */
int ib_post_slot(struct ib_comm *c, uint32_t seq) {
  struct ib_slot *sl = &c->slots[seq % IB_SLOTS];
  if (ib_fo_replay_pending(c)) return ib_fo_post_slot(c, sl);
  return ib_post_slot_now(c, seq);
}

int ib_post_slot_now(struct ib_comm *c, uint32_t seq) {
  int slot = (int)(seq % IB_SLOTS);
  struct ib_slot *sl = &c->slots[slot];
  if (ib_fo_moved(c) && ib_fo_send_keys(c, sl)) return c->fail_err;
  for (int i = 0; i < sl->n; i++)
    c->sizes_out[slot * IB_MAX_RECVS + i] = (uint32_t)sl->reqs[i]->sizes[0];
  int first = ib_msg_first(c, seq), parts = ib_msg_qps(c);
  sl->is_posted = true;
  sl->pending = parts;
  for (int k = 0; k < parts; k++) {
    struct ib_qp *q = &c->qps[first + k];
    int err = post_part(c, slot, first + k, k, parts);
    if (err)
      return ib_fail(c, err, true, "posting message %u on qp 0x%x failed: %s", seq, q->qp->qp_num,
                     strerror(err));
  }
  return 0;
}
