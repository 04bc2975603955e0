/* SPDX-License-Identifier: Apache-2.0 */
/* topo_decide: from a discovered host and the knobs to the device list,
 * every decision with its reason, in the pass order topo/topo.h lists. It
 * logs nothing and emits no event (topo/report.c does), so doctor and the
 * plugin run the very same decisions. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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
  p->is_planes_auto = knob_enum(K_DIAG_PLANES) != PLANES_OFF;
  p->is_ib_disabled = knob_int(K_IB_DISABLE) != 0;
  p->pkey_index = (int)knob_int(K_IB_PKEY);
}

/* Pass 1, sockets: NCCL_SOCKET_IFNAME with NCCL's grammar, and NCCL's own
 * choice beside it. First, because the main interface (pass 6) and the
 * advice read them. */
static void pass_sockets(const struct topo_host *h, struct topo_choice *c) {
  netif_choose(&h->ifs, c->prefs.socket_ifname, c->prefs.socket_family, &c->sock);
  netif_nccl_choose(&h->ifs, c->prefs.socket_ifname, c->prefs.socket_family, &c->nccl_sock);
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
    topo_issue_warn(c, is,
                    "NCCL_IB_ADDR_RANGE=\"%s\" is not valid; accepted: an address range in CIDR "
                    "form such as 10.1.0.0/16 or fd00::/64; ignoring it",
                    text);
  } else if (g->range.family != g->family) {
    is = topo_issue(c, TOPO_WARNING,
                    "NCCL_IB_ADDR_RANGE=%s does not match NCCL_IB_ADDR_FAMILY=%s and is ignored",
                    text, fam);
    topo_issue_warn(
      c, is, "NCCL_IB_ADDR_RANGE=%s is not an %s range (NCCL_IB_ADDR_FAMILY=%s); ignoring it", text,
      g->family == AF_INET ? "IPv4" : "IPv6", fam);
  } else {
    g->has_range = true;
  }
}

static void set_addr(const struct topo_port *pt, struct topo_port_choice *pc) {
  for (int k = 0; k < pt->ngid; k++) {
    if (pt->gids[k].index != pc->gid.index || pt->ll != TOPO_LL_ETH) continue;
    gid_to_ipaddr(pt->gids[k].raw, &pc->addr);
    pc->addr.prefix = pt->gids[k].prefix;
    pc->has_addr = true;
  }
}

/* Pass 4, GIDs: each port the filter kept or left out gets its GID pick
 * (the plane rules count usable ports the filter left out); a kept port
 * without a usable GID is refused. */
static void pass_gids(const struct topo_host *h, struct topo_choice *c) {
  struct gid_prefs g = {c->prefs.addr_family, c->prefs.roce_version, 0, {0}, c->prefs.gid_index};
  range_prefs(c, &g);
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port *pt = &h->ports[p];
    struct topo_port_choice *pc = &c->pc[p];
    pc->gid.index = -1;
    if (pc->verdict != TV_CHOSEN && pc->verdict != TV_FILTER) continue;
    if (pt->ll == TOPO_LL_IB) gid_pick_ib(pt->gids, pt->ngid, g.forced_index, &pc->gid);
    else gid_pick_roce(pt->gids, pt->ngid, pt->gid_tbl_len, &g, &pc->gid);
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
    topo_issue_warn(c, is, "device %s port %d: %s", h->hcas[h->ports[p].hca].name, h->ports[p].num,
                    pc->gid.note);
    if (pc->gid.auto_index >= 0)
      topo_issue_fix(c, is, "unset NCCL_IB_GID_INDEX: the automatic choice here is GID %d",
                     pc->gid.auto_index);
    else topo_issue_fix(c, is, "unset NCCL_IB_GID_INDEX; no GID of this port qualifies (see why)");
  }
}

/* Pass 11, why none: with no device, the one line that says why. */
static void pass_why_none(const struct topo_host *h, struct topo_choice *c) {
  if (c->ndev) return;
  if (!h->has_rdma) {
    snprintf(c->why_none, sizeof(c->why_none), "%s", h->why_no_rdma);
    return;
  }
  size_t o = (size_t)snprintf(c->why_none, sizeof(c->why_none), "no usable RDMA port:");
  for (int p = 0; p < h->nport && o < sizeof(c->why_none); p++) {
    char label[80];
    topo_port_label(h, p, label, sizeof(label));
    o = strbuf_cat(c->why_none, sizeof(c->why_none), o, "%s %s (%s)", p ? ";" : "", label,
                   c->pc[p].why);
  }
  if (!h->nport) snprintf(c->why_none + o, sizeof(c->why_none) - o, " the devices have no ports");
}

/* Hands out n bytes of the block at *off, aligned for anything. */
static size_t carve(size_t *off, size_t n) {
  size_t at = *off;
  *off += (n + _Alignof(max_align_t) - 1) / _Alignof(max_align_t) * _Alignof(max_align_t);
  return at;
}

/* The arrays sized by the host, in one zeroed block: a choice per port
 * (each with room for a verdict on every populated GID), room for a device
 * per port, a choice per GPU with its distance to every port and room for
 * every device. 0 or ENOMEM. */
static int choice_alloc(const struct topo_host *h, struct topo_choice *c) {
  size_t nport = (size_t)h->nport, ngpu = (size_t)h->ngpu, ngid = 0, off = 0;
  size_t ndev = nport < TOPO_MAX_DEVS ? nport : TOPO_MAX_DEVS;
  for (int p = 0; p < h->nport; p++) ngid += (size_t)h->ports[p].ngid;
  size_t at_pc = carve(&off, nport * sizeof(*c->pc));
  size_t at_dev = carve(&off, ndev * sizeof(*c->dev));
  size_t at_gc = carve(&off, ngpu * sizeof(*c->gpu_choices));
  size_t at_rej = carve(&off, ngid * sizeof(*c->pc->gid.rejects));
  size_t at_class = carve(&off, ngpu * nport * sizeof(*c->gpu_choices->port_classes));
  size_t at_near = carve(&off, ngpu * ndev * sizeof(*c->gpu_choices->nearest));
  if (!off) return 0;
  char *block = calloc(1, off);
  if (!block) {
    snprintf(c->why_none, sizeof(c->why_none), "out of memory for the topology choice (%zu bytes)",
             off);
    return ENOMEM;
  }
  c->block = block;
  c->pc = (struct topo_port_choice *)(block + at_pc);
  c->dev = (struct topo_dev *)(block + at_dev);
  c->gpu_choices = (struct topo_gpu_choice *)(block + at_gc);
  struct topo_gid_reject *rej = (struct topo_gid_reject *)(block + at_rej);
  for (int p = 0; p < h->nport; rej += h->ports[p++].ngid) c->pc[p].gid.rejects = rej;
  for (size_t g = 0; g < ngpu; g++) {
    c->gpu_choices[g].port_classes = (enum pci_class *)(block + at_class) + g * nport;
    c->gpu_choices[g].nearest = (int *)(block + at_near) + g * ndev;
  }
  return 0;
}

void topo_choice_free(struct topo_choice *c) {
  for (int i = 0; i < c->nissue; i++) {
    free(c->issues[i].text);
    free(c->issues[i].warn);
    free(c->issues[i].fix);
  }
  free(c->issues);
  free(c->block);
  memset(c, 0, sizeof(*c));
}

int topo_decide(const struct topo_host *h, const struct topo_prefs *p, struct topo_choice *c) {
  memset(c, 0, sizeof(*c));
  if (p) c->prefs = *p;
  else topo_prefs_from_knobs(&c->prefs);
  c->main_if = -1;
  if (choice_alloc(h, c)) return ENOMEM;
  c->nport = h->nport;
  for (int i = 0; i < h->nport; i++) {
    c->pc[i].dev = c->pc[i].rail = c->pc[i].plane = c->pc[i].pkey = -1;
    c->pc[i].verdict = TV_CHOSEN;
  }
  /* The order topo/topo.h documents; each pass reads what the ones before
   * it decided. */
  pass_sockets(h, c);                                  /*  1 */
  hca_pass_ports(h, c);                                /*  2 */
  hca_pass_filter(h, c);                               /*  3 */
  pass_gids(h, c);                                     /*  4 */
  gpu_pass_distances(h, c);                            /*  5 */
  plane_pass_main_interface(h, c);                     /*  6 */
  if (c->prefs.is_planes_auto) plane_pass_rules(h, c); /*  7 */
  pass_forced_gids(h, c);                              /*  8 */
  pkey_pass(h, c);                                     /*  8 */
  sriov_pass(h, c);                                    /*  8 */
  linkrate_pass(h, c);                                 /*  8 */
  hca_pass_devices(h, c);                              /*  9 */
  gpu_pass_nearest(h, c);                              /* 10 */
  pass_why_none(h, c);                                 /* 11 */
  advice_pass_settings(h, c);                          /* 12 */
  return 0;
}
