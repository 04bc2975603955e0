/* SPDX-License-Identifier: Apache-2.0 */
/* Completions and test(). Work the fabric completed completes, whatever
 * else is known about the peer by then; a failure is judged without
 * holding the caller (ib_watch.c). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/events.h"
#include "common/log.h"
#include "transport/ib/data/ib_comm.h"

/* The memory of the local buffer a failed work request used, as its
 * registration said: the sends of a slot, the receive of a slot, or the
 * buffer a flush reads. */
static enum wc_memory wc_memory(const struct ib_comm *c, int kind, int slot) {
  const struct ib_req *r = NULL;
  if (slot < 0 || slot >= IB_SLOTS) return WC_MEM_UNKNOWN;
  if (kind == WR_DATA) {
    for (int i = 0; i < c->slots[slot].n; i++)
      if (c->slots[slot].reqs[i] && c->slots[slot].reqs[i]->is_gpu) return WC_MEM_GPU;
    return c->slots[slot].n ? WC_MEM_HOST : WC_MEM_UNKNOWN;
  }
  if (kind == WR_RECV) r = c->slot_reqs[slot];
  if (kind == WR_FLUSH) r = c->flush_reqs[slot];
  return !r ? WC_MEM_UNKNOWN : r->is_gpu ? WC_MEM_GPU : WC_MEM_HOST;
}

/* The largest message of a slot's writes, bytes. */
static uint32_t slot_max_bytes(const struct ib_slot *sl) {
  uint32_t m = 0;
  for (int i = 0; i < sl->n; i++)
    if (sl->reqs[i] && (uint32_t)sl->reqs[i]->sizes[0] > m) m = (uint32_t)sl->reqs[i]->sizes[0];
  return m;
}

/* d: the port whose completion queue reported it (striped: any of them). */
static int wc_error(struct ib_comm *c, const struct ibv_wc *wc, int kind, struct ib_dev *d) {
  /* An error completes unsignaled WRs too: every WR carries its kind. The
   * ones flushed after the first error are that error's consequence. */
  static const char *const what[] = {"a work request", "the RDMA write of a message", "a receive",
                                     "a clear-to-send write", "a flush read"};
  if (c->verdict == IB_VERDICT_WC || ib_fo_moving(c)) return 0;
  char diag[2400];
  int slot = (int)(uint32_t)wc->wr_id;
  struct ib_wc_context cx = {
    .what = what[kind >= WR_DATA && kind <= WR_FLUSH ? kind : 0],
    .is_first = !c->has_success,
    .mem = wc_memory(c, kind, slot),
    .first_error = c->first_error,
    .is_port_down = wc->status != IBV_WC_WR_FLUSH_ERR && ib_dev_check_port(d),
    .write_bytes =
      kind == WR_DATA && slot >= 0 && slot < IB_SLOTS ? slot_max_bytes(&c->slots[slot]) : 0,
    .max_ok_bytes = c->max_ok_bytes};
  int down_s, back_s;
  if (wc->status == IBV_WC_RETRY_EXC_ERR &&
      liveness_peer_port_lately(c->base.live, clock_mono_ns(), &down_s, &back_s)) {
    cx.is_peer_down = down_s >= 0, cx.is_peer_back = back_s >= 0;
    cx.peer_port_s = down_s >= 0 ? down_s : back_s;
  }
  if (c->stripe > 1 && !c->fo.failed) c->fo.failed = d; /* where a move must not go */
  char advice[300];
  ib_fo_advice(c, advice, sizeof(advice));
  cx.advice = advice;
  ib_diag_wc(d, &c->peer_hello, wc, &cx, diag, sizeof(diag));
  if (!c->first_error[0]) snprintf(c->first_error, sizeof(c->first_error), "%s", diag);
  /* A peer process that died took its registrations along: on a real
   * kernel its last writes fail with REM_ACCESS_ERR, which names an rkey
   * problem that is not there. Its closed control connection says why,
   * when it closes: later calls look (ib_settle). */
  if (wc->status != IBV_WC_WR_FLUSH_ERR && ib_fo_on_error(c, diag, cx.is_port_down))
    return c->is_failed ? c->fail_err : 0; /* the connection moves to another port */
  return ib_wc_verdict(c, diag, cx.is_port_down);
}

static int recv_done(struct ib_comm *c, const struct ibv_wc *wc, int slot) {
  struct ib_req *r = c->slot_reqs[slot];
  uint32_t imm = ntohl(wc->imm_data);
  if (!r || !(wc->wc_flags & IBV_WC_WITH_IMM))
    return ib_fail(c, EPROTO, true,
                   "a completion for receive slot %d that has no receive "
                   "posted: the peer is out of step",
                   slot);
  if (imm == IB_IMM_ABORT) /* its reason may trail on the control socket: later calls read it */
    return ib_wc_verdict(c, "the sending side ended the connection", false);
  if (r->n == 1) {
    r->sizes[0] = (int)imm;
  } else if ((int)imm != r->n) {
    return ib_fail(c, EPROTO, true,
                   "message %u: the sender filled %u of %d grouped "
                   "receives",
                   r->seq, imm, r->n);
  }
  for (int i = 0; i < r->n; i++) {
    uint32_t sz = r->n == 1 ? imm : c->cr[slot * IB_MAX_RECVS + i];
    uint32_t room = ib_fifo_at(c, slot, i)->size;
    if (sz > room)
      return ib_fail(c, EPROTO, true,
                     "message %u: the sender reports %u bytes for a %u-byte "
                     "receive",
                     r->seq, sz, room);
    r->sizes[i] = (int)sz;
  }
  if (c->recv_pending[slot] > 1) { /* a split message: the other queue pairs' parts come next */
    c->recv_pending[slot]--;
    return 0;
  }
  c->recv_pending[slot] = 0;
  r->is_done = true;
  c->slot_reqs[slot] = NULL;
  return 0;
}

static int handle_wc(struct ib_comm *c, const struct ibv_wc *wc, struct ib_dev *d) {
  int kind = (int)(wc->wr_id >> 32), slot = (int)(uint32_t)wc->wr_id;
  if (wc->status != IBV_WC_SUCCESS) return wc_error(c, wc, kind, d);
  c->has_success = true;
  if (slot < 0 || slot >= IB_SLOTS) return 0;
  switch (kind) {
  case WR_DATA: {
    struct ib_slot *sl = &c->slots[slot];
    uint32_t bytes = slot_max_bytes(sl); /* what a path-MTU black hole would show (ib_diag_wc.c) */
    if (bytes > c->max_ok_bytes) c->max_ok_bytes = bytes;
    if (--sl->pending > 0) return 0; /* a split message: the other queue pairs' parts */
    for (int i = 0; i < sl->n; i++)
      if (sl->reqs[i]) sl->reqs[i]->is_done = true;
    sl->is_posted = false;
    sl->n = 0;
    return 0;
  }
  case WR_RECV: return recv_done(c, wc, slot);
  case WR_FLUSH:
    if (c->flush_pending[slot] > 1) { /* striped: another port's read comes */
      c->flush_pending[slot]--;
      return 0;
    }
    c->flush_pending[slot] = 0;
    if (c->flush_reqs[slot]) c->flush_reqs[slot]->is_done = true;
    c->flush_reqs[slot] = NULL;
    return 0;
  default: return 0;
  }
}

/* The completions of one batch; the rest of the queue is drained by
 * poll_cq. Out of line: most test() calls find none. */
static __attribute__((noinline)) int handle_batch(struct ib_comm *c, const struct ibv_wc *wc, int n,
                                                  struct ib_dev *d) {
  for (int i = 0; i < n; i++)
    if (handle_wc(c, &wc[i], d)) return c->fail_err;
  return 0;
}

static inline __attribute__((always_inline)) int poll_cq(struct ib_comm *c, struct ibv_cq *cq,
                                                         struct ib_dev *d, int *found) {
  struct ibv_wc wc[16];
  for (;;) {
    int n = ibv_poll_cq(cq, 16, wc);
    if (__builtin_expect(n == 0, 1)) return 0;
    if (n < 0) return ib_fail(c, EIO, true, "polling the completion queue on %s failed", d->label);
    if (found) *found += n;
    if (handle_batch(c, wc, n, d)) return c->fail_err;
    if (n < 16) return 0;
  }
}

/* Striped: each port's completion queue (a message is done when the
 * parts on every port completed: the slot's pending counts). A fail-over
 * message that comes meanwhile waits until the queue is drained
 * (is_polling). */
static inline int poll_now(struct ib_comm *c, int *found) {
  if (__builtin_expect(ib_fo_replay_pending(c), 0) && ib_fo_replay(c)) return c->fail_err;
  bool was = c->is_polling;
  c->is_polling = true;
  int err = poll_cq(c, c->cq, c->dev, found);
  for (int k = 1; !err && k < c->ndevs; k++) err = poll_cq(c, c->cqs[k], c->devs[k], found);
  c->is_polling = was;
  return err;
}

int ib_poll(struct ib_comm *c, int *found) { return poll_now(c, found); }

/* The common idle call, counted here instead of a call into ib_idle, which
 * would only count it: nothing under way (no move, no message going out,
 * no failure to judge) and not the IB_IDLE_EVERY-th call. */
static inline bool idle_is_quiet(struct ib_comm *c) {
  if (c->is_failed || ib_fo_needs_step(c) || c->verdict != IB_VERDICT_NONE) return false;
  if ((c->idle_calls + 1) % IB_IDLE_EVERY == 0) return false;
  c->idle_calls++;
  return true;
}

/* A request whose completion came is done, even on a connection that
 * failed since: the data is there. */
ncclResult_t ib_test(void *request, int *done, int *sizes) {
  struct ib_req *r = request;
  struct ib_comm *c = (struct ib_comm *)r->base.comm;
  *done = 0;
  (void)ib_fatal_guard(c); /* a request the fabric completed still completes */
  if (!r->is_done && !c->is_failed) {
    int found = 0;
    int64_t now = 0;
    if (!poll_now(c, &found) && !r->is_done && (!found || c->verdict) && !idle_is_quiet(c))
      ib_idle(c, r, &now);
  }
  if (!r->is_done) return c->is_failed ? transport_result(c->fail_err) : ncclSuccess;
  long long bytes = 0;
  for (int i = 0; i < r->n; i++) {
    if (sizes) sizes[i] = r->sizes[i];
    bytes += r->sizes[i];
  }
  ev_count(r->is_send ? C_BYTES_SENT : C_BYTES_RECV, bytes);
  ib_fo_req_done(c, r);
  c->has_warned_stall = false; /* it moves again */
  ib_req_put(c, r);
  *done = 1;
  return ncclSuccess;
}
