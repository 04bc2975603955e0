/* SPDX-License-Identifier: Apache-2.0 */
/* Per port: is it up, does NCCL_IB_HCA select it; then NCCL's device order.
 * NCCL_IB_HCA follows NCCL's grammar exactly (topo/filter.h); unlike NCCL,
 * an entry that matches nothing gets a WARN listing what exists, and a
 * prefix that also catches longer names (mlx5_1 -> mlx5_10) is pointed out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "topo/filter.h"
#include "topo/internal.h"

#define PORT_ACTIVE 4

static void state_reason(const struct topo_port *pt, char *why, size_t cap) {
  const char *cause;
  switch (pt->state) {
  case 1:
    cause = pt->phys_state == 3
              ? "the port is disabled; enable it (ip link set <netdev> up, or the "
                "switch port)"
            : pt->phys_state == 2 ? "the link is polling for a peer: cable unplugged or the switch "
                                    "port is down"
                                  : "the link is down";
    break;
  case 2:
    cause = pt->ll == TOPO_LL_IB ? "no subnet manager has configured it; start opensm or check the "
                                   "fabric's SM"
                                 : "the link is still initialising";
    break;
  case 3: cause = "the subnet manager armed it but has not activated it"; break;
  case 5: cause = "active-defer: the link is recovering from an error"; break;
  default: cause = "its state could not be read"; break;
  }
  snprintf(why, cap, "state %s (physical %s): %s", pt->state_text[0] ? pt->state_text : "unknown",
           pt->phys_state_text[0] ? pt->phys_state_text : "unknown", cause);
}

/* Ports an entry matches, as "mlx5_2:1, mlx5_3:1"; *is_usable gets whether
 * any of them is ACTIVE. */
static int entry_matches(const struct topo_host *h, const struct filter *f, int e, char *list,
                         size_t cap, bool *is_usable, bool *names_other) {
  int n = 0;
  size_t o = 0;
  list[0] = 0;
  *is_usable = *names_other = false;
  for (int p = 0; p < h->nport; p++) {
    const char *name = h->hcas[h->ports[p].hca].name;
    if (!filter_entry_matches(f, e, name, h->ports[p].num)) continue;
    n++;
    *is_usable |= h->ports[p].state == PORT_ACTIVE;
    if (strcmp(name, f->entries[e].name)) *names_other = true;
    if (o < cap) o = strbuf_cat(list, cap, o, "%s%s:%d", o ? ", " : "", name, h->ports[p].num);
  }
  return n;
}

static void all_ports(const struct topo_host *h, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int p = 0; p < h->nport && o < cap; p++)
    o = strbuf_cat(buf, cap, o, "%s%s:%d (%s)", p ? ", " : "", h->hcas[h->ports[p].hca].name,
                   h->ports[p].num, h->ports[p].state_text);
  if (!h->nport) snprintf(buf, cap, "no RDMA port at all");
}

static void check_entries(const struct topo_host *h, struct topo_choice *c, const struct filter *f,
                          const char *text) {
  char have[1024], none[512] = "";
  size_t o = 0;
  int nnone = 0;
  all_ports(h, have, sizeof(have));
  for (int e = 0; e < f->nentry; e++) {
    char list[512];
    bool is_usable, names_other;
    int n = entry_matches(h, f, e, list, sizeof(list), &is_usable, &names_other);
    if (n == 0) {
      if (o < sizeof(none))
        o = strbuf_cat(none, sizeof(none), o, "%s'%s'", o ? ", " : "", f->entries[e].name);
      nnone++;
    } else if (!is_usable && !f->is_exclude) {
      topo_issue(c, TOPO_WARNING,
                 "NCCL_IB_HCA entry '%s' only matches ports that are not ACTIVE: %s",
                 f->entries[e].name, list);
    } else if (names_other && !f->is_exact) {
      struct topo_issue *is =
        topo_issue(c, TOPO_WARNING,
                   "NCCL_IB_HCA entry '%s' is a prefix: it %s %s; write '%s=%s...' for exact names",
                   f->entries[e].name, f->is_exclude ? "excludes" : "selects", list,
                   f->is_exclude ? "^" : "", f->entries[e].name);
      topo_issue_warn(c, is,
                      "NCCL_IB_HCA=%s: entry '%s' is a prefix and also %s %s; write '%s=%s' to "
                      "name exact devices",
                      text, f->entries[e].name, f->is_exclude ? "excludes" : "selects", list,
                      f->is_exclude ? "^" : "", f->entries[e].name);
    }
  }
  if (!nnone) return;
  struct topo_issue *is =
    topo_issue(c, f->is_exclude ? TOPO_WARNING : TOPO_ERROR,
               "NCCL_IB_HCA=%s: %s %s %s no RDMA port; this host has %s", text,
               nnone == 1 ? "entry" : "entries", none, nnone == 1 ? "matches" : "match", have);
  if (is) topo_issue_warn(c, is, "%s", is->text);
}

/* Applies the filter to port p; whether it selects the port. */
static bool filter_port(const struct topo_host *h, struct topo_choice *c, struct filter *f, int p) {
  const char *name = h->hcas[h->ports[p].hca].name;
  int num = h->ports[p].num;
  struct topo_port_choice *pc = &c->pc[p];
  bool is_selected = filter_select(f, name, num);
  for (int e = 0; e < f->nentry && is_selected && !f->is_exclude; e++) {
    if (!filter_entry_matches(f, e, name, num)) continue;
    if (pc->rail < 0) pc->rail = f->entries[e].rail, pc->plane = f->entries[e].plane;
    if (!strcmp(f->entries[e].name, name)) pc->is_user_selected = true;
  }
  return is_selected;
}

void hca_pass_ports(const struct topo_host *h, struct topo_choice *c) {
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port *pt = &h->ports[p];
    struct topo_port_choice *pc = &c->pc[p];
    if (c->prefs.is_ib_disabled) {
      pc->verdict = TV_DISABLED;
      snprintf(pc->why, sizeof(pc->why), "RDMA disabled by NCCL_IB_DISABLE=1");
    } else if (pt->state != PORT_ACTIVE) {
      pc->verdict = TV_STATE;
      state_reason(pt, pc->why, sizeof(pc->why));
    } else if (pt->ll == TOPO_LL_UNKNOWN) {
      pc->verdict = TV_STATE;
      snprintf(pc->why, sizeof(pc->why), "link layer is neither InfiniBand nor Ethernet");
    }
  }
}

void hca_pass_filter(const struct topo_host *h, struct topo_choice *c) {
  const char *text = c->prefs.hca_filter;
  if (!text || !*text) return;
  struct filter f;
  char why[256];
  if (filter_parse(text, &f, why, sizeof(why))) {
    struct topo_issue *is =
      topo_issue(c, TOPO_ERROR, "NCCL_IB_HCA=\"%s\" is not valid (%s) and is ignored", text, why);
    topo_issue_warn(c, is,
                    "NCCL_IB_HCA=\"%s\" is not valid: %s; accepted: "
                    "[^][=]name[:port][,name[:port]...] (e.g. =mlx5_2:1,mlx5_3:1 or ^mlx5_bond_0); "
                    "ignoring it",
                    text, why);
    return;
  }
  /* Every port, usable or not: the rail and plane fields and an exact
   * name count for every port the user named. */
  for (int p = 0; p < h->nport; p++) {
    struct topo_port_choice *pc = &c->pc[p];
    if (!filter_port(h, c, &f, p) && pc->verdict == TV_CHOSEN) {
      pc->verdict = TV_FILTER;
      snprintf(pc->why, sizeof(pc->why), "%s NCCL_IB_HCA=%s",
               f.is_exclude ? "excluded by" : "not in", text);
    }
  }
  check_entries(h, c, &f, text);
}

/* NCCL's topology key: the PCI path with the function digit zeroed and, as
 * NCCL_IB_MERGE_VFS=1 does, the device digits too, so the ports and virtual
 * functions of one adapter share a node. */
static void norm_path(const char *path, char *out, size_t cap) {
  scopy(out, cap, path);
  size_t n = strlen(out);
  if (n >= 4 && out[n - 2] == '.') {
    out[n - 1] = '0';
    out[n - 3] = out[n - 4] = '0';
  }
}

static int dev_cmp(const void *x, const void *y, void *arg) {
  const struct topo_host *h = arg;
  const struct topo_port *a = &h->ports[*(const int *)x], *b = &h->ports[*(const int *)y];
  const struct topo_hca *ha = &h->hcas[a->hca], *hb = &h->hcas[b->hca];
  if (!ha->busid[0] != !hb->busid[0]) return ha->busid[0] ? -1 : 1; /* no PCI path: last */
  int r = ha->busid[0] ? pci_busid_cmp(ha->busid, hb->busid) : 0;
  if (!r) r = strverscmp(ha->name, hb->name);
  return r ? r : a->num - b->num;
}

static void fill_dev(const struct topo_host *h, struct topo_choice *c, int p, int d) {
  const struct topo_port *pt = &h->ports[p];
  const struct topo_hca *hca = &h->hcas[pt->hca];
  struct topo_port_choice *pc = &c->pc[p];
  struct topo_dev *dv = &c->dev[d];
  memset(dv, 0, sizeof(*dv));
  dv->port = p;
  dv->hca = pt->hca;
  dv->name = hca->name;
  dv->ib_port = pt->num;
  dv->gid_index = pc->gid.index;
  for (int k = 0; k < pt->ngid; k++)
    if (pt->gids[k].index == pc->gid.index) {
      memcpy(dv->gid, pt->gids[k].raw, 16);
      dv->gid_type = pt->gids[k].type;
    }
  dv->netdev = pt->netdev;
  if (pc->has_addr) dv->subnet = pc->addr;
  dv->mtu = pt->active_mtu;
  dv->ll = pt->ll;
  dv->pci_path = hca->pci_path;
  dv->numa = hca->numa;
  dv->speed_mbps = pt->speed_mbps;
  dv->lid = pt->lid;
  dv->guid = hca->sys_image_guid;
  dv->rail = pc->rail;
  dv->plane = pc->plane;
  dv->off_plane = pc->is_off_plane;
  dv->pkey = pc->pkey;
  dv->is_vf = hca->pf_busid[0] != 0;
  /* NCCL's realPort counts earlier devices of the same adapter; a virtual
   * function is not another port of it, whatever its folded path says. */
  char key[PATH_MAX], other[PATH_MAX];
  norm_path(hca->pci_path, key, sizeof(key));
  for (int e = 0; e < d && !dv->is_vf; e++) {
    norm_path(c->dev[e].pci_path, other, sizeof(other));
    if (hca->pci_path[0] && !c->dev[e].is_vf && !strcmp(key, other)) dv->real_port++;
  }
  pc->dev = d;
}

void hca_sort_ports(const struct topo_host *h, int *ports, int n) {
  qsort_r(ports, (size_t)n, sizeof(int), dev_cmp, (void *)h);
}

void hca_pass_devices(const struct topo_host *h, struct topo_choice *c) {
  int idx[TOPO_MAX_PORTS], n = 0;
  for (int p = 0; p < h->nport; p++)
    if (c->pc[p].verdict == TV_CHOSEN) idx[n++] = p;
  hca_sort_ports(h, idx, n);
  c->ndev = 0;
  for (int i = 0; i < n; i++) {
    struct topo_port_choice *pc = &c->pc[idx[i]];
    if (c->ndev == TOPO_MAX_DEVS) {
      pc->verdict = TV_LIMIT;
      snprintf(pc->why, sizeof(pc->why), "NCCL takes at most %d RDMA ports", TOPO_MAX_DEVS);
      continue;
    }
    fill_dev(h, c, idx[i], c->ndev++);
  }
}
