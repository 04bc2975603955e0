/* SPDX-License-Identifier: Apache-2.0 */
/* Which RDMA ports belong together, and which interface carries bootstrap.
 *
 * NCCL connects any of its devices to any device of a peer: with
 * NCCL_CROSS_NIC=0 it keeps rings on rails (device i to device i), with the
 * default it still pairs devices across rails when the search finds it
 * faster. Either way every chosen port must reach the ports of every other
 * node that NCCL may pair it with. A host often has ports on networks that
 * do not reach each other (a RoCE host with mlx5_bond_0 on the main network
 * next to bond0 and mlx5_2..5 on an RDMA-only fabric: a QP from mlx5_4 to a
 * peer's mlx5_bond_0 times out at RTR; the roce-story5 fixture host). We
 * cannot probe peers here, so we set apart ports by three rules that need
 * no peer, each with its reason:
 *
 *  1. main network: a RoCE port whose netdev is, or is enslaved to, the
 *     bootstrap interface, or whose GID lies in that interface's subnet, is
 *     set apart when usable ports exist off that subnet (not counting those
 *     rule 2 sets apart, so it is evaluated second): those form a
 *     separate RDMA plane (one subnet, or one subnet per rail as on that
 *     host, routed among themselves by the fabric), and the main network is the
 *     storage/management plane, which such fabrics do not route to.
 *  2. GPU locality: when every GPU has a usable port on its own PCIe switch
 *     (PIX or PXB), a port that is PHB or farther from every GPU is a storage
 *     or management NIC (the DGX layout); rails are the GPU-near ports.
 *  3. link layer: NCCL cannot connect an InfiniBand port to a RoCE port, so
 *     the link layer of the ports left by 1 and 2 (the majority, then the one
 *     nearer the GPUs, then InfiniBand) is kept.
 * A port that NCCL_IB_HCA names exactly is kept (the user decided) and the
 * conflict is reported instead. NCCL_DIAG_PLANES=off disables all three.
 * Rule 1 is not applied when the bootstrap interface is a rail's own
 * (NCCL_SOCKET_IFNAME names it): the fabric then carries the sockets, as on
 * a rail-only fabric with no management network, and NCCL would use the
 * port; a note says so.
 *
 * The bootstrap interface: NCCL_SOCKET_IFNAME's first match when set; else
 * among NCCL's automatic candidates the one holding the default route, or
 * the first that is not an RDMA rail beside a GPU (a rail's subnet reaches
 * only that rail on other nodes). Rule 1 trusts it only when one of these
 * decided; chosen merely by interface order (no GPU known), the rule is not
 * applied and a warning asks for NCCL_SOCKET_IFNAME. */
#include <stdio.h>
#include <string.h>

#include "common/strutil.h"
#include "topo/internal.h"

/* The layout decides the planes, not NCCL_IB_HCA: a usable port the filter
 * left out still counts, so a port the user forces is known to be off its
 * host's plane. */
static bool is_plane_candidate(const struct topo_port_choice *pc) {
  return pc->verdict == TV_CHOSEN || (pc->verdict == TV_FILTER && pc->gid.index >= 0);
}

/* The RoCE port beside a GPU (PIX or PXB: a rail) whose netdev is ifname,
 * or -1. */
static int rail_port(const struct topo_host *h, const struct topo_choice *c, const char *ifname) {
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port *pt = &h->ports[p];
    if (!is_plane_candidate(&c->pc[p]) || pt->ll != TOPO_LL_ETH ||
        c->pc[p].gpu_class > PCI_CLASS_PXB)
      continue;
    if (!strcmp(pt->netdev, ifname) || !strcmp(pt->netdev_master, ifname)) return p;
  }
  return -1;
}

static bool is_rail(const struct topo_host *h, const struct topo_choice *c, const char *ifname) {
  return rail_port(h, c, ifname) >= 0;
}

static void pick_main(const struct topo_host *h, struct topo_choice *c,
                      const struct netif_choice *a, const char *pre) {
  const char *rail = NULL;
  for (int j = 0; j < a->n; j++) {
    const char *name = h->ifs.ifs[a->idx[j]].name;
    if (!strcmp(name, h->default_route_if) && !is_rail(h, c, name)) {
      c->main_if = a->idx[j];
      c->is_main_confident = true;
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
    c->is_main_confident = h->ngpu > 0; /* rails are known, so this one is not a rail */
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

void plane_pass_main_interface(const struct topo_host *h, struct topo_choice *c) {
  c->main_if = -1;
  if (c->sock.n > 0 && c->sock.is_filtered) {
    c->main_if = c->sock.idx[0];
    c->is_main_confident = true;
    snprintf(c->main_why, sizeof(c->main_why), "the first interface NCCL_SOCKET_IFNAME=%s selects",
             c->prefs.socket_ifname);
    return;
  }
  struct netif_choice autoc;
  const struct netif_choice *a = &c->sock;
  const char *pre = "";
  if (c->sock.is_filtered) {
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

/* Which rules set each port apart, and what their reasons share; the
 * reasons themselves are written once per port, when settled. */
enum { RULE_MAIN = 1, RULE_GPU = 2, RULE_LL = 4 };
struct plane_marks {
  unsigned char rules[TOPO_MAX_PORTS]; /* RULE_* bits */
  char others[400];                    /* rule 1: the ports of the other plane, their subnets */
  enum topo_ll keep;                   /* rule 3: the link layer kept */
  int nkeep;                           /* and how many ports have it */
};

/* Rule 1: whether port p is on the bootstrap interface's network, and how. */
static bool is_on_main(const struct topo_host *h, const struct topo_choice *c, int p, char *how,
                       size_t cap) {
  const struct netif *m = &h->ifs.ifs[c->main_if];
  const struct topo_port *pt = &h->ports[p];
  const struct topo_port_choice *pc = &c->pc[p];
  if (pt->ll != TOPO_LL_ETH) return false;
  char own[64] = "";
  if (pc->has_addr && pc->addr.prefix >= 0) {
    own[0] = ' ', own[1] = '(';
    ipaddr_subnet_str(&pc->addr, own + 2, sizeof(own) - 3);
    strcat(own, ")");
  }
  if (!strcmp(pt->netdev, m->name)) {
    snprintf(how, cap, "its netdev is %s%s", m->name, own);
    return true;
  }
  if (!strcmp(pt->netdev_master, m->name)) {
    snprintf(how, cap, "its netdev %s is enslaved to %s%s", pt->netdev, m->name, own);
    return true;
  }
  for (int k = 0; pc->has_addr && k < m->naddr; k++) {
    const struct ipaddr *a = &m->addr[k];
    if (a->prefix < 0 || ipaddr_is_link_local(a) || !ipaddr_in_subnet(a, &pc->addr)) continue;
    char ip[64], sub[64];
    ipaddr_str(&pc->addr, ip, sizeof(ip));
    ipaddr_subnet_str(a, sub, sizeof(sub));
    snprintf(how, cap, "its GID address %s is on %s, the subnet of %s", ip, sub, m->name);
    return true;
  }
  return false;
}

/* "mlx5_2:1, mlx5_3:1 (10.1.2.0/24, 10.1.3.0/24)": the ports of the other
 * plane and their distinct subnets. */
static void others_desc(const struct topo_host *h, const struct topo_choice *c, const int *skip,
                        char *buf, size_t cap) {
  char subs[256] = "";
  size_t o = 0, so = 0;
  buf[0] = 0;
  for (int p = 0; p < h->nport; p++) {
    if (!is_plane_candidate(&c->pc[p]) || skip[p]) continue;
    if (o < cap)
      o = strbuf_cat(buf, cap, o, "%s%s:%d", o ? ", " : "", h->hcas[h->ports[p].hca].name,
                     h->ports[p].num);
    char sub[64] = "InfiniBand";
    if (c->pc[p].has_addr) ipaddr_subnet_str(&c->pc[p].addr, sub, sizeof(sub));
    if (!strstr(subs, sub) && so < sizeof(subs))
      so = strbuf_cat(subs, sizeof(subs), so, "%s%s", so ? ", " : "", sub);
  }
  if (o < cap) snprintf(buf + o, cap - o, " (%s)", subs);
}

/* Rule 1, over the ports rule 2 left. */
static void rule_main(const struct topo_host *h, struct topo_choice *c, struct plane_marks *pm) {
  if (c->main_if < 0) return;
  char how[200];
  int skip[TOPO_MAX_PORTS] = {0}, nmain = 0, nother = 0;
  for (int p = 0; p < h->nport; p++) {
    if (!is_plane_candidate(&c->pc[p])) continue;
    if ((skip[p] = is_on_main(h, c, p, how, sizeof(how)))) nmain++;
    else if (pm->rules[p] & RULE_GPU) skip[p] = 2;
    else nother++;
  }
  if (!nmain || !nother) return;
  others_desc(h, c, skip, pm->others, sizeof(pm->others));
  const char *mname = h->ifs.ifs[c->main_if].name;
  int rail = rail_port(h, c, mname);
  if (rail >= 0) {
    /* Bootstrap over a rail's own interface (NCCL_SOCKET_IFNAME names it):
     * the RDMA fabric carries the sockets, as on a rail-only fabric with no
     * management network, so sharing that network proves nothing and NCCL
     * would use the port: every port is kept. */
    char label[80];
    topo_port_label(h, rail, label, sizeof(label));
    topo_issue(c, TOPO_NOTE,
               "bootstrap runs over %s, the interface of RDMA port %s beside %s (a rail): the RDMA "
               "fabric carries the sockets, so no port is set apart for sharing that network; if "
               "%s is a separate management network after all, list the other ports in "
               "NCCL_IB_HCA",
               mname, label, h->gpus[c->pc[rail].nearest_gpu].name, mname);
    return;
  }
  if (!c->is_main_confident) {
    topo_issue(c, TOPO_WARNING,
               "the RDMA ports are on several networks: %s, and %d port%s on the "
               "network of %s; nothing says which is the main network (%s only comes first in "
               "interface order, and no GPU tells the rails apart); set NCCL_SOCKET_IFNAME to the "
               "main network's interface so the ports on it can be set apart",
               pm->others, nmain, nmain == 1 ? "" : "s", mname, mname);
    return;
  }
  for (int p = 0; p < h->nport; p++)
    if (skip[p] == 1) pm->rules[p] |= RULE_MAIN;
}

static void rule_gpu(const struct topo_host *h, const struct topo_choice *c,
                     struct plane_marks *pm) {
  if (!h->ngpu) return;
  for (int g = 0; g < h->ngpu; g++) {
    bool is_near = false;
    for (int p = 0; p < h->nport && !is_near; p++)
      is_near = is_plane_candidate(&c->pc[p]) && c->gpu_choices[g].port_classes[p] <= PCI_CLASS_PXB;
    if (!is_near) return; /* some GPU relies on a farther port */
  }
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port_choice *pc = &c->pc[p];
    if (!is_plane_candidate(pc) || pc->gpu_class <= PCI_CLASS_PXB ||
        pc->gpu_class == PCI_CLASS_UNKNOWN)
      continue;
    pm->rules[p] |= RULE_GPU;
  }
}

static enum topo_ll keep_ll(const struct topo_host *h, const struct topo_choice *c,
                            const struct plane_marks *pm) {
  int n[3] = {0}, near[3] = {0};
  for (int p = 0; p < h->nport; p++) {
    if (!is_plane_candidate(&c->pc[p]) || (pm->rules[p] & (RULE_MAIN | RULE_GPU))) continue;
    n[h->ports[p].ll]++;
    near[h->ports[p].ll] += c->pc[p].gpu_class <= PCI_CLASS_PXB;
  }
  if (!n[TOPO_LL_IB] || !n[TOPO_LL_ETH]) return n[TOPO_LL_IB] ? TOPO_LL_IB : TOPO_LL_ETH;
  if (n[TOPO_LL_IB] != n[TOPO_LL_ETH])
    return n[TOPO_LL_IB] > n[TOPO_LL_ETH] ? TOPO_LL_IB : TOPO_LL_ETH;
  return near[TOPO_LL_ETH] > near[TOPO_LL_IB] ? TOPO_LL_ETH : TOPO_LL_IB;
}

static void rule_ll(const struct topo_host *h, const struct topo_choice *c,
                    struct plane_marks *pm) {
  pm->keep = keep_ll(h, c, pm);
  pm->nkeep = 0;
  for (int p = 0; p < h->nport; p++)
    pm->nkeep += is_plane_candidate(&c->pc[p]) && h->ports[p].ll == pm->keep;
  for (int p = 0; p < h->nport; p++)
    if (is_plane_candidate(&c->pc[p]) && h->ports[p].ll != pm->keep) pm->rules[p] |= RULE_LL;
}

/* The reasons of every rule that sets port p apart, "; also " between. */
static size_t apart_why(const struct topo_host *h, const struct topo_choice *c,
                        const struct plane_marks *pm, int p, char *why, size_t cap) {
  const struct topo_port_choice *pc = &c->pc[p];
  size_t o = 0;
  why[0] = 0;
  if (pm->rules[p] & RULE_MAIN) {
    char how[200];
    is_on_main(h, c, p, how, sizeof(how));
    o = strbuf_cat(why, cap, o,
                   "other plane: %s, the main network (%s carries sockets and bootstrap), while %s "
                   "form a separate RDMA plane; a QP between the planes times out at RTR",
                   how, h->ifs.ifs[c->main_if].name, pm->others);
  }
  if (pm->rules[p] & RULE_GPU)
    o =
      strbuf_cat(why, cap, o,
                 "%sstorage or management NIC: the nearest GPU, %s, is %s from it (no shared PCIe "
                 "switch), while every GPU has an RDMA port on its own PCIe switch; NCCL would "
                 "also route GPU traffic through it",
                 o ? "; also " : "", h->gpus[pc->nearest_gpu].name, pci_class_name(pc->gpu_class));
  if (pm->rules[p] & RULE_LL)
    o = strbuf_cat(why, cap, o,
                   "%slink layer %s differs from the %d %s port%s kept; NCCL cannot connect an "
                   "InfiniBand port to a RoCE port",
                   o ? "; also " : "", topo_ll_name(h->ports[p].ll), pm->nkeep,
                   topo_ll_name(pm->keep), pm->nkeep == 1 ? "" : "s");
  return o;
}

static void settle(const struct topo_host *h, struct topo_choice *c, const struct plane_marks *pm,
                   int p) {
  struct topo_port_choice *pc = &c->pc[p];
  char all[sizeof(pc->why)];
  if (!apart_why(h, c, pm, p, all, sizeof(all))) return;
  pc->is_off_plane = true;
  if (pc->verdict == TV_FILTER) return; /* not used anyway; the mark is for diagnoses */
  if (pc->is_user_selected) {
    char label[80];
    topo_port_label(h, p, label, sizeof(label));
    bool breaks_runs = (pm->rules[p] & (RULE_MAIN | RULE_LL)) != 0;
    struct topo_issue *is =
      topo_issue(c, breaks_runs ? TOPO_ERROR : TOPO_WARNING,
                 "NCCL_IB_HCA selects %s, which this host's layout sets apart: %s", label, all);
    if (is) topo_issue_warn(c, is, "%s", is->text);
    return;
  }
  pc->verdict = TV_PLANE;
  /* NCCL's own transport would use it: the port's INFO line and doctor's
   * note say so, with what brings it back. Not a WARN: the layout that
   * sets a port apart is a sound one, and a WARN from every process of
   * every healthy job would teach users to skip WARN lines. */
  strbuf_cat(all, sizeof(all), strlen(all),
             "; to use it anyway, name it in NCCL_IB_HCA or set NCCL_DIAG_PLANES=off");
  scopy(pc->why, sizeof(pc->why), all);
  char label[80];
  topo_port_label(h, p, label, sizeof(label));
  /* a note for reports (no WARN line): the plugin says it in the port's INFO */
  topo_issue(c, TOPO_NOTE, "%s is left out, which NCCL's own IB transport would use: %s", label,
             all);
}

void plane_pass_rules(const struct topo_host *h, struct topo_choice *c) {
  struct plane_marks pm;
  memset(&pm, 0, sizeof(pm));
  rule_gpu(h, c, &pm);
  rule_main(h, c, &pm);
  rule_ll(h, c, &pm);
  for (int p = 0; p < h->nport; p++) settle(h, c, &pm, p);
}
