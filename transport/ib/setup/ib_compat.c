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
#include "topo/pkey.h"
#include "transport/ib/dev/ib.h"

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

/* A GID index that holds no GID on one side: NCCL_IB_GID_INDEX forced on
 * nodes whose tables differ (pods, virtual functions, addresses added in
 * another order). Both sides name the node where it is empty, in the same
 * words. */
static bool is_gid_absent(const struct hello *h) {
  return h->rdma.gid_state == HELLO_GID_EMPTY || h->rdma.gid_state == HELLO_GID_MISSING;
}

static int gid_slot_check(const struct hello *mine, const struct hello *peer, char *why,
                          size_t cap) {
  const struct hello *at = is_gid_absent(mine) ? mine : is_gid_absent(peer) ? peer : NULL;
  if (!at) return 0;
  char name[160];
  ib_peer_name(at, name, sizeof(name));
  snprintf(why, cap,
           "NCCL_IB_GID_INDEX=%d is %s on %s, device %s port %d (its usable entries: %s): a GID "
           "index is a position in each port's own table, and the tables of these nodes differ. "
           "Unset NCCL_IB_GID_INDEX (each node then chooses its own) or set it per node",
           at->ib.gid_index,
           at->rdma.gid_state == HELLO_GID_EMPTY ? "empty" : "past the end of the GID table", name,
           at->ib.dev, at->ib.port, at->rdma.gid_usable[0] ? at->rdma.gid_usable : "none");
  return EHOSTUNREACH;
}

/* "0x8005 (full member of partition 0x0005) at NCCL_IB_PKEY=1 on mlx5_0
 * port 1 of host-b (10.0.0.6)" */
static void pkey_side(const struct hello *h, char *buf, size_t cap) {
  char name[160], d[64];
  ib_peer_name(h, name, sizeof(name));
  pkey_describe(h->rdma.pkey, d, sizeof(d));
  snprintf(buf, cap, "%s at NCCL_IB_PKEY=%d on %s port %d of %s", d, h->ib.pkey_index, h->ib.dev,
           h->ib.port, name);
}

/* Two ports talk only inside one partition, and not both as limited
 * members: the switches drop everything else, so RTR succeeds and every
 * packet then times out. */
static int pkey_check(const struct hello *mine, const struct hello *peer, char *why, size_t cap) {
  if (!mine->rdma.has_pkey || !peer->rdma.has_pkey) return 0;
  int a = mine->rdma.pkey, b = peer->rdma.pkey;
  const char *cause;
  if (!pkey_is_key(a) || !pkey_is_key(b))
    cause = "an entry without a key: queue pairs cannot be created on it";
  else if (pkey_partition(a) != pkey_partition(b))
    cause = "different partitions: the fabric drops every packet between them";
  else if (!pkey_is_full(a) && !pkey_is_full(b))
    cause = "both limited members of one partition: limited members never reach each other, one "
            "side needs a full-member key";
  else return 0;
  char as[300], bs[300];
  pkey_side(mine, as, sizeof(as));
  pkey_side(peer, bs, sizeof(bs));
  snprintf(why, cap,
           "P_Key %s and P_Key %s: %s. Set NCCL_IB_PKEY on every node to the index of a "
           "full-member key of the job's partition ('nccl-net-diag doctor' lists each port's "
           "P_Key table)",
           as, bs, cause);
  return EHOSTUNREACH;
}

int ib_compat_check(const struct ib_dev *d, const struct hello *mine, const struct hello *peer,
                    char *why, size_t cap, char *notes, size_t ncap) {
  const struct topo_dev *t = d->td;
  const struct hello_ib *r = &peer->ib;
  int local_ll = t->ll == TOPO_LL_IB ? 1 : 2;
  char name[160]; /* host and address: containers often share host names */
  ib_peer_name(peer, name, sizeof(name));
  why[0] = notes[0] = 0;
  if (r->link_layer != local_ll) {
    snprintf(why, cap,
             "%s is %s but %s port %d on %s is %s: NCCL cannot connect InfiniBand to RoCE. Select "
             "ports of one link layer on every node with NCCL_IB_HCA",
             d->label, local_ll == 1 ? "InfiniBand" : "RoCE", r->dev, r->port, name,
             r->link_layer == 1 ? "InfiniBand" : "RoCE");
    return EHOSTUNREACH;
  }
  if (local_ll == 2 && gid_slot_check(mine, peer, why, cap)) return EHOSTUNREACH;
  if (local_ll == 2 && r->gid_type && t->gid_type && r->gid_type != (int)t->gid_type) {
    snprintf(why, cap,
             "%s uses a RoCE v%d GID (index %d) but %s on %s uses RoCE v%d (index %d): the two "
             "versions do not interoperate. Set the same NCCL_IB_ROCE_VERSION_NUM (or "
             "NCCL_IB_GID_INDEX=-1) on every node",
             d->label, t->gid_type == GID_TYPE_V2 ? 2 : 1, t->gid_index, r->dev, name, r->gid_type,
             r->gid_index);
    return EHOSTUNREACH;
  }
  if (pkey_check(mine, peer, why, cap)) return EHOSTUNREACH;
  if (local_ll == 1 && !r->lid) {
    snprintf(why, cap,
             "%s port %d on %s has LID 0: no subnet manager has configured it (start opensm, or "
             "check the fabric's SM)",
             r->dev, r->port, name);
    return EHOSTUNREACH;
  }
  char text[512];
  if (local_ll == 2 && is_cross_subnet(d, peer, text, sizeof(text))) add_note(notes, ncap, text);
  if (r->mtu && d->mtu && r->mtu != d->mtu) {
    snprintf(text, sizeof(text),
             "MTU %d on %s, %d on %s of %s: the connection uses %d; give both ports the same MTU "
             "(ip link set <netdev> mtu, or the switch/SM configuration)",
             d->mtu, d->label, r->mtu, r->dev, name, r->mtu < d->mtu ? r->mtu : d->mtu);
    add_note(notes, ncap, text);
  }
  return 0;
}
