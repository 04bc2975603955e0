/* SPDX-License-Identifier: Apache-2.0 */
/* Repair at RTR: the pair in use looked right from the two hellos, and RTR
 * failed on it (a neighbour that never answers, a netdev down, a filter).
 * Both sides hold both STATUS records, so both see the same failure and
 * both choose the same next pair from the two hellos with the pairs tried
 * so far left out: no message beyond the setup's own. The setup then runs
 * again on that pair (new queue pairs on the chosen device), up to
 * IB_REPAIR_MAX_TRIES pairs in all, within a fresh deadline. */
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/knobs.h"
#include "common/log.h"
#include "transport/ib/setup/ib_repair.h"
#include "transport/ib/setup/ib_setup.h"
#include "transport/prefs.h"

/* Another GID of the same two ports goes the same way (the netdevs that
 * did not reach): a failed pair's ports are left out whole. */
bool ib_repair_was_tried(const struct ib_repair *r, const struct hello_port *const p[2],
                         const struct hello_port_gid *const g[2]) {
  (void)g;
  for (int i = 0; i < r->ntried; i++) {
    const struct ib_repair_tried *t = &r->tried[i];
    bool is_same = true;
    for (int k = 0; k < 2; k++)
      is_same = is_same && t->port[k] == p[k]->port && !strcmp(t->dev[k], p[k]->dev);
    if (is_same) return true;
  }
  return false;
}

static void remember(struct ib_repair *r, const struct hello *s, const struct hello *v) {
  struct ib_repair_tried *t = &r->tried[r->ntried++];
  const struct hello *h[2] = {s, v};
  for (int k = 0; k < 2; k++) {
    snprintf(t->dev[k], sizeof(t->dev[k]), "%s", h[k]->ib.dev);
    t->port[k] = h[k]->ib.port;
    t->gid_index[k] = h[k]->ib.gid_index;
  }
}

bool ib_repair_next(struct ib_repair *r, const struct hello *mine, const struct hello *peer,
                    const struct hello *now_mine, const struct hello *now_peer, bool is_send) {
  const struct hello *s = is_send ? mine : peer, *v = is_send ? peer : mine;
  if (!s->rdma.has_ports || !v->rdma.has_ports || s->rdma.repair_mode != REPAIR_AUTO ||
      v->rdma.repair_mode != REPAIR_AUTO || r->ntried >= IB_REPAIR_MAX_TRIES)
    return false;
  struct ib_repair n = *r;
  remember(&n, is_send ? now_mine : now_peer, is_send ? now_peer : now_mine);
  n.is_found = false;
  memset(n.pick, 0, sizeof(n.pick));
  memset(n.end, 0, sizeof(n.end));
  if (!n.is_broken) {
    n.is_broken = true;
    n.cause = IB_REPAIR_RTR;
    snprintf(n.broken, sizeof(n.broken),
             "RTR failed on the pair NCCL chose, %s port %d of %s and %s port %d of %s (the "
             "warning before says why)",
             s->ib.dev, s->ib.port, s->host, v->ib.dev, v->ib.port, v->host);
  }
  ib_repair_port_choose(s, v, &n);
  if (!n.is_found) return false;
  n.is_applied = true;
  *r = n;
  return true;
}

/* Back to the first stage, on the chosen pair, with nothing of the last
 * attempt left: its resources, records, RTR retries. */
static void restart(struct ib_setup *s) {
  s->mine = s->repair_hellos[0];
  s->peer = s->repair_hellos[1];
  ib_repair_apply(&s->repair, s->is_send, &s->mine, &s->peer);
  struct ib_dev *d = ib_repair_local_dev(&s->repair, s->is_send);
  s->dev = d ? d : s->repair.nccl_dev;
  memset(&s->mine_info, 0, sizeof(s->mine_info));
  memset(&s->peer_info, 0, sizeof(s->peer_info));
  memset(&s->mine_status, 0, sizeof(s->mine_status));
  memset(&s->peer_status, 0, sizeof(s->peer_status));
  record_reader_reset(&s->in);
  s->rtr_qp = s->rtr_retries = s->rtr_total = 0;
  s->rtr_retry_at = s->rtr_first_ns = 0;
  s->is_ece_waiting = false;
  s->notes[0] = 0;
  s->stage = s->is_send ? IB_STAGE_CHECK : IB_STAGE_RECV_INFO;
  ib_stripe_local(s); /* a moved pair runs on one port (ib_stripe.c) */
  s->deadline =
    clock_mono_ns() + transport_prefs()->connect_timeout_ms * 1000000LL + ib_rtr_budget_ns();
}

bool ib_setup_repair_rtr(struct ib_setup *s) {
  /* both sides created their queue pairs: RTR or RTS failed, not the setup */
  if (!s->mine_info.is_ok || !s->peer_info.is_ok || s->peer_info.nqps != s->nqps) return false;
  struct hello was_mine = s->mine, was_peer = s->peer;
  if (!ib_repair_next(&s->repair, &s->repair_hellos[0], &s->repair_hellos[1], &was_mine, &was_peer,
                      s->is_send))
    return false;
  ib_res_free(s);
  restart(s);
  INFO(LOG_NET,
       "RDMA setup with %s: RTR failed on %s port %d GID %d towards %s port %d GID %d; both "
       "sides now try %s port %d GID %d towards %s port %d GID %d (NCCL_DIAG_REPAIR=auto)",
       s->peer_desc, was_mine.ib.dev, was_mine.ib.port, was_mine.ib.gid_index, was_peer.ib.dev,
       was_peer.ib.port, was_peer.ib.gid_index, s->mine.ib.dev, s->mine.ib.port,
       s->mine.ib.gid_index, s->peer.ib.dev, s->peer.ib.port, s->peer.ib.gid_index);
  return true;
}
