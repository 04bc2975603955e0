/* SPDX-License-Identifier: Apache-2.0 */
/* What a connection with requests waiting watches besides its completion
 * queue, without ever holding the caller: the control socket every
 * CTRL_CHECK_NS (a peer whose process died closes it, a peer that gave up
 * writes its reason there, either known long before RDMA retries would
 * time out), the failures seen but not judged yet (ib_comm.h), and the
 * no-progress warnings, which say what the plugin waits for. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "transport/frame.h"
#include "transport/ib/data/ib_comm.h"
#include "transport/liveness.h"
#include "transport/prefs.h"
#include "transport/sock.h"

#define CTRL_CHECK_NS 100000000LL
/* A completion error waits this long for the peer's control socket to
 * close: a dying process tears down its memory before its sockets, so on a
 * loaded host the close can trail the error by seconds. */
#define PEER_CLOSE_WAIT_NS 2000000000LL
/* A closed control socket waits this long for completions the fabric
 * already made: the peer's acknowledgement can trail its close. */
#define HANGUP_GRACE_NS 200000000LL

/* A completion's diagnosis written before this side's port was known to
 * be down: judged now, the port comes first, since it explains the error
 * (its event can trail the completion by any time). */
static const char *wc_diag(struct ib_comm *c, char *buf, size_t cap) {
  const char *diag = c->verdict_diag ? c->verdict_diag : "a completion failed";
  if (!ib_dev_check_port(c->dev)) return diag;
  char advice[300];
  ib_fo_advice(c, advice, sizeof(advice));
  snprintf(
    buf, cap,
    "%s went down during the transfer (a port error event; check its netdev %s and its link)%s; %s",
    c->dev->label, c->dev->td->netdev[0] ? c->dev->td->netdev : "netdev", advice, diag);
  return buf;
}

static int fail_closed(struct ib_comm *c, int err) {
  char buf[2800];
  if (c->verdict == IB_VERDICT_WC)
    return ib_fail(c, ECONNRESET, true,
                   "the peer's control connection closed while requests were in flight: its "
                   "process died or it closed this connection (here %s)",
                   wc_diag(c, buf, sizeof(buf)));
  return ib_fail(c, ECONNRESET, false,
                 "the peer's control connection %s while requests were in flight: its process "
                 "died or it closed this connection",
                 err ? strerror(err) : "closed");
}

int ib_wc_verdict(struct ib_comm *c, const char *diag, bool is_port_down) {
  if (c->verdict == IB_VERDICT_WC) return 0; /* the first error is the one judged */
  bool is_hangup = c->verdict == IB_VERDICT_HANGUP;
  c->verdict = IB_VERDICT_WC;
  free(c->verdict_diag);
  c->verdict_diag = strdup(diag);
  if (is_hangup) return fail_closed(c, 0);
  if (is_port_down) return ib_fail(c, ECONNRESET, true, "%s", diag); /* the port explains it */
  c->verdict_since = now_ns();
  return ib_settle(c, c->verdict_since);
}

int ib_settle(struct ib_comm *c, int64_t now) {
  if (c->is_failed || c->verdict == IB_VERDICT_NONE) return c->is_failed ? c->fail_err : 0;
  char buf[2800];
  int err;
  bool closed;
  if (ib_ctrl_step(c, &closed, &err)) return c->fail_err;
  if (closed && c->verdict == IB_VERDICT_WC) return fail_closed(c, err);
  if (c->verdict == IB_VERDICT_HANGUP && now - c->verdict_since >= HANGUP_GRACE_NS)
    return fail_closed(c, 0);
  if (c->verdict == IB_VERDICT_WC && (now - c->verdict_since >= PEER_CLOSE_WAIT_NS ||
                                      __atomic_load_n(&c->dev->port_down, __ATOMIC_ACQUIRE)))
    return ib_fail(c, ECONNRESET, true, "%s", wc_diag(c, buf, sizeof(buf)));
  return 0;
}

int ib_check_peer(struct ib_comm *c, int64_t now) {
  if (now - c->last_ctrl_check < CTRL_CHECK_NS) return 0;
  c->last_ctrl_check = now;
  int err;
  bool closed;
  if (ib_ctrl_step(c, &closed, &err)) return c->fail_err;
  if (closed) {
    /* Judged after the fabric had time to deliver what it completed. */
    c->verdict = IB_VERDICT_HANGUP;
    c->verdict_since = now;
    return ib_poll(c, NULL);
  }
  char why[1600];
  if (!liveness_peer_lost(c->base.live, why, sizeof(why))) return 0;
  /* Its process stopped answering: nothing will complete. The notice waits
   * on the control socket for a peer that was only stopped, in its words. */
  ib_fail(c, ECONNRESET, false, "%s", why);
  liveness_peer_notice(c->base.live, why, sizeof(why));
  ctrl_send_abort(&c->ctrl, 0, why);
  return c->fail_err;
}

/* "send of message 17 (1048576 bytes, tag 3)" */
static void describe(const struct ib_req *r, char *buf, size_t cap) {
  if (r->is_flush)
    snprintf(buf, cap, "flush %u (an RDMA read that makes received data visible to the GPU)",
             r->seq);
  else if (r->is_send)
    snprintf(buf, cap, "send of message %u (%llu bytes, tag %d)", r->seq,
             (unsigned long long)r->bytes, r->tag);
  else
    snprintf(buf, cap, "receive of message %u (up to %llu bytes in %d buffer%s, tag %d)", r->seq,
             (unsigned long long)r->bytes, r->n, r->n == 1 ? "" : "s", r->tag);
}

/* " 3, 5" : the tags of a slot's entries that no send has matched yet. */
static void free_tags(const struct ib_comm *c, int slot, int n, char *buf, size_t cap) {
  const struct ib_slot *sl = &c->slots[slot];
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < n && len < cap; i++)
    if (!(sl->n && sl->is_used[i]))
      len += (size_t)snprintf(buf + len, cap - len, "%s%d", len ? ", " : "",
                              ib_fifo_at(c, slot, i)->tag);
}

/* What a request waits for, and what that means given the peer's
 * liveness. A send waits for its grouped siblings, or for the write's
 * acknowledgement; a receive for the sender's data. */
static void stall_advice(const struct ib_comm *c, const struct ib_req *r, char *buf, size_t cap) {
  char live[200];
  enum liveness_view v = liveness_peer_state(c->base.live, live, sizeof(live));
  const struct ib_slot *sl = r->is_send ? &c->slots[r->seq % IB_SLOTS] : NULL;
  if (sl && !sl->is_posted && sl->n > sl->matched) {
    char tags[120];
    free_tags(c, (int)(r->seq % IB_SLOTS), sl->n, tags, sizeof(tags));
    snprintf(buf, cap,
             "Nothing is written yet: the receiver grouped %d receives in this message and the "
             "sends for %d of them (tags %s) have not been called; the data goes out when every "
             "send of the group is there",
             sl->n, sl->n - sl->matched, tags);
  } else if (r->is_send && v != LIVENESS_SILENT && v != LIVENESS_LOST) {
    snprintf(buf, cap,
             "The receiver posted its receive and the write is on the wire but not acknowledged: "
             "the fabric drops or delays its packets (the queue pair gives up after "
             "NCCL_IB_TIMEOUT x NCCL_IB_RETRY_CNT)%s%s",
             live[0] ? "; the peer's process " : "", live);
  } else {
    liveness_stall_advice(c->base.live, buf, cap);
  }
}

void ib_check_cts_wait(struct ib_comm *c, int64_t now, uint32_t seq, size_t size, int tag) {
  int64_t limit = transport_prefs()->stall_warn_sec * 1000000000LL;
  if (!c->cts_wait_since || c->cts_wait_seq != seq || c->cts_wait_tag != tag) {
    c->cts_wait_seq = seq;
    c->cts_wait_tag = tag;
    c->cts_wait_since = now;
    c->has_warned_cts = false;
    return;
  }
  run_stall_step(&c->watch, &c->base, RUN_WAIT_CTS, c->cts_wait_since, (long long)size);
  if (!limit || c->has_warned_cts || now - c->cts_wait_since < limit) return;
  c->has_warned_cts = true;
  char advice[400], what[400];
  long long secs = (long long)((now - c->cts_wait_since) / 1000000000LL);
  if (c->is_tag_unmatched) {
    int slot = (int)(seq % IB_SLOTS), n = (int)ib_fifo_at(c, slot, 0)->nreqs;
    char tags[120];
    free_tags(c, slot, n, tags, sizeof(tags));
    snprintf(what, sizeof(what),
             "for a receive posted with its tag: the receiver's message %u waits for tags %s. "
             "The ranks' send and receive calls do not pair up, or another sender sharing this "
             "connection has not sent its part",
             seq, tags);
    WARN("send of message %u (%zu bytes, tag %d) to %s on %s has waited %lld s %s", seq, size, tag,
         c->base.peer.desc, c->dev->label, secs, what);
    return;
  }
  liveness_stall_advice(c->base.live, advice, sizeof(advice));
  WARN("send of message %u (%zu bytes, tag %d) to %s on %s has waited %lld s for the receiver to "
       "post its receive (its clear-to-send). %s",
       seq, size, tag, c->base.peer.desc, c->dev->label, secs, advice);
}

/* One warning per stall of the connection, for the oldest request: the
 * others wait behind it. A request's clock starts at the first check. */
static void check_stall(struct ib_comm *c, struct ib_req *r, int64_t now) {
  int64_t limit = transport_prefs()->stall_warn_sec * 1000000000LL;
  if (!r->posted_ns) r->posted_ns = now;
  if (!limit || c->has_warned_stall || now - r->posted_ns < limit) return;
  c->has_warned_stall = true;
  char what[200], advice[600];
  describe(r, what, sizeof(what));
  if (r->is_flush)
    snprintf(advice, sizeof(advice),
             "It reads this host's own memory through the device: the "
             "device or its driver does not complete work");
  else stall_advice(c, r, advice, sizeof(advice));
  WARN("%s with %s on %s has not completed in %lld s. %s", what, c->base.peer.desc, c->dev->label,
       (long long)((now - r->posted_ns) / 1000000000LL), advice);
}

int ib_idle(struct ib_comm *c, struct ib_req *r, int64_t *now) {
  if (c->is_failed) return c->fail_err;
  if (ib_fo_needs_step(c)) { /* moving, or its last message going out */
    if (ib_poll(c, NULL)) return c->fail_err;
    return ib_fo_progress(c);
  }
  if (c->verdict != IB_VERDICT_NONE) {
    *now = now_ns();
    if (ib_poll(c, NULL)) return c->fail_err;
    return ib_settle(c, *now);
  }
  if (++c->idle_calls % IB_IDLE_EVERY) return 0;
  *now = now_ns();
  if (ib_check_peer(c, *now)) return c->fail_err;
  if (ib_fo_moved(c) && ib_fo_return_step(c, *now)) return c->fail_err;
  if (r && !r->is_done) check_stall(c, r, *now);
  if (r && !r->is_done && !r->is_flush)
    run_stall_step(&c->watch, &c->base, r->is_send ? RUN_WAIT_BYTES : RUN_WAIT_DATA, r->posted_ns,
                   0);
  return c->is_failed ? c->fail_err : 0;
}
