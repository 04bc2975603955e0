/* SPDX-License-Identifier: Apache-2.0 */
/* A fused NIC (makeVDevice) stripes each message over its member ports, as
 * NCCL's IB transport does over a virtual NIC's devices (2.19+): the
 * connection gets queue pairs on every port of both sides, queue pair j
 * on this side's port j % n and the peer's port j % m (each side's count
 * may differ), and each message is cut over one queue pair per port (over
 * all of them with NCCL_IB_SPLIT_DATA_ON_QPS=1).
 *
 * Both sides must offer it in their hello (an older peer does not: one
 * port, as before); each side's INFO then lists its ports (GID, LID, MTU,
 * the key of its completion records there). With port fail-over
 * (NCCL_IB_RESILIENCY_PORT_FAILOVER=1), a port that fails under a striped
 * connection makes it carry on over one surviving port
 * (transport/ib/failover/ib_failover.c); without it the connection fails. */
#include <stdio.h>
#include <string.h>

#include "transport/ib/setup/ib_setup.h"

int ib_stripe_local(struct ib_setup *s) {
  struct ib_dev *d = s->dev;
  s->ndevs = 1;
  s->devs[0] = d;
  s->members[0] = 0;
  for (int i = 0; i < d->nmembers; i++)
    if (d->members[i] == d) s->members[0] = i;
  if (s->mine.rdma.stripe_ports < 2 || s->peer.rdma.stripe_ports < 2) return 1;
  /* A pair repaired onto another port runs there alone: both sides see the
   * same repair (it is a function of both hellos), so both stop striping. */
  const struct ib_repair *r = &s->repair;
  if (r->is_applied && (r->end[0].is_moved || r->end[1].is_moved)) return 1;
  /* this side's ports from the one the connection was given, so that the
   * control traffic (queue pair 0) spreads over the ports too */
  for (int k = 1; k < d->nmembers && k < IB_MAX_STRIPE; k++) {
    int m = (s->members[0] + k) % d->nmembers;
    s->devs[k] = d->members[m];
    s->members[k] = m;
  }
  s->ndevs = d->nmembers < IB_MAX_STRIPE ? d->nmembers : IB_MAX_STRIPE;
  return s->ndevs;
}

int ib_stripe_width(const struct ib_setup *s) {
  if (s->ndevs < 2) return 1;
  int m = s->peer.rdma.stripe_ports;
  return m > s->ndevs ? m : s->ndevs;
}

void ib_stripe_fill_info(const struct ib_setup *s, struct ibrec *r) {
  if (s->ndevs < 2) return;
  r->flags |= IBREC_F_STRIPE;
  r->nports = s->ndevs;
  for (int k = 0; k < s->ndevs; k++) {
    struct ibrec_port *p = &r->ports[k];
    const struct ib_dev *d = s->devs[k];
    char subnet[64];
    if (k == 0) memcpy(p->gid, s->mine.ib.gid, 16); /* as the hello said (repaired or not) */
    else memcpy(p->gid, ib_dev_gid(d, subnet, sizeof(subnet)), 16);
    p->lid = (uint32_t)d->td->lid;
    p->mtu = (uint32_t)d->mtu;
    p->cr_rkey = s->cr_mrs[k] ? s->cr_mrs[k]->rkey : 0;
  }
}

int ib_stripe_check(const struct ib_setup *s, char *why, size_t cap) {
  bool is_striped = s->ndevs > 1;
  bool is_peer = (s->peer_info.flags & IBREC_F_STRIPE) && s->peer_info.nports > 1;
  if (is_striped == is_peer && (!is_striped || s->peer_info.nports == s->peer.rdma.stripe_ports))
    return 0;
  snprintf(why, cap,
           "the peer's setup record lists %d striped ports where its hello offered %d and this "
           "side %d (a peer with another plugin version? install the same release on both hosts)",
           is_peer ? s->peer_info.nports : 0, s->peer.rdma.stripe_ports, s->ndevs);
  return EPROTO;
}

void ib_stripe_path(const struct ib_setup *s, int i, struct hello *peer, struct ib_path *p) {
  const struct ib_dev *d = s->devs[i % s->ndevs];
  const struct ibrec_port *rp = &s->peer_info.ports[i % s->peer_info.nports];
  *peer = s->peer;
  memcpy(peer->ib.gid, rp->gid, 16);
  peer->ib.lid = (int)rp->lid;
  peer->ib.mtu = (int)rp->mtu;
  char subnet[64];
  const uint8_t *gid = i % s->ndevs ? ib_dev_gid(d, subnet, sizeof(subnet)) : s->mine.ib.gid;
  int gid_index = i % s->ndevs ? d->td->gid_index : s->mine.ib.gid_index;
  (void)ib_rtr_path(d, s->is_send, gid, gid_index, peer, s->sl, s->tc, p);
}
