/* SPDX-License-Identifier: Apache-2.0 */
/* Before any queue pair leaves INIT: can these two ports talk at all? Each
 * side compares its own device with the peer's hello, so a pair that can
 * never work (InfiniBand against RoCE, RoCE v1 against v2, an IB port
 * without a LID) is named at once instead of after an RTR timeout. A pair
 * whose subnets differ is only named as a risk: the kernel may still reach
 * the peer, and RTR decides. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "transport/ib/ib.h"

/* The remote GID on a subnet no route of the local GID's netdev leads to.
 * The kernel's RoCE address resolution is bound to that netdev: with no
 * route it looks for the address on the netdev's own segment, so RTR works
 * when the peer shares the L2 segment and answers ARP, and times out after
 * about 1 s otherwise (measured on Linux 6.1, tests/rxe). A risk to name,
 * not a failure to claim: RTR settles it. */
static bool is_cross_subnet(const struct ib_dev *d, const struct hello *peer, char *out,
                            size_t cap) {
  const struct topo_dev *t = d->td;
  const struct hello_ib *r = &peer->ib;
  bool gw;
  if (t->ll == TOPO_LL_IB || ib_route_through(t->netdev, r->gid, &gw) != IB_ROUTE_NONE)
    return false;
  char lg[INET6_ADDRSTRLEN], rg[INET6_ADDRSTRLEN], sn[64];
  const uint8_t *g = ib_dev_gid(d, sn, sizeof(sn));
  inet_ntop(AF_INET6, g, lg, sizeof(lg));
  inet_ntop(AF_INET6, r->gid, rg, sizeof(rg));
  snprintf(out, cap,
           "remote GID %d %s of %s's %s is on %s, local GID %d %s of %s on %s, and no route "
           "leads from %s to it: RoCE then looks for it on %s's own segment, so RTR may fail "
           "unless the fabric routes or bridges the subnets (RTR will tell)",
           r->gid_index, rg, peer->host, r->dev, r->subnet[0] ? r->subnet : "another subnet",
           t->gid_index, lg, d->label, sn[0] ? sn : "its subnet", t->netdev, t->netdev);
  return true;
}

static void add_note(char *notes, size_t ncap, const char *text) {
  size_t len = strlen(notes);
  if (len < ncap) snprintf(notes + len, ncap - len, "%s%s", len ? "; " : "", text);
}

void ib_compat_rtr_ok(const struct ib_dev *d, const struct hello *peer, const char *peer_desc) {
  char risk[512];
  if (!is_cross_subnet(d, peer, risk, sizeof(risk))) return;
  INFO(LOG_NET,
       "connection with %s: RTR succeeded on %s although the remote GID is on %s and no route "
       "leads there from %s: the peer answered on that segment (one L2 segment for both "
       "subnets, or a router answering for it), so the subnet warning does not apply to it",
       peer_desc, d->label, peer->ib.subnet[0] ? peer->ib.subnet : "another subnet", d->td->netdev);
}

int ib_compat_check(const struct ib_dev *d, const struct hello *mine, const struct hello *peer,
                    char *why, size_t cap, char *notes, size_t ncap) {
  const struct topo_dev *t = d->td;
  const struct hello_ib *r = &peer->ib;
  int local_ll = t->ll == TOPO_LL_IB ? 1 : 2;
  why[0] = notes[0] = 0;
  (void)mine;
  if (r->link_layer != local_ll) {
    snprintf(why, cap,
             "%s is %s but %s's %s port %d is %s: NCCL cannot connect InfiniBand to RoCE. Select "
             "ports of one link layer on every node with NCCL_IB_HCA",
             d->label, local_ll == 1 ? "InfiniBand" : "RoCE", peer->host, r->dev, r->port,
             r->link_layer == 1 ? "InfiniBand" : "RoCE");
    return EHOSTUNREACH;
  }
  if (local_ll == 2 && r->gid_type && t->gid_type && r->gid_type != (int)t->gid_type) {
    snprintf(why, cap,
             "%s uses a RoCE v%d GID (index %d) but %s's %s uses RoCE v%d (index %d): the two "
             "versions do not interoperate. Set the same NCCL_IB_ROCE_VERSION_NUM (or "
             "NCCL_IB_GID_INDEX=-1) on every node",
             d->label, t->gid_type == GID_TYPE_V2 ? 2 : 1, t->gid_index, peer->host, r->dev,
             r->gid_type, r->gid_index);
    return EHOSTUNREACH;
  }
  if (local_ll == 1 && !r->lid) {
    snprintf(why, cap,
             "%s's %s port %d has LID 0: no subnet manager has configured it (start opensm, or "
             "check the fabric's SM)",
             peer->host, r->dev, r->port);
    return EHOSTUNREACH;
  }
  char text[512];
  if (local_ll == 2 && is_cross_subnet(d, peer, text, sizeof(text))) add_note(notes, ncap, text);
  if (r->mtu && t->mtu && r->mtu != t->mtu) {
    snprintf(text, sizeof(text),
             "MTU %d on %s, %d on %s's %s: the connection uses %d; give both ports the same MTU "
             "(ip link set <netdev> mtu, or the switch/SM configuration)",
             t->mtu, d->label, r->mtu, peer->host, r->dev, r->mtu < t->mtu ? r->mtu : t->mtu);
    add_note(notes, ncap, text);
  }
  return 0;
}
