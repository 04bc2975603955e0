/* SPDX-License-Identifier: Apache-2.0 */
/* Which RDMA ports belong together, and which interface carries bootstrap.
 *
 * NCCL connects any of its devices to any device of a peer: with
 * NCCL_CROSS_NIC=0 it keeps rings on rails (device i to device i), with the
 * default it still pairs devices across rails when the search finds it
 * faster. Either way every chosen port must reach the ports of every other
 * node that NCCL may pair it with. A host often has ports on networks that
 * do not reach each other (field story 5: mlx5_bond_0 on the main network
 * next to bond0, mlx5_2..5 on an RDMA-only fabric; a QP from mlx5_4 to a
 * peer's mlx5_bond_0 timed out at RTR). We cannot probe peers here, so we
 * set apart ports by three rules that need no peer, each with its reason:
 *
 *  1. main network: a RoCE port whose netdev is, or is enslaved to, the
 *     bootstrap interface, or whose GID lies in that interface's subnet, is
 *     set apart when usable ports exist off that subnet (not counting those
 *     rule 2 sets apart, so it is evaluated second): those form a
 *     separate RDMA plane (one subnet, or one subnet per rail as in story 5,
 *     routed among themselves by the fabric), and the main network is the
 *     storage/management plane, which such fabrics do not route to.
 *  2. GPU locality: when every GPU has a usable port on its own PCIe switch
 *     (PIX or PXB), a port that is PHB or farther from every GPU is a storage
 *     or management NIC (the DGX layout); rails are the GPU-near ports.
 *  3. link layer: NCCL cannot connect an InfiniBand port to a RoCE port, so
 *     the link layer of the ports left by 1 and 2 (the majority, then the one
 *     nearer the GPUs, then InfiniBand) is kept.
 * A port that NCCL_IB_HCA names exactly is kept (the user decided) and the
 * conflict is reported instead. NCCL_DIAG_PLANES=off disables all three.
 *
 * The bootstrap interface: NCCL_SOCKET_IFNAME's first match when set; else
 * among NCCL's automatic candidates the one holding the default route, or
 * the first that is not an RDMA rail beside a GPU (a rail's subnet reaches
 * only that rail on other nodes). Rule 1 trusts it only when one of these
 * decided; chosen merely by interface order (no GPU known), the rule is not
 * applied and a warning asks for NCCL_SOCKET_IFNAME. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strutil.h"
#include "topo/internal.h"

/* The layout decides the planes, not NCCL_IB_HCA: a usable port the filter
 * left out still counts, so a port the user forces is known to be off its
 * host's plane. */
static int plane_candidate(const struct topo_port_choice *pc) {
  return pc->verdict == TV_CHOSEN || (pc->verdict == TV_FILTER && pc->gid.index >= 0);
}

static int is_rail(const struct topo_host *h, const struct topo_choice *c, const char *ifname) {
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port *pt = &h->port[p];
    if (!plane_candidate(&c->pc[p]) || pt->ll != TOPO_LL_ETH || c->pc[p].gpu_class > PC_PXB)
      continue;
    if (!strcmp(pt->netdev, ifname) || !strcmp(pt->netdev_master, ifname)) return 1;
  }
  return 0;
}

static void pick_main(const struct topo_host *h, struct topo_choice *c,
                      const struct netif_choice *a, const char *pre) {
  const char *rail = NULL;
  for (int j = 0; j < a->n; j++) {
    const char *name = h->ifs.ifs[a->idx[j]].name;
    if (!strcmp(name, h->default_route_if) && !is_rail(h, c, name)) {
      c->main_if = a->idx[j];
      c->main_confident = 1;
      snprintf(c->main_why, sizeof(c->main_why), "%sit holds the default route", pre);
      return;
    }
  }
  for (int j = 0; j < a->n; j++) {
    const char *name = h->ifs.ifs[a->idx[j]].name;
    if (is_rail(h, c, name)) {
      if (!rail) rail = name;
      continue;
    }
    c->main_if = a->idx[j];
    c->main_confident = h->ngpu > 0; /* rails are known, so this one is not a rail */
    if (rail)
      snprintf(c->main_why, sizeof(c->main_why),
               "%sthe first usable interface that is not an RDMA rail beside a GPU (%s is one)",
               pre, rail);
    else
      snprintf(c->main_why, sizeof(c->main_why),
               "%sNCCL's automatic choice (the first usable interface)", pre);
    return;
  }
  c->main_if = a->idx[0];
  snprintf(c->main_why, sizeof(c->main_why),
           "%sNCCL's automatic choice; every candidate is an RDMA rail", pre);
}

void plane_main_interface(const struct topo_host *h, struct topo_choice *c) {
  c->main_if = -1;
  if (c->sock.n > 0 && c->sock.filtered) {
    c->main_if = c->sock.idx[0];
    c->main_confident = 1;
    snprintf(c->main_why, sizeof(c->main_why), "the first interface NCCL_SOCKET_IFNAME=%s selects",
             c->prefs.socket_ifname);
    return;
  }
  struct netif_choice autoc;
  const struct netif_choice *a = &c->sock;
  const char *pre = "";
  if (c->sock.filtered) {
    netif_choose(&h->ifs, NULL, c->prefs.socket_family, &autoc);
    a = &autoc;
    pre = "NCCL_SOCKET_IFNAME matches nothing usable; without it: ";
  }
  if (a->n == 0) {
    snprintf(c->main_why, sizeof(c->main_why), "no interface is up with an address");
    return;
  }
  pick_main(h, c, a, pre);
}

struct planes {
  char why[TOPO_MAX_PORTS][3][640]; /* per port, per rule; "" = rule not hit */
};

/* Rule 1: whether port p is on the bootstrap interface's network, and how. */
static int on_main(const struct topo_host *h, const struct topo_choice *c, int p, char *how,
                   size_t cap) {
  const struct netif *m = &h->ifs.ifs[c->main_if];
  const struct topo_port *pt = &h->port[p];
  const struct topo_port_choice *pc = &c->pc[p];
  if (pt->ll != TOPO_LL_ETH) return 0;
  char own[64] = "";
  if (pc->has_addr && pc->addr.prefix >= 0) {
    own[0] = ' ', own[1] = '(';
    ipaddr_subnet_str(&pc->addr, own + 2, sizeof(own) - 3);
    strcat(own, ")");
  }
  if (!strcmp(pt->netdev, m->name)) {
    snprintf(how, cap, "its netdev is %s%s", m->name, own);
    return 1;
  }
  if (!strcmp(pt->netdev_master, m->name)) {
    snprintf(how, cap, "its netdev %s is enslaved to %s%s", pt->netdev, m->name, own);
    return 1;
  }
  for (int k = 0; pc->has_addr && k < m->naddr; k++) {
    const struct ipaddr *a = &m->addr[k];
    if (a->prefix < 0 || ipaddr_is_link_local(a) || !ipaddr_in_subnet(a, &pc->addr)) continue;
    char ip[64], sub[64];
    ipaddr_str(&pc->addr, ip, sizeof(ip));
    ipaddr_subnet_str(a, sub, sizeof(sub));
    snprintf(how, cap, "its GID address %s is on %s, the subnet of %s", ip, sub, m->name);
    return 1;
  }
  return 0;
}

/* "mlx5_2:1, mlx5_3:1 (10.1.2.0/24, 10.1.3.0/24)": the ports of the other
 * plane and their distinct subnets. */
static void others_desc(const struct topo_host *h, const struct topo_choice *c, const int *skip,
                        char *buf, size_t cap) {
  char subs[256] = "";
  size_t o = 0, so = 0;
  buf[0] = 0;
  for (int p = 0; p < h->nport; p++) {
    if (!plane_candidate(&c->pc[p]) || skip[p]) continue;
    if (o < cap)
      o = topo_cat(buf, cap, o, "%s%s:%d", o ? ", " : "", h->hca[h->port[p].hca].name,
                   h->port[p].num);
    char sub[64] = "InfiniBand";
    if (c->pc[p].has_addr) ipaddr_subnet_str(&c->pc[p].addr, sub, sizeof(sub));
    if (!strstr(subs, sub) && so < sizeof(subs))
      so = topo_cat(subs, sizeof(subs), so, "%s%s", so ? ", " : "", sub);
  }
  if (o < cap) snprintf(buf + o, cap - o, " (%s)", subs);
}

/* Rule 1, over the ports rule 2 left. */
static void rule_main(const struct topo_host *h, struct topo_choice *c, struct planes *pl) {
  if (c->main_if < 0) return;
  char how[TOPO_MAX_PORTS][200], others[400];
  int skip[TOPO_MAX_PORTS] = {0}, nmain = 0, nother = 0;
  for (int p = 0; p < h->nport; p++) {
    if (!plane_candidate(&c->pc[p])) continue;
    if ((skip[p] = on_main(h, c, p, how[p], sizeof(how[p])))) nmain++;
    else if (pl->why[p][1][0]) skip[p] = 2;
    else nother++;
  }
  if (!nmain || !nother) return;
  others_desc(h, c, skip, others, sizeof(others));
  const char *mname = h->ifs.ifs[c->main_if].name;
  if (!c->main_confident) {
    topo_issue(c, TOPO_WARNING,
               "the RDMA ports are on several networks: %s, and %d port%s on the "
               "network of %s; nothing says which is the main network (%s only comes first in "
               "interface order, and no GPU tells the rails apart); set NCCL_SOCKET_IFNAME to the "
               "main network's interface so the ports on it can be set apart",
               others, nmain, nmain == 1 ? "" : "s", mname, mname);
    return;
  }
  for (int p = 0; p < h->nport; p++)
    if (skip[p] == 1)
      snprintf(pl->why[p][0], sizeof(pl->why[p][0]),
               "other plane: %s, the main network (%s carries sockets and bootstrap), while %s "
               "form a separate RDMA plane; a QP between the planes times out at RTR",
               how[p], mname, others);
}

static void rule_gpu(const struct topo_host *h, const struct topo_choice *c, struct planes *pl) {
  if (!h->ngpu) return;
  for (int g = 0; g < h->ngpu; g++) {
    int near = 0;
    for (int p = 0; p < h->nport && !near; p++)
      near = plane_candidate(&c->pc[p]) && c->gc[g].to_port[p] <= PC_PXB;
    if (!near) return; /* some GPU relies on a farther port */
  }
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port_choice *pc = &c->pc[p];
    if (!plane_candidate(pc) || pc->gpu_class <= PC_PXB || pc->gpu_class == PC_UNKNOWN) continue;
    snprintf(pl->why[p][1], sizeof(pl->why[p][1]),
             "storage or management NIC: the nearest GPU, %s, is %s from it (no shared PCIe "
             "switch), while every GPU has an RDMA port on its own PCIe switch; NCCL would also "
             "route GPU traffic through it",
             h->gpu[pc->gpu_near].name, pci_class_name(pc->gpu_class));
  }
}

static enum topo_ll keep_ll(const struct topo_host *h, const struct topo_choice *c,
                            const struct planes *pl) {
  int n[3] = {0}, near[3] = {0};
  for (int p = 0; p < h->nport; p++) {
    if (!plane_candidate(&c->pc[p]) || pl->why[p][0][0] || pl->why[p][1][0]) continue;
    n[h->port[p].ll]++;
    near[h->port[p].ll] += c->pc[p].gpu_class <= PC_PXB;
  }
  if (!n[TOPO_LL_IB] || !n[TOPO_LL_ETH]) return n[TOPO_LL_IB] ? TOPO_LL_IB : TOPO_LL_ETH;
  if (n[TOPO_LL_IB] != n[TOPO_LL_ETH])
    return n[TOPO_LL_IB] > n[TOPO_LL_ETH] ? TOPO_LL_IB : TOPO_LL_ETH;
  return near[TOPO_LL_ETH] > near[TOPO_LL_IB] ? TOPO_LL_ETH : TOPO_LL_IB;
}

static void rule_ll(const struct topo_host *h, const struct topo_choice *c, struct planes *pl) {
  enum topo_ll keep = keep_ll(h, c, pl);
  int nkeep = 0;
  for (int p = 0; p < h->nport; p++) nkeep += plane_candidate(&c->pc[p]) && h->port[p].ll == keep;
  for (int p = 0; p < h->nport; p++) {
    if (!plane_candidate(&c->pc[p]) || h->port[p].ll == keep) continue;
    snprintf(pl->why[p][2], sizeof(pl->why[p][2]),
             "link layer %s differs from the %d %s port%s kept; NCCL cannot connect an "
             "InfiniBand port to a RoCE port",
             topo_ll_name(h->port[p].ll), nkeep, topo_ll_name(keep), nkeep == 1 ? "" : "s");
  }
}

static void settle(const struct topo_host *h, struct topo_choice *c, const struct planes *pl,
                   int p) {
  struct topo_port_choice *pc = &c->pc[p];
  char all[sizeof(pc->why)] = "";
  size_t o = 0;
  for (int r = 0; r < 3; r++)
    if (pl->why[p][r][0] && o < sizeof(all))
      o = topo_cat(all, sizeof(all), o, "%s%s", o ? "; also " : "", pl->why[p][r]);
  if (!o) return;
  char label[80];
  topo_port_label(h, p, label, sizeof(label));
  pc->off_plane = 1;
  if (pc->verdict == TV_FILTER) return; /* not used anyway; the mark is for diagnoses */
  if (pc->user_selected) {
    int breaks = pl->why[p][0][0] || pl->why[p][2][0];
    if (!c->quiet)
      WARN("NCCL_IB_HCA selects %s, which this host's layout sets apart: %s", label, all);
    topo_issue(c, breaks ? TOPO_ERROR : TOPO_WARNING,
               "NCCL_IB_HCA selects %s, which this host's layout sets apart: %s", label, all);
    return;
  }
  pc->verdict = TV_PLANE;
  scopy(pc->why, sizeof(pc->why), all);
}

void plane_apply(const struct topo_host *h, struct topo_choice *c) {
  struct planes *pl = calloc(1, sizeof(*pl));
  if (!pl) {
    WARN("out of memory: the plane rules are skipped, every usable RDMA port is kept");
    return;
  }
  rule_gpu(h, c, pl);
  rule_main(h, c, pl);
  rule_ll(h, c, pl);
  for (int p = 0; p < h->nport; p++) settle(h, c, pl, p);
  free(pl);
}
