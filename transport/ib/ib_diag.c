/* SPDX-License-Identifier: Apache-2.0 */
/* The words for RDMA failures: what failed, between which GIDs on which
 * subnets and hosts, the likely cause, and the setting that fixes it. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/knobs.h"
#include "common/wcstatus.h"
#include "transport/ib/ib.h"
#include "transport/sock.h"

struct out {
  char *p;
  size_t cap, len;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...) {
  if (o->len >= o->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
  va_end(ap);
  if (n > 0) o->len += (size_t)n;
  if (o->len >= o->cap) o->len = o->cap - 1;
}

static bool gid_link_local(const uint8_t *g) { return g[0] == 0xfe && (g[1] & 0xc0) == 0x80; }

static void gid_text(const uint8_t *g, char *buf, size_t cap) {
  char t[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, g, t, sizeof(t));
  snprintf(buf, cap, "%s", t);
}

/* "local GID 3 ::ffff:10.1.4.5 (RoCE v2, xgbe4, 10.1.4.0/24) of mlx5_4 port 1
 * on host-a": with the host, so the text reads right on the peer too. */
static void local_side(struct out *o, const struct ib_dev *d) {
  const struct topo_dev *t = d->td;
  char g[64], sn[64], host[256] = "this host";
  const uint8_t *gid = ib_dev_gid(d, sn, sizeof(sn));
  gid_text(gid, g, sizeof(g));
  if (gethostname(host, sizeof(host) - 1)) snprintf(host, sizeof(host), "this host");
  put(o, "local GID %d %s (%s, %s, %s) of %s on %s", t->gid_index, g,
      gid_type_name(t->gid_type, t->ll), t->netdev[0] ? t->netdev : "no netdev",
      sn[0] ? sn : "no subnet", d->label, host);
  if (gid_link_local(gid)) put(o, " [link-local: it only reaches the same L2 segment]");
}

static void remote_side(struct out *o, const struct hello *peer) {
  const struct hello_ib *r = &peer->ib;
  char g[64], name[160];
  gid_text(r->gid, g, sizeof(g));
  ib_peer_name(peer, name, sizeof(name));
  put(o, "remote GID %d %s (%s, %s, %s) of %s port %d on %s", r->gid_index, g,
      r->link_layer == 1                          ? "IB"
      : r->gid_type == 2                          ? "RoCE v2"
      : r->gid_type == 1                          ? "RoCE v1"
      : peer->rdma.gid_state == HELLO_GID_EMPTY   ? "empty entry"
      : peer->rdma.gid_state == HELLO_GID_MISSING ? "past the table"
                                                  : "type unknown",
      r->netdev[0] ? r->netdev : "no netdev", r->subnet[0] ? r->subnet : "no subnet", r->dev,
      r->port, name);
  if (gid_link_local(r->gid)) put(o, " [link-local: it only reaches the same L2 segment]");
}

/* The port this host uses on the remote's subnet, -1 when none. */
static int rail_on_subnet(const struct ipaddr *remote) {
  const struct topo_host *h;
  const struct topo_choice *c = topo_process(&h);
  for (int p = 0; p < h->nport && p < c->nport; p++)
    if (c->pc[p].verdict == TV_CHOSEN && c->pc[p].has_addr &&
        ipaddr_in_subnet(remote, &c->pc[p].addr))
      return p;
  return -1;
}

/* Which local ports, chosen or not, sit on the remote's subnet. */
static void ports_on_subnet(struct out *o, const struct ib_dev *d, const struct hello *peer,
                            const struct ipaddr *remote) {
  const struct topo_host *h;
  const struct topo_choice *c = topo_process(&h);
  int found = 0;
  for (int p = 0; p < h->nport && p < c->nport; p++) {
    const struct topo_port_choice *pc = &c->pc[p];
    if (!pc->has_addr || !ipaddr_in_subnet(remote, &pc->addr)) continue;
    char label[80];
    topo_port_label(h, p, label, sizeof(label));
    put(o, "%s local port %s is on %s (GID %d)%s%s", found ? ";" : ". The", label, peer->ib.subnet,
        pc->gid.index, pc->verdict == TV_CHOSEN ? "" : " but was set apart: ",
        pc->verdict == TV_CHOSEN ? "" : pc->why);
    found++;
  }
  if (!found)
    put(o, ". No local RDMA port is on %s: %s and %s's %s are on different networks (planes)",
        peer->ib.subnet, d->label, peer->host, peer->ib.dev);
}

/* A rail-optimised fabric: NIC k of every node reaches only NIC k of the
 * others. This host uses a port on the remote's rail, so the pair crossed
 * rails: NCCL should keep each ring on its rail, not drop a rail NIC. */
static void cross_rail_advice(struct out *o, const struct ib_dev *d, const struct hello *peer,
                              int rail) {
  const struct topo_host *h;
  topo_process(&h);
  char label[80];
  topo_port_label(h, rail, label, sizeof(label));
  put(o,
      ". Cross-rail pair: each rail is its own subnet and this host reaches %s through its %s, "
      "but NCCL paired %s with %s's %s. Set NCCL_CROSS_NIC=0 on every node so that rings and "
      "trees stay on one rail, and keep PXN on (NCCL_PXN_DISABLE=0, NCCL_P2P_PXN_LEVEL=2, the "
      "defaults) so that send/receive reaches other rails over NVLink",
      peer->ib.subnet, label, d->td->name, peer->host, peer->ib.dev);
}

int ib_local_port_of(const uint8_t *gid) {
  static const uint8_t zero[16];
  const struct topo_host *h;
  topo_process(&h);
  if (!memcmp(gid, zero, 16)) return -1;
  for (int p = 0; p < h->nport; p++)
    for (int k = 0; k < h->ports[p].ngid; k++)
      if (!memcmp(h->ports[p].gids[k].raw, gid, 16)) return p;
  return -1;
}

/* Both ends are NICs of this host: the kernel here resolves the peer's
 * address, and NCCL need not use the network inside a node at all. */
static void same_host_advice(struct out *o, const struct ib_dev *d, int port) {
  const struct topo_host *h;
  topo_process(&h);
  char label[80];
  topo_port_label(h, port, label, sizeof(label));
  if (port == d->td->port) /* the NIC loops back to itself: nothing to resolve */
    put(o, ". Both ends are %s of this host", d->label);
  else put(o, ". Both ends are NICs of this host (%s and %s)", d->label, label);
  if (d->td->ll == TOPO_LL_ETH && port != d->td->port)
    put(o,
        ": this host's kernel must resolve %s's address as a neighbour through %s (check "
        "arp_ignore, arp_announce and rp_filter of both netdevs, and 'ip neigh' there)",
        label, d->td->netdev);
  put(o, "; NCCL_NET_DISABLE_INTRA=1 keeps traffic between GPUs of one node off the network");
}

/* Which local ports sit on the remote's subnet, and what would make the
 * two sides meet. */
static void plane_advice(struct out *o, const struct ib_dev *d, const struct hello *peer) {
  struct ipaddr remote;
  int same = ib_local_port_of(peer->ib.gid);
  if (!peer->ib.subnet[0] || ipaddr_parse(&remote, peer->ib.subnet)) {
    if (same >= 0) same_host_advice(o, d, same);
    return;
  }
  /* On one host the remote port is itself a local port on its subnet: no rail crossed. */
  int rail = same >= 0 ? -1 : rail_on_subnet(&remote);
  bool is_off_plane = d->td->off_plane || peer->ib.is_off_plane;
  if (rail >= 0 && !is_off_plane) cross_rail_advice(o, d, peer, rail);
  else if (same < 0) ports_on_subnet(o, d, peer, &remote);
  /* Name the device that is off its host's plane, as that host's own
   * layout says; both sides then give the same fix. */
  if (d->td->off_plane)
    put(o,
        ". This host's layout sets %s apart (another plane than its GPU rails): exclude it "
        "with NCCL_IB_HCA=^%s on every node",
        d->td->name, d->td->name);
  else if (peer->ib.is_off_plane)
    put(o,
        ". %s's layout sets its %s apart (another plane than its GPU rails): exclude it with "
        "NCCL_IB_HCA=^%s on every node",
        peer->host, peer->ib.dev, peer->ib.dev);
  else if (rail < 0 && same < 0)
    put(o,
        ". Use ports of one plane on every node (NCCL_IB_HCA): if %s on %s is not meant for "
        "this traffic (a storage or management plane), exclude it there with "
        "NCCL_IB_HCA=^%s; if it is, route between the subnets",
        peer->ib.dev, peer->host, peer->ib.dev);
  if (same >= 0) same_host_advice(o, d, same);
  if (gid_link_local(peer->ib.gid) || gid_link_local(d->td->gid))
    put(o, ". A link-local GID never routes: set NCCL_IB_GID_INDEX=-1 (automatic) or the index of "
           "the IPv4-mapped RoCE v2 GID");
}

/* RTR on RoCE, as the Linux kernel answers it (6.1, measured on soft-RoCE):
 * the remote GID is resolved on the local GID's netdev, on-link when no
 * route leads there, within 1 s. */
static void roce_rtr_causes(struct out *o, const struct ib_dev *d, const struct hello *peer,
                            int err) {
  const char *nd = d->td->netdev;
  switch (err) {
  case ETIMEDOUT:
  case EHOSTUNREACH:
    put(o,
        ". The remote GID is not resolvable from this GID's netdev %s (no ARP/ND answer within "
        "the kernel's 1 s). Likely causes, in order: the two GIDs are on different subnets and "
        "nothing routes or bridges between them (wrong subnet, or no route); %s's port or its "
        "netdev %s is down; %s filters ARP from this subnet (rp_filter=1 or arp_ignore=2 on %s)",
        nd, peer->host, peer->ib.netdev[0] ? peer->ib.netdev : "netdev", peer->host,
        peer->ib.netdev[0] ? peer->ib.netdev : "its netdev");
    plane_advice(o, d, peer);
    put(o,
        ". Confirm with: ib_write_bw -d %s -x %d on %s, then ib_write_bw -d %s -x %d %s on this "
        "host",
        peer->ib.dev, peer->ib.gid_index, peer->host, d->td->name, d->td->gid_index, peer->host);
    break;
  case ENETUNREACH:
    put(o,
        ". This GID's netdev %s is down: bring it up (ip link set %s up) or choose another "
        "port with NCCL_IB_HCA",
        nd, nd);
    break;
  case ENODATA:
    put(o,
        ". GID entry %d of %s was removed (its address on %s changed or was deleted): new "
        "connections re-read the entry; restore the address, or unset NCCL_IB_GID_INDEX so "
        "that the plugin picks an entry that exists",
        d->td->gid_index, d->label, nd);
    break;
  case EINVAL:
  case ENODEV: {
    static const uint8_t zero[16];
    if (!memcmp(peer->ib.gid, zero, 16)) {
      put(o, ". The remote GID is all zero: %s's port has no address on its GID entry %d",
          peer->host, peer->ib.gid_index);
      break;
    }
    put(o, ". The device refused the address: usually a GID index that is empty or wrong in "
           "this namespace (a hard-coded NCCL_IB_GID_INDEX), or an MTU/P_Key the port does not "
           "take: set NCCL_IB_GID_INDEX=-1 (automatic) and check 'nccl-net-diag doctor'");
    break;
  }
  default: plane_advice(o, d, peer);
  }
}

void ib_diag_rtr(const struct ib_dev *d, const struct hello *peer, int err, char *buf, size_t cap) {
  struct out o = {buf, cap, 0};
  buf[0] = 0;
  put(&o, "RTR failed with %s (%s) from ", strerror(err), errno_name(err));
  local_side(&o, d);
  put(&o, " to ");
  remote_side(&o, peer);
  if (d->td->ll == TOPO_LL_IB) {
    put(&o, "; InfiniBand: local LID %d, remote LID %d", d->td->lid, peer->ib.lid);
    if (!peer->ib.lid) put(&o, " (LID 0: no subnet manager configured the peer's port)");
    int same = ib_local_port_of(peer->ib.gid);
    if (same >= 0) same_host_advice(&o, d, same);
    return;
  }
  roce_rtr_causes(&o, d, peer, err);
}

/* A forced or link-local GID is the usual reason a path never carried a
 * packet: repeat the NCCL_IB_GID_INDEX advice where the failure shows. */
static void gid_index_advice(struct out *o, const struct ib_dev *d, const struct hello *peer) {
  const char *mine = knob_is_set(K_IB_GID_INDEX) ? knob_raw(K_IB_GID_INDEX) : NULL;
  const char *theirs = hello_info_value(peer, "NCCL_IB_GID_INDEX");
  char name[160];
  ib_peer_name(peer, name, sizeof(name));
  if (gid_link_local(d->td->gid) || gid_link_local(peer->ib.gid))
    put(o,
        ". The queue pair runs between link-local GIDs (index %d here, %d on %s), which never "
        "route between hosts: set NCCL_IB_GID_INDEX=-1 (automatic) or the index of the "
        "IPv4-mapped RoCE v2 GID on every node",
        d->td->gid_index, peer->ib.gid_index, name);
  else if (mine || strcmp(theirs, "unset"))
    put(o,
        ". NCCL_IB_GID_INDEX is forced (%s here, %s on %s): one index can name a GID of another "
        "subnet or RoCE version on some node; unset it on every node (each then chooses its "
        "own) or check each node's choice with 'nccl-net-diag doctor'",
        mine ? mine : "unset", theirs, name);
}

void ib_diag_wc(const struct ib_dev *d, const struct hello *peer, const struct ibv_wc *wc,
                const struct ib_wc_context *cx, char *buf, size_t cap) {
  struct out o = {buf, cap, 0};
  buf[0] = 0;
  const char *cause, *fix;
  int port_down = __atomic_load_n(&d->port_down, __ATOMIC_ACQUIRE);
  const struct wc_status_info *in =
    wc_status_advice((int)wc->status, cx->is_first && !port_down, cx->mem, &cause, &fix);
  /* On error only wr_id, status, qp_num and vendor_err are valid. */
  put(&o, "%s%s completed with %s (%d), qp 0x%x, vendor_err 0x%x", cx->what,
      cx->mem == WC_MEM_GPU    ? " (GPU memory)"
      : cx->mem == WC_MEM_HOST ? " (host memory)"
                               : "",
      verbs_wc_status_name(wc->status), wc->status, wc->qp_num, wc->vendor_err);
  /* A port that went down explains any error that follows it. */
  if (port_down && wc->status != IBV_WC_WR_FLUSH_ERR)
    put(&o,
        ": %s went down during the transfer (a port error event; check its netdev %s and its "
        "link)",
        d->label, d->td->netdev[0] ? d->td->netdev : "netdev");
  if (in) put(&o, ", %s: %s; fix: %s", in->what, cause, fix);
  else put(&o, ": a transport or device error the verbs do not classify");
  if (wc->status == IBV_WC_WR_FLUSH_ERR)
    put(&o,
        cx->first_error && cx->first_error[0] ? ". The first error was: %s"
                                              : ". The first error was not seen here (on the "
                                                "peer, or an async event)%s",
        cx->first_error && cx->first_error[0] ? cx->first_error : "");
  if (wc->status != IBV_WC_RETRY_EXC_ERR) return;
  if (d->td->ll == TOPO_LL_ETH) {
    char addr[160];
    ib_peer_name(peer, addr, sizeof(addr));
    put(&o, ". Between ");
    local_side(&o, d);
    put(&o, " and ");
    remote_side(&o, peer);
    put(&o,
        ". Confirm the path with: ib_write_bw -d %s -x %d on %s, then ib_write_bw -d %s -x %d "
        "<its address> here",
        peer->ib.dev, peer->ib.gid_index, addr, d->td->name, d->td->gid_index);
    gid_index_advice(&o, d, peer);
  }
  int same = ib_local_port_of(peer->ib.gid);
  if (same >= 0 && cx->is_first) same_host_advice(&o, d, same);
}
