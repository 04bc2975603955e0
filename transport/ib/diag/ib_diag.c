/* SPDX-License-Identifier: Apache-2.0 */
/* The words for RDMA failures. A WARN opens with the specific cause and
 * its fix when the plugin knows it (a pair on one host, a link-local GID, a
 * cross-rail pair, a device of another plane, a netdev down, a removed GID
 * entry), then the failure in short; the generic causes only when nothing
 * more specific is known. Both GIDs in full, the local ports on the
 * remote's subnet and the ib_write_bw commands go to an INFO line and the
 * event file. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "transport/ib/dev/ib.h"
#include "transport/ib/diag/ib_diag.h"
#include "transport/prefs.h"
#include "transport/sock.h"

void diag_put(struct diag_out *o, const char *fmt, ...) {
  if (o->len >= o->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
  va_end(ap);
  if (n > 0) o->len += (size_t)n;
  if (o->len >= o->cap) o->len = o->cap - 1;
}

bool diag_gid_link_local(const uint8_t *g) { return g[0] == 0xfe && (g[1] & 0xc0) == 0x80; }

static void gid_text(const uint8_t *g, char *buf, size_t cap) {
  char t[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, g, t, sizeof(t));
  snprintf(buf, cap, "%s", t);
}

static void host_name(char *host, size_t cap) {
  if (gethostname(host, cap - 1)) snprintf(host, cap, "this host");
  host[cap - 1] = 0;
}

/* "local GID 3 ::ffff:10.1.4.5 (RoCE v2, xgbe4, 10.1.4.0/24) of mlx5_4 port 1
 * on host-a": with the host, so the text reads right on the peer too. */
static void local_side(struct diag_out *o, const struct ib_dev *d) {
  const struct topo_dev *t = d->td;
  char g[64], sn[64], host[256];
  const uint8_t *gid = ib_dev_gid(d, sn, sizeof(sn));
  gid_text(gid, g, sizeof(g));
  host_name(host, sizeof(host));
  diag_put(o, "local GID %d %s (%s, %s, %s) of %s on %s", t->gid_index, g,
           gid_type_name(t->gid_type, t->ll), t->netdev[0] ? t->netdev : "no netdev",
           sn[0] ? sn : "no subnet", d->label, host);
  if (diag_gid_link_local(gid)) diag_put(o, " [link-local: it only reaches the same L2 segment]");
}

static void remote_side(struct diag_out *o, const struct hello *peer) {
  const struct hello_ib *r = &peer->ib;
  char g[64], name[160];
  gid_text(r->gid, g, sizeof(g));
  ib_peer_name(peer, name, sizeof(name));
  diag_put(o, "remote GID %d %s (%s, %s, %s) of %s port %d on %s", r->gid_index, g,
           r->link_layer == 1                          ? "IB"
           : r->gid_type == 2                          ? "RoCE v2"
           : r->gid_type == 1                          ? "RoCE v1"
           : peer->rdma.gid_state == HELLO_GID_EMPTY   ? "empty entry"
           : peer->rdma.gid_state == HELLO_GID_MISSING ? "past the table"
                                                       : "type unknown",
           r->netdev[0] ? r->netdev : "no netdev", r->subnet[0] ? r->subnet : "no subnet", r->dev,
           r->port, name);
  if (diag_gid_link_local(r->gid))
    diag_put(o, " [link-local: it only reaches the same L2 segment]");
}

void diag_path_short(struct diag_out *o, const struct ib_dev *d, const struct hello *peer) {
  char lg[64], rg[64], sn[64];
  gid_text(ib_dev_gid(d, sn, sizeof(sn)), lg, sizeof(lg));
  gid_text(peer->ib.gid, rg, sizeof(rg));
  diag_put(
    o, "from GID %d %s (%s, %s) of %s to GID %d %s (%s, %s) of %s port %d on %s", d->td->gid_index,
    lg, d->td->netdev[0] ? d->td->netdev : "no netdev", sn[0] ? sn : "no subnet", d->label,
    peer->ib.gid_index, rg, peer->ib.netdev[0] ? peer->ib.netdev : "no netdev",
    peer->ib.subnet[0] ? peer->ib.subnet : "no subnet", peer->ib.dev, peer->ib.port, peer->host);
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
static void ports_on_subnet(struct diag_out *o, const struct ib_dev *d, const struct hello *peer,
                            const struct ipaddr *remote) {
  const struct topo_host *h;
  const struct topo_choice *c = topo_process(&h);
  int found = 0;
  for (int p = 0; p < h->nport && p < c->nport; p++) {
    const struct topo_port_choice *pc = &c->pc[p];
    if (!pc->has_addr || !ipaddr_in_subnet(remote, &pc->addr)) continue;
    char label[80];
    topo_port_label(h, p, label, sizeof(label));
    diag_put(o, "%s local port %s is on %s (GID %d)%s%s", found ? ";" : ". The", label,
             peer->ib.subnet, pc->gid.index, pc->verdict == TV_CHOSEN ? "" : " but was set apart: ",
             pc->verdict == TV_CHOSEN ? "" : pc->why);
    found++;
  }
  if (!found)
    diag_put(o, ". No local RDMA port is on %s: %s and %s's %s are on different networks (planes)",
             peer->ib.subnet, d->label, peer->host, peer->ib.dev);
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
 * address, and NCCL need not use the network inside a node at all. Worded
 * with the host's name, so the peer's copy of the text reads right. */
static void lead_same_host(struct diag_out *o, const struct ib_dev *d, int port,
                           const char *event) {
  const struct topo_host *h;
  topo_process(&h);
  char label[80], host[256];
  topo_port_label(h, port, label, sizeof(label));
  host_name(host, sizeof(host));
  if (port == d->td->port) /* the NIC loops back to itself: nothing to resolve */
    diag_put(o, "both ends are %s of the same host %s, and %s", d->label, host, event);
  else
    diag_put(o, "both ends are NICs of the same host %s (%s and %s), and %s", host, d->label, label,
             event);
  if (d->td->ll == TOPO_LL_ETH && port != d->td->port)
    diag_put(o,
             ": the kernel of %s must resolve %s's address as a neighbour through %s (check "
             "arp_ignore, arp_announce and rp_filter of both netdevs, and 'ip neigh')",
             host, label, d->td->netdev);
  diag_put(o, "; set NCCL_NET_DISABLE_INTRA=1 to keep traffic between GPUs of one node off the "
              "network");
}

/* A link-local GID never leaves its L2 segment: the GID index is wrong,
 * usually forced by NCCL_IB_GID_INDEX. */
static void lead_link_local(struct diag_out *o, const struct ib_dev *d, const struct hello *peer,
                            const char *event) {
  bool is_mine = diag_gid_link_local(d->td->gid);
  char g[64], host[256];
  host_name(host, sizeof(host));
  gid_text(is_mine ? d->td->gid : peer->ib.gid, g, sizeof(g));
  diag_put(o, "GID %d %s of %s on %s is link-local, which never routes between hosts, and %s",
           is_mine ? d->td->gid_index : peer->ib.gid_index, g, is_mine ? d->label : peer->ib.dev,
           is_mine ? host : peer->host, event);
  const char *mine = transport_prefs()->ib_gid_index_text;
  const char *theirs = hello_info_value(peer, "NCCL_IB_GID_INDEX");
  diag_put(o, ": set NCCL_IB_GID_INDEX=-1 (automatic) or the index of the IPv4-mapped RoCE v2 GID "
              "on every node");
  if (mine || strcmp(theirs, "unset"))
    diag_put(o, " (NCCL_IB_GID_INDEX is %s here, %s on %s)", mine ? mine : "unset", theirs,
             peer->host);
}

/* A rail-optimised fabric: NIC k of every node reaches only NIC k of the
 * others. This host uses a port on the remote's rail, so the pair crossed
 * rails: NCCL should keep each ring on its rail, not drop a rail NIC. */
static void lead_cross_rail(struct diag_out *o, const struct ib_dev *d, const struct hello *peer,
                            int rail, const char *event) {
  const struct topo_host *h;
  topo_process(&h);
  char label[80];
  topo_port_label(h, rail, label, sizeof(label));
  diag_put(o,
           "cross-rail pair: NCCL paired %s with %s's %s, and %s; each rail is its own subnet "
           "and this host reaches %s through its %s. Set NCCL_CROSS_NIC=0 on every node so "
           "that rings and trees stay on one rail, and keep PXN on (NCCL_PXN_DISABLE=0, "
           "NCCL_P2P_PXN_LEVEL=2, the defaults)",
           d->td->name, peer->host, peer->ib.dev, event, peer->ib.subnet, label);
}

/* Name the device that is off its host's plane, as that host's own layout
 * says; both sides then give the same fix. */
static void lead_off_plane(struct diag_out *o, const struct ib_dev *d, const struct hello *peer,
                           const char *event) {
  bool is_mine = d->td->off_plane;
  const char *dev = is_mine ? d->td->name : peer->ib.dev;
  char host[256];
  host_name(host, sizeof(host));
  diag_put(o,
           "%s on %s is set apart by its host's layout (another plane than its GPU rails), and "
           "%s: exclude it with NCCL_IB_HCA=^%s on every node",
           dev, is_mine ? host : peer->host, event, dev);
}

bool diag_lead_cause(struct diag_out *o, const struct ib_dev *d, const struct hello *peer,
                     const char *event) {
  int same = ib_local_port_of(peer->ib.gid);
  if (same >= 0) {
    lead_same_host(o, d, same, event);
    return true;
  }
  if (d->td->ll == TOPO_LL_ETH &&
      (diag_gid_link_local(peer->ib.gid) || diag_gid_link_local(d->td->gid))) {
    lead_link_local(o, d, peer, event);
    return true;
  }
  if (d->td->off_plane || peer->ib.is_off_plane) {
    lead_off_plane(o, d, peer, event);
    return true;
  }
  struct ipaddr remote;
  if (!peer->ib.subnet[0] || ipaddr_parse(&remote, peer->ib.subnet)) return false;
  int rail = rail_on_subnet(&remote);
  if (rail < 0 || rail == d->td->port) return false;
  lead_cross_rail(o, d, peer, rail, event);
  return true;
}

void ib_diag_path_details(const struct ib_dev *d, const struct hello *peer, char *buf, size_t cap) {
  struct diag_out o = {buf, cap, 0};
  char name[160];
  buf[0] = 0;
  local_side(&o, d);
  diag_put(&o, " to ");
  remote_side(&o, peer);
  if (d->td->ll == TOPO_LL_IB) {
    diag_put(&o, "; local LID %d, remote LID %d", d->td->lid, peer->ib.lid);
    return;
  }
  struct ipaddr remote;
  if (peer->ib.subnet[0] && !ipaddr_parse(&remote, peer->ib.subnet) &&
      ib_local_port_of(peer->ib.gid) < 0)
    ports_on_subnet(&o, d, peer, &remote);
  ib_peer_name(peer, name, sizeof(name));
  diag_put(&o,
           ". Confirm the path with: ib_write_bw -d %s -x %d on %s, then ib_write_bw -d %s -x %d "
           "<its address> here",
           peer->ib.dev, peer->ib.gid_index, name, d->td->name, d->td->gid_index);
}

void diag_log_details(const struct ib_dev *d, const struct hello *peer, const char *what) {
  char details[1400];
  ib_diag_path_details(d, peer, details, sizeof(details));
  INFO(LOG_NET, "%s on %s, the path: %s", what, d->label, details);
  struct ev e;
  ev_begin(&e, "rdma_path");
  ev_str(&e, "device", d->td->name);
  ev_str(&e, "peer_host", peer->host);
  ev_str(&e, "failure", what);
  ev_str(&e, "path", details);
  ev_end(&e);
}

/* RTR on RoCE without a specific cause, as the Linux kernel answers it
 * (6.1, measured on soft-RoCE): the remote GID is resolved on the local
 * GID's netdev, on-link when no route leads there, within 1 s. */
static void rtr_generic(struct diag_out *o, const struct ib_dev *d, const struct hello *peer,
                        int err) {
  const char *rnd = peer->ib.netdev[0] ? peer->ib.netdev : "its netdev";
  if (err == ETIMEDOUT || err == EHOSTUNREACH)
    diag_put(o,
             ": the remote GID is not resolvable from this GID's netdev %s (no ARP/ND answer "
             "within 1 s). Likely causes, in order: the two GIDs are on different "
             "subnets and nothing routes between them; %s's port or its netdev %s is down; %s "
             "filters ARP from this subnet (rp_filter=1 or arp_ignore=2 on %s)",
             d->td->netdev, peer->host, rnd, peer->host, rnd);
  if (peer->ib.subnet[0])
    diag_put(o,
             ". Use ports of one plane on every node (NCCL_IB_HCA): if %s on %s is not meant "
             "for this traffic, exclude it there with NCCL_IB_HCA=^%s; if it is, route between "
             "the subnets",
             peer->ib.dev, peer->host, peer->ib.dev);
}

/* What only the errno says: the cause is then this port's, whatever the
 * pair. true when it wrote the lead. */
static bool rtr_errno_lead(struct diag_out *o, const struct ib_dev *d, const struct hello *peer,
                           int err, const char *event) {
  const char *nd = d->td->netdev;
  static const uint8_t zero[16];
  switch (err) {
  case ENETUNREACH:
    diag_put(o,
             "%s: this GID's netdev %s is down: bring it up (ip link set %s up) or choose "
             "another port with NCCL_IB_HCA",
             event, nd, nd);
    return true;
  case ENODATA:
    diag_put(o,
             "%s: GID entry %d of %s was removed (its address on %s changed or was deleted): "
             "new connections re-read the entry; restore the address, or unset "
             "NCCL_IB_GID_INDEX so that the plugin picks an entry that exists",
             event, d->td->gid_index, d->label, nd);
    return true;
  case EINVAL:
  case ENODEV:
    if (!memcmp(peer->ib.gid, zero, 16))
      diag_put(o, "%s: the remote GID is all zero: %s's port has no address on its GID entry %d",
               event, peer->host, peer->ib.gid_index);
    else
      diag_put(o,
               "%s: the device refused the address, usually a GID index that is empty or wrong "
               "in this namespace (a hard-coded NCCL_IB_GID_INDEX), or an MTU/P_Key the port "
               "does not take: set NCCL_IB_GID_INDEX=-1 (automatic) and check 'nccl-net-diag "
               "doctor'",
               event);
    return true;
  default: return false;
  }
}

void ib_diag_rtr(const struct ib_dev *d, const struct hello *peer, int err, char *buf, size_t cap) {
  struct diag_out o = {buf, cap, 0};
  char event[160];
  buf[0] = 0;
  snprintf(event, sizeof(event), "RTR failed with %s (%s)", strerror(err), errno_name(err));
  bool is_led = d->td->ll == TOPO_LL_ETH && rtr_errno_lead(&o, d, peer, err, event);
  if (!is_led) is_led = diag_lead_cause(&o, d, peer, event);
  if (!is_led) diag_put(&o, "%s ", event);
  else diag_put(&o, ". RTR ");
  diag_path_short(&o, d, peer);
  if (d->td->ll == TOPO_LL_IB) {
    diag_put(&o, "; InfiniBand: local LID %d, remote LID %d", d->td->lid, peer->ib.lid);
    if (!peer->ib.lid) diag_put(&o, " (LID 0: no subnet manager configured the peer's port)");
  } else if (!is_led) {
    rtr_generic(&o, d, peer, err);
  }
  diag_log_details(d, peer, event);
}
