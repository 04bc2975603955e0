/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA connection's rows of its control channel (transport/ctrl.h):
 * the peer's abort notice and its port fail-over messages. Stepped from
 * the calls NCCL makes, never waited for. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "transport/ib/data/ib_comm.h"
#include "transport/sock.h"

/* The peer gave up: its reason, and this side's port when it explains it. */
static bool on_notice(void *comm, const struct ctrl_msg *m) {
  struct ib_comm *c = comm;
  char reason[MSG_ABORT_MAX + 1];
  /* The peer's words go into our WARN: a newline in them must not forge a
   * line, nor an escape code reach a terminal. */
  log_clean(reason, sizeof(reason), (const char *)m->body, m->len);
  const char *side = c->is_send ? "receiving" : "sending";
  if (!ib_dev_check_port(c->dev)) {
    (void)ib_fail(c, ECONNRESET, false, "the %s side ended the connection: %s", side, reason);
    return true;
  }
  /* This side's port is down: that explains the peer's failure. */
  char advice[300];
  ib_fo_advice(c, advice, sizeof(advice));
  (void)ib_fail(c, ECONNRESET, false,
                "%s went down during the transfer (check its netdev %s and its link)%s; the %s "
                "side ended the connection: %.400s",
                c->dev->label, c->dev->td->netdev ? c->dev->td->netdev : "", advice, side, reason);
  return true;
}

static const ctrl_handler rows[CTRL_KINDS] = {
  [CTRL_ABORT] = on_notice, [CTRL_FAILOVER] = ib_fo_on_msg,
  /* CTRL_REPAIR, CTRL_QUERY: no row yet, refused as unknown */
};

int ib_ctrl_step(struct ib_comm *c, bool *closed, int *sock_err) {
  *closed = false;
  *sock_err = 0;
  if (c->is_failed) return c->fail_err;
  enum ctrl_read st = ctrl_step(&c->ctrl, rows, c);
  if (st == CTRL_R_BAD)
    return ib_fail(c, EPROTO, true,
                   "the peer's control connection carried %s: the two hosts run different builds "
                   "of the plugin, or something else writes to the connection",
                   c->ctrl.in.why);
  if (st == CTRL_R_CLOSED) {
    *closed = true;
    *sock_err = c->ctrl.closed_err;
  }
  if (st == CTRL_R_PART && ctrl_in_stalled(&c->ctrl, now_ns()))
    return ib_fail(c, EPROTO, true,
                   "a message from the peer on the control connection stopped after %zu of %zu "
                   "bytes for 1 s: its process is stuck or the connection between the hosts stalls",
                   c->ctrl.in.got, c->ctrl.in.want);
  return c->is_failed ? c->fail_err : 0;
}
