/* SPDX-License-Identifier: Apache-2.0 */
/* topo_choose: from a discovered host and the knobs to the device list,
 * with every decision logged, reported as an event and explained. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/events.h"
#include "common/knobs.h"
#include "common/log.h"
#include "common/strutil.h"
#include "topo/gid.h"
#include "topo/internal.h"

void topo_prefs_from_knobs(struct topo_prefs *p) {
  memset(p, 0, sizeof(*p));
  p->hca_filter = knob_str(K_IB_HCA);
  p->gid_index = (int)knob_int(K_IB_GID_INDEX);
  p->addr_family = knob_enum(K_IB_ADDR_FAMILY) == 1 ? AF_INET6 : AF_INET;
  p->addr_range = knob_str(K_IB_ADDR_RANGE);
  p->roce_version = (int)knob_int(K_IB_ROCE_VERSION_NUM);
  p->socket_ifname = knob_str(K_SOCKET_IFNAME);
  int fam = knob_enum(K_SOCKET_FAMILY);
  p->socket_family = fam == 0 ? AF_INET : fam == 1 ? AF_INET6 : AF_UNSPEC;
  p->planes = knob_enum(K_DIAG_PLANES) != PLANES_OFF;
  p->ib_disable = (int)knob_int(K_IB_DISABLE);
}

void topo_issue(struct topo_choice *c, enum topo_sev sev, const char *fmt, ...) {
  if (sev == TOPO_ERROR) c->errors++;
  if (c->nissue == TOPO_MAX_ISSUES) return;
  struct topo_issue *i = &c->issue[c->nissue++];
  i->sev = sev;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(i->text, sizeof(i->text), fmt, ap);
  va_end(ap);
}

/* NCCL_IB_ADDR_RANGE: a CIDR of the chosen family, else ignored (as NCCL). */
static void range_prefs(struct topo_choice *c, struct gid_prefs *g) {
  const char *text = c->prefs.addr_range;
  if (!text || !*text) return;
  const char *fam = g->family == AF_INET ? "AF_INET" : "AF_INET6";
  if (!strchr(text, '/') || ipaddr_parse(&g->range, text)) {
    if (!c->quiet)
      WARN("NCCL_IB_ADDR_RANGE=\"%s\" is not valid; accepted: an address range in CIDR form such "
           "as 10.1.0.0/16 or fd00::/64; ignoring it",
           text);
    topo_issue(c, TOPO_WARNING, "NCCL_IB_ADDR_RANGE=\"%s\" is not a CIDR range and is ignored",
               text);
  } else if (g->range.family != g->family) {
    if (!c->quiet)
      WARN("NCCL_IB_ADDR_RANGE=%s is not an %s range (NCCL_IB_ADDR_FAMILY=%s); ignoring it", text,
           g->family == AF_INET ? "IPv4" : "IPv6", fam);
    topo_issue(c, TOPO_WARNING,
               "NCCL_IB_ADDR_RANGE=%s does not match NCCL_IB_ADDR_FAMILY=%s and is ignored", text,
               fam);
  } else {
    g->have_range = 1;
  }
}

static void set_addr(const struct topo_port *pt, struct topo_port_choice *pc) {
  for (int k = 0; k < pt->ngid; k++) {
    if (pt->gid[k].index != pc->gid.index || pt->ll != TOPO_LL_ETH) continue;
    gid_to_ipaddr(pt->gid[k].raw, &pc->addr);
    pc->addr.prefix = pt->gid[k].prefix;
    pc->has_addr = 1;
  }
}

void gid_choose_all(const struct topo_host *h, struct topo_choice *c) {
  struct gid_prefs g = {c->prefs.addr_family, c->prefs.roce_version, 0, {0}, c->prefs.gid_index};
  range_prefs(c, &g);
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port *pt = &h->port[p];
    struct topo_port_choice *pc = &c->pc[p];
    pc->gid.index = -1;
    if (pc->verdict != TV_CHOSEN && pc->verdict != TV_FILTER) continue;
    if (pt->ll == TOPO_LL_IB) gid_pick_ib(pt->gid, pt->ngid, g.forced, &pc->gid);
    else gid_pick_roce(pt->gid, pt->ngid, pt->gid_tbl_len, &g, &pc->gid);
    set_addr(pt, pc);
    if (pc->verdict == TV_CHOSEN && pc->gid.index < 0) {
      pc->verdict = TV_GID;
      scopy(pc->why, sizeof(pc->why), pc->gid.note);
    }
  }
}

/* A forced index's problem, on the ports that stay chosen. */
static void gid_report(const struct topo_host *h, struct topo_choice *c) {
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port_choice *pc = &c->pc[p];
    if (pc->verdict != TV_CHOSEN || !pc->gid.severity) continue;
    char label[80];
    topo_port_label(h, p, label, sizeof(label));
    if (!c->quiet)
      WARN("device %s port %d: %s", h->hca[h->port[p].hca].name, h->port[p].num, pc->gid.note);
    topo_issue(c, pc->gid.severity == 2 ? TOPO_ERROR : TOPO_WARNING, "%s: %s", label, pc->gid.note);
  }
}

static void log_port(const struct topo_host *h, const struct topo_choice *c, int p) {
  const struct topo_port *pt = &h->port[p];
  const struct topo_port_choice *pc = &c->pc[p];
  const char *dev = h->hca[pt->hca].name;
  char gid[64] = "", sub[64] = "";
  for (int k = 0; k < pt->ngid; k++)
    if (pt->gid[k].index == pc->gid.index) gid_str(pt->gid[k].raw, gid, sizeof(gid));
  if (pc->has_addr && pc->addr.prefix >= 0) ipaddr_subnet_str(&pc->addr, sub, sizeof(sub));
  if (pc->verdict == TV_CHOSEN)
    INFO(LOG_NET, "device %s port %d: chosen as [%d], %s, GID %d %s, netdev %s%s%s", dev, pt->num,
         pc->dev, topo_ll_name(pt->ll), pc->gid.index, gid, pt->netdev[0] ? pt->netdev : "none",
         sub[0] ? " " : "", sub);
  else INFO(LOG_NET, "device %s port %d: not used: %s", dev, pt->num, pc->why);
  struct ev e;
  ev_begin(&e, "topo_port");
  ev_str(&e, "device", dev);
  ev_int(&e, "port", pt->num);
  ev_str(&e, "verdict", topo_verdict_name(pc->verdict));
  ev_str(&e, "why", pc->why);
  ev_int(&e, "nccl_dev", pc->dev);
  ev_str(&e, "link_layer", topo_ll_name(pt->ll));
  ev_int(&e, "gid_index", pc->gid.index);
  ev_str(&e, "gid", gid);
  ev_str(&e, "netdev", pt->netdev);
  ev_str(&e, "subnet", sub);
  ev_end(&e);
}

/* "[0]mlx5_2:1/RoCE [1]mlx5_3:1/RoCE" */
static void dev_list(const struct topo_choice *c, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int d = 0; d < c->ndev && o < cap; d++) {
    const struct topo_dev *dv = &c->dev[d];
    o = topo_cat(buf, cap, o, "%s[%d]%s:%d/%s", d ? " " : "", d, dv->name, dv->ib_port,
                 topo_ll_name(dv->ll));
  }
}

/* The closing event of a choice: what NCCL gets, and the totals. */
static void emit_choice(const struct topo_host *h, const struct topo_choice *c) {
  char list[768];
  dev_list(c, list, sizeof(list));
  struct ev e;
  ev_begin(&e, "topo_choice");
  ev_int(&e, "devices", c->ndev);
  ev_str(&e, "list", list);
  ev_str(&e, "why_none", c->ndev ? "" : c->why_none);
  ev_str(&e, "main_interface", c->main_if >= 0 ? h->ifs.ifs[c->main_if].name : "");
  ev_str(&e, "main_why", c->main_why);
  ev_str(&e, "pci_source", h->pci_source);
  ev_int(&e, "errors", c->errors);
  ev_end(&e);
}

static void summarize(const struct topo_host *h, struct topo_choice *c) {
  if (c->ndev) {
    char list[768];
    dev_list(c, list, sizeof(list));
    INFO(LOG_INIT, "RDMA ports for NCCL: %s; main interface %s (%s)", list,
         c->main_if >= 0 ? h->ifs.ifs[c->main_if].name : "none", c->main_why);
    return;
  }
  if (!h->rdma_present) {
    snprintf(c->why_none, sizeof(c->why_none), "%s", h->no_rdma);
    return;
  }
  size_t o = (size_t)snprintf(c->why_none, sizeof(c->why_none), "no usable RDMA port:");
  for (int p = 0; p < h->nport && o < sizeof(c->why_none); p++) {
    char label[80];
    topo_port_label(h, p, label, sizeof(label));
    o = topo_cat(c->why_none, sizeof(c->why_none), o, "%s %s (%s)", p ? ";" : "", label,
                 c->pc[p].why);
  }
  if (!h->nport) snprintf(c->why_none + o, sizeof(c->why_none) - o, " the devices have no ports");
}

/* Every decision but the advice; c->prefs and c->quiet are set. */
void topo_decide(const struct topo_host *h, struct topo_choice *c) {
  c->nport = h->nport;
  for (int i = 0; i < h->nport; i++) {
    c->pc[i].dev = c->pc[i].rail = c->pc[i].plane = -1;
    c->pc[i].verdict = TV_CHOSEN;
  }
  netif_choose(&h->ifs, c->prefs.socket_ifname, c->prefs.socket_family, &c->sock);
  if (c->sock.n == 0) topo_issue(c, TOPO_ERROR, "no usable socket interface: %s", c->sock.error);
  hca_screen(h, c);
  gid_choose_all(h, c);
  gpu_choose(h, c);
  plane_main_interface(h, c);
  if (c->prefs.planes) plane_apply(h, c);
  gid_report(h, c);
  hca_order(h, c);
  gpu_choose(h, c);
}

int topo_choose(const struct topo_host *h, const struct topo_prefs *p, struct topo_choice *c) {
  memset(c, 0, sizeof(*c));
  if (p) c->prefs = *p;
  else topo_prefs_from_knobs(&c->prefs);
  topo_decide(h, c);
  summarize(h, c);
  advice_build(h, c);
  for (int i = 0; i < h->nport; i++) log_port(h, c, i);
  gpu_log_all(h, c);
  emit_choice(h, c);
  return 0;
}
