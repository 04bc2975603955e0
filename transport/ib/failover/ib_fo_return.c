/* SPDX-License-Identifier: Apache-2.0 */
/* Moving back to the port a connection started on once it is active again
 * (NCCL_IB_RESILIENCY_PORT_RECOVERY, NCCL 2.30; default 0): the same move
 * as a fail-over (ib_failover.c), started by choice. NCCL first proves the
 * returned port with batches of "alive" messages on probe queue pairs;
 * here the move is the proof: its queue pairs must reach RTS towards the
 * peer's, and a write that fails there moves the connection off again, as
 * any failure does. The port must stay active for
 * NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY ms first, and a connection
 * moves back at most NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX times, so
 * a flapping port is left alone. Only the side whose own port failed
 * moves back (the other's first port may never have been down, and the
 * first side's may still be): the sender moves; a receiver asks it to,
 * with a HINT flagged as a return. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "transport/ib/data/ib_comm.h"
#include "transport/ib/setup/ib_wire.h"
#include "transport/prefs.h"

#define IB_FO_FLAG_RETURN 0x52455455u /* in pending[0] of a one-entry REQ or HINT */
#define ASK_AGAIN_NS 5000000000LL     /* a receiver's ask the sender did not act on */

void ib_fo_mark_return(const struct ib_comm *c, struct ib_fo_msg *m) {
  if (!c->fo.is_return) return;
  m->npending = 1;
  m->pending[0] = IB_FO_FLAG_RETURN;
}

bool ib_fo_is_return(const struct ib_fo_msg *m) {
  return (m->kind == IB_FO_REQ || m->kind == IB_FO_HINT) && m->npending == 1 &&
         m->pending[0] == IB_FO_FLAG_RETURN;
}

void ib_fo_how(const struct ib_comm *c, const struct ib_dev *from, const char *was,
               const char *peer_port, char *out, size_t cap) {
  const struct transport_prefs *p = transport_prefs();
  const char *peer = c->is_send ? "the receiver" : "the sender";
  if (c->fo.is_return) {
    snprintf(out, cap,
             "moved back from %s to %s, %s to %s (NCCL_IB_RESILIENCY_PORT_RECOVERY=1, return %d "
             "of %lld)",
             was, c->dev->label, peer, peer_port, c->fo.returns, (long long)p->port_recovery_max);
    return;
  }
  char where[200];
  if (from == c->dev && !strcmp(was, c->dev->label)) /* not a striped one collapsing */
    snprintf(where, sizeof(where), "moved to new queue pairs on %s, whose port is up", was);
  else if (ib_fo_is_member(from, c->dev))
    snprintf(where, sizeof(where), "moved from %s to %s of the same virtual NIC", was,
             c->dev->label);
  else
    snprintf(where, sizeof(where),
             "moved from %s to %s, another port of this host on the peer's subnet (NCCL still "
             "counts the connection on %s)",
             was, c->dev->label, ib_fo_home(c)->label);
  snprintf(out, cap, "%s, %s to %s (NCCL_IB_RESILIENCY_PORT_FAILOVER=1, move %d of %lld)%s", where,
           peer, peer_port, c->fo.moves, (long long)p->port_failover_max_attempts,
           p->is_port_recovery || ib_fo_home(c) == c->dev
             ? ""
             : "; it stays there: NCCL_IB_RESILIENCY_PORT_RECOVERY=1 moves it back when the "
               "port returns");
}

int ib_fo_return_step(struct ib_comm *c, int64_t now) {
  const struct transport_prefs *p = transport_prefs();
  struct ib_fo *f = &c->fo;
  struct ib_dev *home = ib_fo_home(c);
  if (!p->is_port_recovery || !p->is_port_failover || f->stage != IB_FO_IDLE || f->nreplay ||
      home == c->dev || !f->is_home_down || f->returns >= p->port_recovery_max)
    return 0;
  if (!c->is_send &&
      ((f->asked_ns && now - f->asked_ns < ASK_AGAIN_NS) || f->asks >= p->port_recovery_max))
    return 0;
  if (ib_dev_check_port(home)) {
    f->home_up_ns = 0;
    return 0;
  }
  if (!f->home_up_ns) f->home_up_ns = now;
  long long up_ms = (now - f->home_up_ns) / 1000000;
  if (up_ms < p->port_recovery_delay_ms) return 0;
  char host[64] = "this host", cause[300];
  gethostname(host, sizeof(host) - 1);
  snprintf(cause, sizeof(cause),
           "%s on %s, the connection's first port, is active again (for %lld ms)", home->label,
           host, up_ms);
  return ib_fo_start_return(c, home, cause);
}
