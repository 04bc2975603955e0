/* SPDX-License-Identifier: Apache-2.0 */
/* topo_decide: from a discovered host and the knobs to the device list,
 * every decision with its reason, in the pass order topo/topo.h lists. It
 * logs nothing and emits no event (topo/report.c does), so doctor and the
 * plugin run the very same decisions. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/knobs.h"
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

struct topo_issue *topo_issue(struct topo_choice *c, enum topo_sev sev, const char *fmt, ...) {
  if (sev == TOPO_ERROR) c->errors++;
  if (c->nissue == TOPO_MAX_ISSUES) return NULL;
  struct topo_issue *i = &c->issue[c->nissue++];
  i->sev = sev;
  i->warn[0] = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(i->text, sizeof(i->text), fmt, ap);
  va_end(ap);
  return i;
}

void topo_issue_warn(struct topo_issue *i, const char *fmt, ...) {
  if (!i) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(i->warn, sizeof(i->warn), fmt, ap);
  va_end(ap);
}

/* Pass 1, sockets: NCCL_SOCKET_IFNAME exactly as NCCL applies it. First,
 * because the main interface (pass 6) and the advice read it. */
static void pass_sockets(const struct topo_host *h, struct topo_choice *c) {
  netif_choose(&h->ifs, c->prefs.socket_ifname, c->prefs.socket_family, &c->sock);
  if (c->sock.n == 0) topo_issue(c, TOPO_ERROR, "no usable socket interface: %s", c->sock.error);
}

/* NCCL_IB_ADDR_RANGE: a CIDR of the chosen family, else ignored (as NCCL). */
static void range_prefs(struct topo_choice *c, struct gid_prefs *g) {
  const char *text = c->prefs.addr_range;
  if (!text || !*text) return;
  const char *fam = g->family == AF_INET ? "AF_INET" : "AF_INET6";
  struct topo_issue *is;
  if (!strchr(text, '/') || ipaddr_parse(&g->range, text)) {
    is = topo_issue(c, TOPO_WARNING, "NCCL_IB_ADDR_RANGE=\"%s\" is not a CIDR range and is ignored",
                    text);
    topo_issue_warn(is,
                    "NCCL_IB_ADDR_RANGE=\"%s\" is not valid; accepted: an address range in CIDR "
                    "form such as 10.1.0.0/16 or fd00::/64; ignoring it",
                    text);
  } else if (g->range.family != g->family) {
    is = topo_issue(c, TOPO_WARNING,
                    "NCCL_IB_ADDR_RANGE=%s does not match NCCL_IB_ADDR_FAMILY=%s and is ignored",
                    text, fam);
    topo_issue_warn(
      is, "NCCL_IB_ADDR_RANGE=%s is not an %s range (NCCL_IB_ADDR_FAMILY=%s); ignoring it", text,
      g->family == AF_INET ? "IPv4" : "IPv6", fam);
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

/* Pass 4, GIDs: each port the filter kept or left out gets its GID pick
 * (the plane rules count usable ports the filter left out); a kept port
 * without a usable GID is refused. */
static void pass_gids(const struct topo_host *h, struct topo_choice *c) {
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

/* Pass 8, forced GIDs: a forced index's problem, on the ports that stay
 * chosen after the plane rules. */
static void pass_forced_gids(const struct topo_host *h, struct topo_choice *c) {
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port_choice *pc = &c->pc[p];
    if (pc->verdict != TV_CHOSEN || !pc->gid.severity) continue;
    char label[80];
    topo_port_label(h, p, label, sizeof(label));
    struct topo_issue *is = topo_issue(c, pc->gid.severity == 2 ? TOPO_ERROR : TOPO_WARNING,
                                       "%s: %s", label, pc->gid.note);
    topo_issue_warn(is, "device %s port %d: %s", h->hca[h->port[p].hca].name, h->port[p].num,
                    pc->gid.note);
  }
}

/* Pass 11, why none: with no device, the one line that says why. */
static void pass_why_none(const struct topo_host *h, struct topo_choice *c) {
  if (c->ndev) return;
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

int topo_decide(const struct topo_host *h, const struct topo_prefs *p, struct topo_choice *c) {
  memset(c, 0, sizeof(*c));
  if (p) c->prefs = *p;
  else topo_prefs_from_knobs(&c->prefs);
  c->nport = h->nport;
  for (int i = 0; i < h->nport; i++) {
    c->pc[i].dev = c->pc[i].rail = c->pc[i].plane = -1;
    c->pc[i].verdict = TV_CHOSEN;
  }
  pass_sockets(h, c);
  hca_pass_state(h, c);
  hca_pass_filter(h, c);
  pass_gids(h, c);
  gpu_pass_distances(h, c);
  plane_main_interface(h, c);
  if (c->prefs.planes) plane_apply(h, c);
  pass_forced_gids(h, c);
  hca_order(h, c);
  gpu_pass_nearest(h, c);
  pass_why_none(h, c);
  advice_build(h, c);
  return 0;
}
