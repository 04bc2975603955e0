/* SPDX-License-Identifier: Apache-2.0 */
/* Completions and test(). Besides the completion queue, a connection with
 * requests waiting looks at its control socket every CTRL_CHECK_NS: a peer
 * whose process died closes it, a peer that gave up writes its reason
 * there, and either is known long before RDMA retries would time out. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/events.h"
#include "common/knobs.h"
#include "common/log.h"
#include "transport/abort.h"
#include "transport/frame.h"
#include "transport/ib/ib_comm.h"
#include "transport/liveness.h"
#include "transport/sock.h"

#define CTRL_CHECK_NS 100000000LL

/* The peer's abort notice, if it sent one: the comm fails with its reason. */
static int peer_gave_up(struct ib_comm *c) {
  char reason[MSG_ABORT_MAX + 1];
  if (transport_read_abort(c->ctrl_fd, reason, sizeof(reason), 200))
    return ib_fail(c, ECONNRESET, false, "the %s side ended the connection: %s",
                   c->is_send ? "receiving" : "sending", reason);
  return 0;
}

/* The wait is paid only on an error completion, which on a real fabric
 * took seconds of retries to come. */
#define PEER_CLOSE_WAIT_MS 2000

static bool ctrl_closed_within(int fd, int wait_ms) {
  int64_t end = now_ns() + (int64_t)wait_ms * 1000000;
  for (;;) {
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return true;
    if (n > 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return false;
    int64_t left_ms = (end - now_ns()) / 1000000;
    if (left_ms <= 0) return false;
    struct pollfd p = {fd, POLLIN, 0};
    (void)poll(&p, 1, (int)(left_ms < 50 ? left_ms : 50));
  }
}

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

static int wc_error(struct ib_comm *c, const struct ibv_wc *wc, int kind) {
  /* An error completes unsignaled WRs too: every WR carries its kind. */
  static const char *const what[] = {"a work request", "the RDMA write of a message", "a receive",
                                     "a clear-to-send write", "a flush read"};
  if (peer_gave_up(c)) return c->fail_err;
  char diag[2400];
  struct ib_wc_context cx = {what[kind >= WR_DATA && kind <= WR_FLUSH ? kind : 0], !c->has_success,
                             wc_memory(c, kind, (int)(uint32_t)wc->wr_id), c->first_error};
  ib_diag_wc(c->dev, &c->peer_hello, wc, &cx, diag, sizeof(diag));
  if (!c->first_error[0]) snprintf(c->first_error, sizeof(c->first_error), "%s", diag);
  /* A peer process that died took its registrations along: on a real
   * kernel its last writes fail with REM_ACCESS_ERR, which names an rkey
   * problem that is not there. Its closed control connection says why. A
   * dying process tears down its memory before its sockets, so the close
   * can trail the completion error by seconds on a loaded host. */
  if (ctrl_closed_within(c->ctrl_fd, PEER_CLOSE_WAIT_MS))
    return ib_fail(c, ECONNRESET, true,
                   "the peer's control connection closed while requests were in flight: its "
                   "process died or it closed this connection (here %s)",
                   diag);
  return ib_fail(c, ECONNRESET, true, "%s", diag);
}

static int recv_done(struct ib_comm *c, const struct ibv_wc *wc, int slot) {
  struct ib_req *r = c->slot_reqs[slot];
  uint32_t imm = ntohl(wc->imm_data);
  if (!r || !(wc->wc_flags & IBV_WC_WITH_IMM))
    return ib_fail(c, EPROTO, true,
                   "a completion for receive slot %d that has no receive "
                   "posted: the peer is out of step",
                   slot);
  if (imm == IB_IMM_ABORT) {
    if (peer_gave_up(c)) return c->fail_err;
    return ib_fail(c, ECONNRESET, false, "the sending side ended the connection");
  }
  const struct ib_cts *e = &c->shadow[slot * IB_MAX_RECVS];
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
    if (sz > e[i].size)
      return ib_fail(c, EPROTO, true,
                     "message %u: the sender reports %u bytes for a %u-byte "
                     "receive",
                     r->seq, sz, e[i].size);
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

static int handle_wc(struct ib_comm *c, const struct ibv_wc *wc) {
  int kind = (int)(wc->wr_id >> 32), slot = (int)(uint32_t)wc->wr_id;
  if (wc->status != IBV_WC_SUCCESS) return wc_error(c, wc, kind);
  c->has_success = true;
  if (slot < 0 || slot >= IB_SLOTS) return 0;
  switch (kind) {
  case WR_DATA: {
    struct ib_slot *sl = &c->slots[slot];
    if (--sl->pending > 0) return 0; /* a split message: the other queue pairs' parts */
    for (int i = 0; i < sl->n; i++)
      if (sl->reqs[i]) sl->reqs[i]->is_done = true;
    sl->is_posted = false;
    sl->n = 0;
    return 0;
  }
  case WR_RECV: return recv_done(c, wc, slot);
  case WR_FLUSH:
    if (c->flush_reqs[slot]) c->flush_reqs[slot]->is_done = true;
    c->flush_reqs[slot] = NULL;
    return 0;
  default: return 0;
  }
}

int ib_poll(struct ib_comm *c) {
  struct ibv_wc wc[16];
  for (;;) {
    int n = ibv_poll_cq(c->cq, 16, wc);
    if (n < 0) return ib_fail(c, EIO, true, "polling the completion queue failed");
    for (int i = 0; i < n; i++)
      if (handle_wc(c, &wc[i])) return c->fail_err;
    if (n < 16) return 0;
  }
}

/* The peer's control socket: closed means its process is gone (or it closed
 * this connection); data means an abort notice. */
int ib_check_peer(struct ib_comm *c) {
  int64_t now = now_ns();
  if (now - c->last_ctrl_check < CTRL_CHECK_NS) return 0;
  c->last_ctrl_check = now;
  char b;
  ssize_t n = recv(c->ctrl_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) {
    if (peer_gave_up(c)) return c->fail_err;
  } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    return ib_fail(c, ECONNRESET, false,
                   "the peer's control connection %s while requests were in flight: its process "
                   "died or it closed this connection",
                   n == 0 ? "closed" : strerror(errno));
  }
  char why[1600];
  if (!liveness_peer_lost(c->base.live, why, sizeof(why))) return 0;
  /* Its process stopped answering: nothing will complete. The notice waits
   * on the control socket for a peer that was only stopped, in its words. */
  ib_fail(c, ECONNRESET, false, "%s", why);
  liveness_peer_notice(c->base.live, why, sizeof(why));
  transport_send_abort(c->ctrl_fd, 0, why);
  return c->fail_err;
}

/* "send of message 17 (1048576 bytes, tag 3)" */
static void describe(const struct ib_req *r, char *buf, size_t cap) {
  if (r->is_flush)
    snprintf(buf, cap, "flush %u (an RDMA read that makes received data visible to the GPU)",
             r->seq);
  else if (r->is_send)
    snprintf(buf, cap, "send of message %u (%llu bytes, tag %d), posted", r->seq,
             (unsigned long long)r->bytes, r->tag);
  else
    snprintf(buf, cap, "receive of message %u (up to %llu bytes in %d buffer%s, tag %d)", r->seq,
             (unsigned long long)r->bytes, r->n, r->n == 1 ? "" : "s", r->tag);
}

/* The end of every no-progress warning: what the peer's liveness says,
 * and what that means for a request waiting on the peer (is_posted: its
 * data is on the wire, so the peer has reached the matching operation). */
static void stall_advice(const struct ib_comm *c, bool is_posted, char *buf, size_t cap) {
  char live[200];
  enum liveness_view v = liveness_peer_state(c->base.live, live, sizeof(live));
  if (is_posted && v != LIVENESS_SILENT && v != LIVENESS_LOST)
    snprintf(buf, cap,
             "The receiver posted its receive but the write is not acknowledged: the fabric drops "
             "or delays its packets (the queue pair gives up after NCCL_IB_TIMEOUT x "
             "NCCL_IB_RETRY_CNT)%s%s",
             live[0] ? "; the peer's process " : "", live);
  else liveness_stall_advice(c->base.live, buf, cap);
}

void ib_check_cts_wait(struct ib_comm *c, uint32_t seq, size_t size, int tag) {
  int64_t now = now_ns(), limit = knob_int(K_DIAG_STALL_WARN_SEC) * 1000000000LL;
  if (!c->cts_wait_since || c->cts_wait_seq != seq) {
    c->cts_wait_seq = seq;
    c->cts_wait_since = now;
    c->has_warned_cts = false;
    return;
  }
  if (!limit || c->has_warned_cts || now - c->cts_wait_since < limit) return;
  c->has_warned_cts = true;
  char advice[400];
  stall_advice(c, false, advice, sizeof(advice));
  WARN("send of message %u (%zu bytes, tag %d) to %s on %s has waited %lld s for the receiver to "
       "post its receive. %s",
       seq, size, tag, c->base.peer.desc, c->dev->label,
       (long long)((now - c->cts_wait_since) / 1000000000LL), advice);
}

/* One warning per stall of the connection, for the oldest request: the
 * others wait behind it. */
static void check_stall(struct ib_comm *c, struct ib_req *r) {
  int64_t limit = knob_int(K_DIAG_STALL_WARN_SEC) * 1000000000LL;
  if (!limit || c->has_warned_stall || now_ns() - r->posted_ns < limit) return;
  c->has_warned_stall = true;
  char what[200], advice[400];
  describe(r, what, sizeof(what));
  if (r->is_flush)
    snprintf(advice, sizeof(advice),
             "It reads this host's own memory through the device: the "
             "device or its driver does not complete work");
  else stall_advice(c, r->is_send, advice, sizeof(advice));
  WARN("%s with %s on %s has not completed in %lld s. %s", what, c->base.peer.desc, c->dev->label,
       (long long)((now_ns() - r->posted_ns) / 1000000000LL), advice);
}

ncclResult_t ib_test(void *request, int *done, int *sizes) {
  struct ib_req *r = request;
  struct ib_comm *c = (struct ib_comm *)r->base.comm;
  *done = 0;
  if (c->is_failed) return transport_result(c->fail_err);
  if (!r->is_done && ib_poll(c)) return transport_result(c->fail_err);
  if (!r->is_done) {
    if (ib_check_peer(c)) return transport_result(c->fail_err);
    check_stall(c, r);
    return ncclSuccess;
  }
  long long bytes = 0;
  for (int i = 0; i < r->n; i++) {
    if (sizes) sizes[i] = r->sizes[i];
    bytes += r->sizes[i];
  }
  ev_count(r->is_send ? C_BYTES_SENT : C_BYTES_RECV, bytes);
  c->has_warned_stall = false; /* it moves again */
  ib_req_put(c, r);
  *done = 1;
  return ncclSuccess;
}
