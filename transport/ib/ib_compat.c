/* SPDX-License-Identifier: Apache-2.0 */
/* Before any queue pair leaves INIT: can these two ports talk at all? Each
 * side compares its own device with the peer's hello, so a cross-plane or
 * mismatched pair is named at once instead of after an RTR timeout. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "topo/pkey.h"
#include "transport/ib/ib.h"

static bool is_v4_mapped(const uint8_t *g) {
  static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return !memcmp(g, pfx, 12);
}

/* Asks the kernel for a route from the GID's netdev to the remote GID's
 * address, as RoCE's address resolution does: the route must leave through
 * that netdev. 0, ENETUNREACH (no such route), or another errno (cannot
 * tell here, e.g. binding to a device needs privileges). */
static int route_check(const struct topo_dev *t, const uint8_t *rgid) {
  struct sockaddr_storage src = {0}, dst = {0};
  socklen_t len;
  int fam = is_v4_mapped(t->gid) && is_v4_mapped(rgid) ? AF_INET : AF_INET6;
  if (fam == AF_INET) {
    struct sockaddr_in *s = (struct sockaddr_in *)&src, *d = (struct sockaddr_in *)&dst;
    s->sin_family = d->sin_family = AF_INET;
    memcpy(&s->sin_addr, t->gid + 12, 4);
    memcpy(&d->sin_addr, rgid + 12, 4);
    d->sin_port = htons(4791); /* RoCE v2 */
    len = sizeof(*s);
  } else {
    struct sockaddr_in6 *s = (struct sockaddr_in6 *)&src, *d = (struct sockaddr_in6 *)&dst;
    s->sin6_family = d->sin6_family = AF_INET6;
    memcpy(&s->sin6_addr, t->gid, 16);
    memcpy(&d->sin6_addr, rgid, 16);
    d->sin6_port = htons(4791);
    if (t->gid[0] == 0xfe) s->sin6_scope_id = d->sin6_scope_id = if_nametoindex(t->netdev);
    len = sizeof(*s);
  }
  int fd = socket(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int err = 0;
  /* Binding to the netdev fails unprivileged, or when it is in another
   * namespace; binding to the GID's address, when the address is not here. */
  if ((t->netdev[0] &&
       setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, t->netdev, (socklen_t)strlen(t->netdev) + 1)) ||
      bind(fd, (struct sockaddr *)&src, len) || connect(fd, (struct sockaddr *)&dst, len))
    err = errno;
  close(fd);
  return err;
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
  bool gw;
  enum ib_route route = local_ll == 2 ? ib_route_through(t->netdev, r->gid, &gw) : IB_ROUTE_UNKNOWN;
  if (local_ll == 2 && (route == IB_ROUTE_NONE || route_check(t, r->gid) == ENETUNREACH)) {
    ib_diag_rtr(d, peer, ENETUNREACH, why, cap);
    return EHOSTUNREACH;
  }
  if (r->mtu && t->mtu && r->mtu != t->mtu)
    snprintf(notes, ncap,
             "MTU %d on %s, %d on %s of %s: the connection uses %d; give both ports the same MTU "
             "(ip link set <netdev> mtu, or the switch/SM configuration)",
             t->mtu, d->label, r->mtu, r->dev, name, r->mtu < t->mtu ? r->mtu : t->mtu);
  return 0;
}
