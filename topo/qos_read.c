/* SPDX-License-Identifier: Apache-2.0 */
/* Reads a port's RoCE QoS: DCB state from netlink (live) or the fixture's
 * x-diag-dcb file, plus mlx5's sysfs (trust, ECN, the device's default
 * traffic class). The format of x-diag-dcb is in topo/qos.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "topo/qos.h"
#include "topo/sysfs.h"
#include "topo/topo.h"

/* mlx5 OFED prints "pcp"/"dscp" (some releases "Priority trust state: dscp"). */
static void read_trust(struct topo_qos *q) {
  char text[128];
  if (sysfs_read_str(text, sizeof(text), "class/net/%s/qos/trust", q->netdev)) {
    q->trust = q->dscp_set ? QOS_TRUST_DSCP : QOS_TRUST_PCP; /* as upstream mlx5 switches */
    return;
  }
  q->is_trust_read = true;
  q->trust = strstr(text, "dscp") ? QOS_TRUST_DSCP : QOS_TRUST_PCP;
}

static void read_ecn(struct topo_qos *q) {
  for (int p = 0; p < QOS_PRIOS; p++) {
    long np = 0, rp = 0;
    int enp = sysfs_read_long(&np, "class/net/%s/ecn/roce_np/enable/%d", q->netdev, p);
    int erp = sysfs_read_long(&rp, "class/net/%s/ecn/roce_rp/enable/%d", q->netdev, p);
    if (enp && erp) continue;
    q->has_ecn = true;
    q->has_ecn_np |= !enp;
    q->has_ecn_rp |= !erp;
    if (!enp && np) q->ecn_np |= (uint8_t)(1u << p);
    if (!erp && rp) q->ecn_rp |= (uint8_t)(1u << p);
  }
}

/* OFED: "Global tclass=106" once set, empty or absent otherwise. */
static void read_tclass(struct topo_qos *q, const char *dev, int port) {
  char text[128];
  q->dev_tclass = -1;
  if (!dev ||
      sysfs_read_str(text, sizeof(text), "class/infiniband/%s/tc/%d/traffic_class", dev, port))
    return;
  const char *at = strstr(text, "tclass=");
  const char *num = at ? at + 7 : text;
  char *end;
  long v = strtol(num, &end, 0);
  if (end != num && v >= 0 && v <= 255) q->dev_tclass = (int)v;
}

static int read_fixture(struct topo_qos *q, char *why, size_t cap) {
  char text[2048];
  int r = sysfs_read_str(text, sizeof(text), "class/net/%s/x-diag-dcb", q->netdev);
  if (r == ENOENT) {
    snprintf(why, cap, "this copy of a host's sysfs has no DCB state for %s", q->netdev);
    return r;
  }
  if (r) {
    snprintf(why, cap, "the DCB state of %s in this copy cannot be read: %s", q->netdev,
             strerror(r));
    return r;
  }
  char bad[200] = "";
  r = topo_qos_text_parse(text, q, bad, sizeof(bad));
  if (r == EOPNOTSUPP) snprintf(why, cap, "the driver of %s has no DCB support", q->netdev);
  else if (r) snprintf(why, cap, "the DCB state of %s in this copy: %s", q->netdev, bad);
  return r;
}

/* The DCB state and sysfs QoS of one interface: 0, or an errno (why). */
static int read_one(const char *dev, int port, const char *netdev, struct topo_qos *q) {
  memset(q, 0, sizeof(*q));
  q->dev_tclass = -1;
  q->dcbx = -1;
  scopy(q->netdev, sizeof(q->netdev), netdev);
  bool is_live = !strcmp(sysfs_root(), "/sys");
  int r = is_live ? topo_qos_nl_read(q->netdev, q, q->why_unknown, sizeof(q->why_unknown))
                  : read_fixture(q, q->why_unknown, sizeof(q->why_unknown));
  if (r) {
    q->unknown_errno = r;
    q->source = QOS_SRC_UNKNOWN;
    q->has_pfc = q->has_ets = false;
    q->dscp_set = 0;
    return r;
  }
  q->source = is_live ? QOS_SRC_NETLINK : QOS_SRC_FIXTURE;
  read_trust(q);
  read_ecn(q);
  read_tclass(q, dev, port);
  return 0;
}

static bool is_alike(const struct topo_qos *a, const struct topo_qos *b) {
  if (a->has_pfc != b->has_pfc || a->trust != b->trust || a->dscp_set != b->dscp_set) return false;
  if (a->has_pfc && a->pfc_en != b->pfc_en) return false;
  for (int d = 0; d < QOS_DSCPS; d++)
    if ((a->dscp_set & (1ull << d)) && a->dscp_prio[d] != b->dscp_prio[d]) return false;
  return true;
}

/* A RoCE LAG's bond has no DCB of its own: its members carry it. The
 * first member that answers stands for the bond; one set up otherwise is
 * named. */
static void read_bond(const char *dev, int port, const char *bond, const char *slaves,
                      struct topo_qos *q) {
  char list[256];
  struct topo_qos other;
  scopy(list, sizeof(list), slaves);
  bool has_first = false;
  for (char *save = NULL, *m = strtok_r(list, " ", &save); m; m = strtok_r(NULL, " ", &save)) {
    if (!has_first) {
      has_first = !read_one(dev, port, m, q);
      continue;
    }
    if (!read_one(dev, port, m, &other) && !is_alike(q, &other)) {
      scopy(q->member_differs, sizeof(q->member_differs), m);
      break;
    }
  }
  if (!has_first && (q->unknown_errno = ENODATA))
    snprintf(q->why_unknown, sizeof(q->why_unknown), "no member of %s (%s) reports its DCB state",
             bond, slaves);
  scopy(q->bond, sizeof(q->bond), bond);
}

void topo_qos_read(const char *dev, int port, const char *netdev, struct topo_qos *q) {
  char slaves[256];
  memset(q, 0, sizeof(*q));
  q->dev_tclass = -1;
  q->dcbx = -1;
  if (!netdev || !netdev[0]) {
    q->unknown_errno = ENODEV;
    snprintf(q->why_unknown, sizeof(q->why_unknown), "the port has no network interface");
    return;
  }
  if (!sysfs_read_str(slaves, sizeof(slaves), "class/net/%s/bonding/slaves", netdev) && slaves[0])
    read_bond(dev, port, netdev, slaves, q);
  else read_one(dev, port, netdev, q);
}

void topo_qos_read_port(const struct topo_host *h, int p, struct topo_qos *q) {
  const struct topo_port *pt = &h->ports[p];
  const struct topo_hca *hca = &h->hcas[pt->hca];
  topo_qos_read(hca->name, pt->num, pt->netdev, q);
  if (q->source != QOS_SRC_UNKNOWN || hca->pf < 0 || !h->hcas[hca->pf].nports) return;
  const struct topo_hca *pf = &h->hcas[hca->pf];
  const struct topo_port *pp = &h->ports[pf->first_port];
  struct topo_qos via;
  topo_qos_read(pf->name, pp->num, pp->netdev, &via);
  if (via.source == QOS_SRC_UNKNOWN) return;
  int tclass = q->dev_tclass;
  char vf[IF_NAMESIZE];
  scopy(vf, sizeof(vf), pt->netdev);
  *q = via;
  read_tclass(q, hca->name, pt->num); /* the VF's own device class, if set */
  if (q->dev_tclass < 0) q->dev_tclass = tclass;
  scopy(q->vf_netdev, sizeof(q->vf_netdev), vf);
}

bool topo_qos_is_tagged(const struct topo_port *pt, int gid_index) {
  for (int k = 0; k < pt->ngid; k++)
    if (pt->gids[k].index == gid_index) return !pt->gids[k].is_port_netdev && pt->gids[k].netdev[0];
  return false;
}
