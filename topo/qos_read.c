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

void topo_qos_read(const char *dev, int port, const char *netdev, struct topo_qos *q) {
  memset(q, 0, sizeof(*q));
  q->dev_tclass = -1;
  scopy(q->netdev, sizeof(q->netdev), netdev ? netdev : "");
  if (!q->netdev[0]) {
    snprintf(q->why_unknown, sizeof(q->why_unknown), "the port has no network interface");
    return;
  }
  bool is_live = !strcmp(sysfs_root(), "/sys");
  int r = is_live ? topo_qos_nl_read(q->netdev, q, q->why_unknown, sizeof(q->why_unknown))
                  : read_fixture(q, q->why_unknown, sizeof(q->why_unknown));
  if (r) {
    q->source = QOS_SRC_UNKNOWN;
    q->has_pfc = q->has_ets = false;
    q->dscp_set = 0;
    return;
  }
  q->source = is_live ? QOS_SRC_NETLINK : QOS_SRC_FIXTURE;
  read_trust(q);
  read_ecn(q);
  read_tclass(q, dev, port);
}

bool topo_qos_is_tagged(const struct topo_port *pt, int gid_index) {
  for (int k = 0; k < pt->ngid; k++)
    if (pt->gids[k].index == gid_index) return !pt->gids[k].is_port_netdev && pt->gids[k].netdev[0];
  return false;
}
