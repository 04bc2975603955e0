/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA devices, ports and GID tables, read from class/infiniband under the
 * sysfs root. Every file may be missing or unreadable: a container maps
 * only some GID entries (reading gid_attrs/types/<i> gives EINVAL), an old
 * kernel has no gid_attrs at all. Such entries are recorded as notes and
 * the rest carries on. Fixtures list the files a real kernel would refuse
 * in ports/<p>/x-diag-unreadable; they read as EINVAL here too. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/strutil.h"
#include "topo/gid.h"
#include "topo/internal.h"
#include "topo/sysfs.h"

#define GID_TBL_SCAN_MAX 1024

struct port_ctx {
  const char *dev;
  int num;
  char unreadable[2048]; /* the fixture's list, one name a line */
};

static bool is_listed_unreadable(const struct port_ctx *p, const char *rel) {
  size_t n = strlen(rel);
  for (const char *s = p->unreadable; (s = strstr(s, rel)); s += n)
    if ((s == p->unreadable || s[-1] == '\n') && (s[n] == '\n' || s[n] == 0)) return true;
  return false;
}

/* A port file: 0 or an errno (EINVAL for what the fixture lists as unreadable). */
static int port_str(const struct port_ctx *p, char *buf, size_t cap, const char *rel) {
  if (is_listed_unreadable(p, rel)) {
    buf[0] = 0;
    return EINVAL;
  }
  return sysfs_read_str(buf, cap, "class/infiniband/%s/ports/%d/%s", p->dev, p->num, rel);
}

/* "4: ACTIVE" -> 4 and "ACTIVE". */
static void parse_state(const char *s, int *num, char *txt, size_t cap) {
  char *end;
  *num = (int)strtol(s, &end, 10);
  while (*end == ':' || *end == ' ') end++;
  scopy(txt, cap, end);
}

/* "100 Gb/sec (4X EDR)" -> 100000 Mb/s, 4 lanes. */
static void parse_rate(struct topo_port *pt) {
  char *end;
  double gb = strtod(pt->rate, &end);
  if (end != pt->rate && gb > 0) pt->speed_mbps = (int)(gb * 1000 + 0.5);
  const char *paren = strchr(pt->rate, '(');
  if (paren) pt->width = atoi(paren + 1);
}

static long port_long(const struct port_ctx *p, const char *rel, long dflt) {
  char buf[64];
  if (port_str(p, buf, sizeof(buf), rel)) return dflt;
  char *end;
  long v = strtol(buf, &end, 0);
  return end == buf ? dflt : v;
}

static void read_gid_attrs(struct topo_host *h, const struct port_ctx *p, struct topo_port *pt,
                           struct topo_gid *g) {
  char rel[64], buf[64];
  snprintf(rel, sizeof(rel), "gid_attrs/types/%d", g->index);
  int rt = port_str(p, buf, sizeof(buf), rel);
  g->type_errno = rt;
  g->type = rt ? GID_TYPE_UNKNOWN : gid_type_parse(buf);
  snprintf(rel, sizeof(rel), "gid_attrs/ndevs/%d", g->index);
  int rn = port_str(p, g->netdev, sizeof(g->netdev), rel);
  g->netdev_errno = rn;
  /* InfiniBand GIDs have no netdev: a missing or refused ndevs entry is normal there. */
  if (pt->ll != TOPO_LL_ETH || rn == ENOENT) rn = 0;
  if (!rt && !rn) return;
  int err = rt ? rt : rn;
  topo_note(h, "%s port %d GID %d: gid_attrs/%s%s%s unreadable (%s)%s", p->dev, p->num, g->index,
            rt ? "types" : "", rt && rn ? " and " : "", rn ? "ndevs" : "", strerror(err),
            err == EINVAL ? ": an entry this network namespace does not map; tolerated" : "");
}

static int read_gids(struct topo_host *h, const struct port_ctx *p, struct topo_port *pt) {
  for (int i = 0; i < GID_TBL_SCAN_MAX; i++) {
    char rel[32], buf[80];
    snprintf(rel, sizeof(rel), "gids/%d", i);
    int r = port_str(p, buf, sizeof(buf), rel);
    if (r == ENOENT) break;
    pt->gid_tbl_len = i + 1;
    uint8_t raw[16];
    if (r || gid_parse(buf, raw)) {
      topo_note(h, "%s port %d %s: %s", p->dev, p->num, rel, r ? strerror(r) : "not a GID");
      continue;
    }
    if (gid_is_zero(raw)) continue; /* an unused entry */
    if (pt->ngid == TOPO_MAX_GIDS) {
      pt->has_more_gids = true;
      continue;
    }
    struct topo_gid *grown = topo_grow(pt->gids, pt->ngid, sizeof(*grown));
    if (!grown) return ENOMEM;
    pt->gids = grown;
    struct topo_gid *g = &pt->gids[pt->ngid++];
    g->index = i;
    memcpy(g->raw, raw, 16);
    g->netdev_up = -1;
    g->prefix = -1;
    read_gid_attrs(h, p, pt, g);
  }
  if (pt->has_more_gids)
    topo_note(h, "%s port %d has more than %d populated GIDs; the rest are not considered", p->dev,
              p->num, TOPO_MAX_GIDS);
  return 0;
}

/* The P_Key table: pkeys/<i>, "0xffff"; entries that hold no key (0x0000)
 * count for the table's length only. */
#define PKEY_TBL_SCAN_MAX 1024

static int read_pkeys(struct topo_host *h, const struct port_ctx *p, struct topo_port *pt) {
  for (int i = 0; i < PKEY_TBL_SCAN_MAX; i++) {
    char rel[32], buf[32];
    snprintf(rel, sizeof(rel), "pkeys/%d", i);
    int r = port_str(p, buf, sizeof(buf), rel);
    if (r == ENOENT) break;
    pt->pkey_tbl_len = i + 1;
    char *end;
    unsigned long v = r ? 0 : strtoul(buf, &end, 0);
    if (r || end == buf || v > 0xffff) {
      topo_note(h, "%s port %d %s: %s", p->dev, p->num, rel, r ? strerror(r) : "not a P_Key");
      continue;
    }
    if (!(v & 0x7fff)) continue; /* no key */
    struct topo_pkey *grown = topo_grow(pt->pkeys, pt->npkey, sizeof(*grown));
    if (!grown) return ENOMEM;
    pt->pkeys = grown;
    pt->pkeys[pt->npkey++] = (struct topo_pkey){i, (uint16_t)v};
  }
  return 0;
}

/* The port's netdev: the one behind its GIDs (what show_gids and RoCE use),
 * else the PCI function's netdev whose dev_port matches (IPoIB, or RoCE
 * without GIDs). */
static void find_netdev(const struct port_ctx *p, struct topo_port *pt) {
  for (int i = 0; i < pt->ngid; i++)
    if (pt->gids[i].netdev[0]) {
      scopy(pt->netdev, sizeof(pt->netdev), pt->gids[i].netdev);
      return;
    }
  char names[8][SYSFS_NAME_MAX];
  int n;
  sysfs_list(names, 8, &n, "class/infiniband/%s/device/net", p->dev);
  for (int i = 0; i < n; i++) {
    long dev_port = 0;
    sysfs_read_long(&dev_port, "class/infiniband/%s/device/net/%s/dev_port", p->dev, names[i]);
    if (n == 1 || dev_port == p->num - 1) {
      scopy(pt->netdev, sizeof(pt->netdev), names[i]);
      return;
    }
  }
}

static int read_port(struct topo_host *h, int hca, int num) {
  if (h->nport == TOPO_MAX_PORTS) {
    topo_note(h, "more than %d RDMA ports; %s port %d and later are not considered", TOPO_MAX_PORTS,
              h->hcas[hca].name, num);
    return 0;
  }
  struct topo_port *grown = topo_grow(h->ports, h->nport, sizeof(*grown));
  if (!grown) return ENOMEM;
  h->ports = grown;
  struct topo_port *pt = &h->ports[h->nport++];
  pt->hca = hca;
  pt->num = num;
  pt->netdev_up = -1;
  struct port_ctx p = {h->hcas[hca].name, num, ""};
  port_str(&p, p.unreadable, sizeof(p.unreadable), "x-diag-unreadable");
  char buf[64];
  if (port_str(&p, buf, sizeof(buf), "state") == 0)
    parse_state(buf, &pt->state, pt->state_text, sizeof(pt->state_text));
  else topo_note(h, "%s port %d state: unreadable", p.dev, num);
  if (port_str(&p, buf, sizeof(buf), "phys_state") == 0)
    parse_state(buf, &pt->phys_state, pt->phys_state_text, sizeof(pt->phys_state_text));
  if (port_str(&p, buf, sizeof(buf), "link_layer") == 0)
    pt->ll = !strcmp(buf, "InfiniBand") ? TOPO_LL_IB
             : !strcmp(buf, "Ethernet") ? TOPO_LL_ETH
                                        : TOPO_LL_UNKNOWN;
  if (port_str(&p, pt->rate, sizeof(pt->rate), "rate") == 0) parse_rate(pt);
  pt->lid = (int)port_long(&p, "lid", 0);
  pt->sm_lid = (int)port_long(&p, "sm_lid", 0);
  pt->lmc = (int)port_long(&p, "lid_mask_count", 0);
  pt->active_mtu = (int)port_long(&p, "x-diag-active_mtu", 0);
  if (read_gids(h, &p, pt) || read_pkeys(h, &p, pt)) return ENOMEM;
  find_netdev(&p, pt);
  return 0;
}

/* Device h->hcas[h->nhca] (allocated, zeroed) and its ports. */
static int read_hca(struct topo_host *h, const char *name) {
  struct topo_hca *d = &h->hcas[h->nhca];
  scopy(d->name, sizeof(d->name), name);
  d->numa = -1;
  int r = sysfs_realpath(d->pci_path, sizeof(d->pci_path), "class/infiniband/%s/device", name);
  if (r)
    topo_note(h, "%s: no PCI device (class/infiniband/%s/device: %s); it sorts last", name, name,
              strerror(r));
  const char *base = strrchr(d->pci_path, '/');
  if (base && pci_is_bdf(base + 1)) scopy(d->busid, sizeof(d->busid), base + 1);
  long v;
  if (sysfs_read_long(&v, "class/infiniband/%s/device/numa_node", name) == 0) d->numa = (int)v;
  sysfs_read_str(d->cpus, sizeof(d->cpus), "class/infiniband/%s/device/local_cpulist", name);
  sysfs_read_str(d->node_guid, sizeof(d->node_guid), "class/infiniband/%s/node_guid", name);
  sysfs_read_str(d->sys_image_guid, sizeof(d->sys_image_guid), "class/infiniband/%s/sys_image_guid",
                 name);
  sysfs_read_str(d->fw_ver, sizeof(d->fw_ver), "class/infiniband/%s/fw_ver", name);
  sysfs_read_str(d->hca_type, sizeof(d->hca_type), "class/infiniband/%s/hca_type", name);
  sysfs_read_str(d->board_id, sizeof(d->board_id), "class/infiniband/%s/board_id", name);
  if (d->pci_path[0]) pci_chain_from_path(&d->chain, d->pci_path, d->numa);
  char pf[PATH_MAX];
  d->pf = -1;
  if (sysfs_realpath(pf, sizeof(pf), "class/infiniband/%s/device/physfn", name) == 0 &&
      pci_is_bdf(strrchr(pf, '/') + 1))
    scopy(d->pf_busid, sizeof(d->pf_busid), strrchr(pf, '/') + 1);
  d->first_port = h->nport;
  char ports[16][SYSFS_NAME_MAX];
  int n, err = sysfs_list(ports, 16, &n, "class/infiniband/%s/ports", name);
  if (err) topo_note(h, "%s: cannot list its ports: %s", name, strerror(err));
  err = 0;
  for (int i = 0; i < n && !err; i++) err = read_port(h, h->nhca, atoi(ports[i]));
  d->nports = h->nport - d->first_port;
  h->nhca++;
  return err;
}

int rdma_discover(struct topo_host *h) {
  char names[TOPO_MAX_HCAS + 1][SYSFS_NAME_MAX];
  int n, r = sysfs_list(names, TOPO_MAX_HCAS + 1, &n, "class/infiniband");
  struct stat st;
  if (r == ENOENT && stat(h->sysfs_root, &st))
    snprintf(h->why_no_rdma, sizeof(h->why_no_rdma),
             "the sysfs root %s does not exist (NCCL_DIAG_SYSFS_ROOT names a missing folder)",
             h->sysfs_root);
  else if (r == ENOENT)
    snprintf(h->why_no_rdma, sizeof(h->why_no_rdma),
             "%s/class/infiniband does not exist (no RDMA driver loaded)", h->sysfs_root);
  else if (r)
    snprintf(h->why_no_rdma, sizeof(h->why_no_rdma), "cannot list %s/class/infiniband: %s",
             h->sysfs_root, strerror(r));
  else if (n == 0)
    snprintf(h->why_no_rdma, sizeof(h->why_no_rdma),
             "%s/class/infiniband is empty (the RDMA driver found no device)", h->sysfs_root);
  if (r || n == 0) return 0;
  if (n > TOPO_MAX_HCAS) {
    topo_note(h, "more than %d RDMA devices; %s and later are not considered", TOPO_MAX_HCAS,
              names[TOPO_MAX_HCAS]);
    n = TOPO_MAX_HCAS;
  }
  h->has_rdma = true;
  if (!(h->hcas = calloc((size_t)n, sizeof(*h->hcas)))) return ENOMEM;
  int err = 0;
  for (int i = 0; i < n && !err; i++) err = read_hca(h, names[i]);
  /* A virtual function's physical function, when this host sees its RDMA device too. */
  for (int i = 0; i < h->nhca; i++)
    for (int j = 0; j < h->nhca && h->hcas[i].pf_busid[0]; j++)
      if (j != i && !strcmp(h->hcas[j].busid, h->hcas[i].pf_busid)) h->hcas[i].pf = j;
  return err;
}

static const struct netif *netif_named(const struct netif_list *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->ifs[i].name, name)) return &l->ifs[i];
  return NULL;
}

static int netdev_state(const struct topo_host *h, const char *name) {
  const struct netif *n = name[0] ? netif_named(&h->ifs, name) : NULL;
  if (n) return n->up && n->running;
  char buf[32];
  if (!name[0] || sysfs_read_str(buf, sizeof(buf), "class/net/%s/operstate", name)) return -1;
  return !strcmp(buf, "up") ? 1 : !strcmp(buf, "down") || !strcmp(buf, "lowerlayerdown") ? 0 : -1;
}

/* Prefix length of the interface address equal to the GID's, preferring
 * the GID's own netdev. */
static int gid_prefix(const struct topo_host *h, const struct topo_gid *g) {
  struct ipaddr a;
  gid_to_ipaddr(g->raw, &a);
  int found = -1;
  for (int i = 0; i < h->ifs.n; i++) {
    const struct netif *n = &h->ifs.ifs[i];
    for (int k = 0; k < n->naddr; k++) {
      const struct ipaddr *x = &n->addr[k];
      if (x->family != a.family || memcmp(x->bytes, a.bytes, a.family == AF_INET ? 4 : 16))
        continue;
      if (!strcmp(n->name, g->netdev)) return x->prefix;
      found = x->prefix;
    }
  }
  return found;
}

/* The RoCE active MTU: the netdev MTU less the RoCE v2 headers (GRH 40, UDP
 * 8, BTH 12, XRC 4, AtomicETH 28, ICRC 4), rounded down to an IB MTU. */
static int roce_mtu(int netdev_mtu) {
  int room = netdev_mtu - 96;
  for (int m = 4096; m >= 256; m /= 2)
    if (room >= m) return m;
  return 0;
}

void rdma_annotate(struct topo_host *h) {
  for (int i = 0; i < h->nport; i++) {
    struct topo_port *pt = &h->ports[i];
    pt->netdev_up = netdev_state(h, pt->netdev);
    char master[PATH_MAX];
    if (pt->netdev[0] &&
        sysfs_realpath(master, sizeof(master), "class/net/%s/master", pt->netdev) == 0)
      scopy(pt->netdev_master, sizeof(pt->netdev_master), strrchr(master, '/') + 1);
    if (!pt->active_mtu) {
      /* The netdev's own sysfs MTU, whether or not the address list (live or
       * a fixture's) knows the interface. */
      const struct netif *n = pt->netdev[0] ? netif_named(&h->ifs, pt->netdev) : NULL;
      long mtu = n && n->mtu ? n->mtu : 0;
      if (!mtu && pt->netdev[0] && sysfs_read_long(&mtu, "class/net/%s/mtu", pt->netdev)) mtu = 0;
      pt->active_mtu = pt->ll == TOPO_LL_IB ? 4096 : mtu ? roce_mtu((int)mtu) : 1024;
    }
    for (int k = 0; k < pt->ngid; k++) {
      struct topo_gid *g = &pt->gids[k];
      g->netdev_up = g->netdev[0] ? netdev_state(h, g->netdev) : pt->netdev_up;
      g->prefix = gid_prefix(h, g);
      g->is_port_netdev = !g->netdev[0] || !strcmp(g->netdev, pt->netdev);
    }
  }
}
