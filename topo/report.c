/* SPDX-License-Identifier: Apache-2.0 */
/* topo_report: the one pass that tells the plugin's log and event file what
 * topo_decide decided. Order: the WARN of each misconfiguration, the INFO
 * summary, one INFO line and one event per port, per GPU, then the closing
 * "topo_choice" event. */
#include <stdio.h>
#include <string.h>

#include "common/events.h"
#include "common/log.h"
#include "topo/gid.h"
#include "topo/internal.h"

static void report_port(const struct topo_host *h, const struct topo_choice *c, int p) {
  const struct topo_port *pt = &h->ports[p];
  const struct topo_port_choice *pc = &c->pc[p];
  const char *dev = h->hcas[pt->hca].name;
  char gid[64] = "", sub[64] = "";
  for (int k = 0; k < pt->ngid; k++)
    if (pt->gids[k].index == pc->gid.index) gid_str(pt->gids[k].raw, gid, sizeof(gid));
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

static void report_gpu(const struct topo_host *h, const struct topo_choice *c, int g) {
  const struct topo_gpu_choice *gc = &c->gpu_choices[g];
  char list[512] = "";
  size_t o = 0;
  for (int k = 0; k < gc->nnearest && o < sizeof(list); k++) {
    const struct topo_dev *d = &c->dev[gc->nearest[k]];
    char sub[64] = "";
    if (d->subnet.family) ipaddr_subnet_str(&d->subnet, sub, sizeof(sub));
    o = strbuf_cat(list, sizeof(list), o, "%s%s:%d (%s%s%s)", k ? ", " : "", d->name, d->ib_port,
                   d->netdev[0] ? d->netdev : "no netdev", sub[0] ? " " : "", sub);
  }
  INFO(LOG_NET, "%s %s: nearest RDMA device%s %s at %s", h->gpus[g].name, h->gpus[g].busid,
       gc->nnearest > 1 ? "s" : "", gc->nnearest ? list : "(none)",
       pci_class_name(gc->nearest_class));
  struct ev e;
  ev_begin(&e, "topo_gpu");
  ev_str(&e, "gpu", h->gpus[g].name);
  ev_str(&e, "busid", h->gpus[g].busid);
  ev_str(&e, "class", pci_class_name(gc->nearest_class));
  ev_str(&e, "nearest", list);
  ev_end(&e);
}

/* "[0]mlx5_2:1/RoCE [1]mlx5_3:1/RoCE" */
static void dev_list(const struct topo_choice *c, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int d = 0; d < c->ndev && o < cap; d++) {
    const struct topo_dev *dv = &c->dev[d];
    o = strbuf_cat(buf, cap, o, "%s[%d]%s:%d/%s", d ? " " : "", d, dv->name, dv->ib_port,
                   topo_ll_name(dv->ll));
  }
}

/* The closing event of a choice: what NCCL gets, and the totals. */
static void report_choice(const struct topo_host *h, const struct topo_choice *c) {
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
  ev_int(&e, "errors", c->nerror);
  ev_end(&e);
}

void topo_report(const struct topo_host *h, const struct topo_choice *c) {
  for (int i = 0; i < c->nissue; i++)
    if (c->issues[i].warn) WARN("%s", c->issues[i].warn);
  if (c->nissue_lost)
    WARN("%d problem%s of this host's RDMA setup could not be recorded: out of memory",
         c->nissue_lost, c->nissue_lost == 1 ? "" : "s");
  if (c->ndev) {
    char list[768];
    dev_list(c, list, sizeof(list));
    INFO(LOG_INIT, "RDMA ports for NCCL: %s; main interface %s (%s)", list,
         c->main_if >= 0 ? h->ifs.ifs[c->main_if].name : "none", c->main_why);
  }
  for (int p = 0; p < c->nport; p++) report_port(h, c, p);
  for (int g = 0; c->gpu_choices && g < h->ngpu; g++) report_gpu(h, c, g);
  report_choice(h, c);
}
