/* SPDX-License-Identifier: Apache-2.0 */
/* What the two hosts of a connection offer NCCL, compared when their hellos
 * are in, before any RDMA setup: a node with fewer devices than its peers
 * (a port its device cgroup or container does not pass through) lays out
 * NCCL's channels otherwise, and NCCL may hang; a pair where one host has
 * RDMA and the other does not runs over TCP. Each is a WARN once per peer
 * host, on both sides, with the consequence and the fix. */
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "transport/ib/dev/ib.h"
#include "transport/report.h"

/* Whether name is one of the comma-separated list. */
static bool in_list(const char *list, const char *name, size_t len) {
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ",");
    if (n == len && !strncmp(p, name, len)) return true;
    p += n + (p[n] == ',');
  }
  return false;
}

/* The names of a that b lacks ("mlx5_3"), and those both have ("=mlx5_2,mlx5_4"). */
static void set_diff(const char *a, const char *b, char *only, size_t ocap, char *both,
                     size_t bcap) {
  size_t o = 0, k = 0;
  only[0] = both[0] = 0;
  for (const char *p = a; *p;) {
    size_t n = strcspn(p, ",");
    if (in_list(b, p, n)) k = strbuf_cat(both, bcap, k, "%s%.*s", k ? "," : "=", (int)n, p);
    else o = strbuf_cat(only, ocap, o, "%s%.*s", o ? ", " : "", (int)n, p);
    p += n + (p[n] == ',');
  }
}

/* "host-b (10.0.0.6) has 3 RDMA devices (mlx5_2,mlx5_4,mlx5_5)" */
static void side_text(const struct hello *h, char *buf, size_t cap) {
  char name[160];
  ib_peer_name(h, name, sizeof(name));
  snprintf(buf, cap, "%s has %d %s device%s (%s)", name, h->rdma.ndevs,
           h->rdma.is_rdma_host ? "RDMA" : "TCP", h->rdma.ndevs == 1 ? "" : "s", h->rdma.devs);
}

static void warn_once(const struct hello *peer, const char *what, const char *msg) {
  char key[400];
  snprintf(key, sizeof(key), "%s|%s|%s", what, peer->host, peer->addr);
  if (report_first(key)) WARN("%s", msg);
  else INFO(LOG_NET, "%s", msg);
}

/* Different device counts: name both sets, what the smaller lacks, and the
 * set every node has. */
static void check_sets(const struct hello *mine, const struct hello *peer) {
  if (!mine->rdma.is_rdma_host && !peer->rdma.is_rdma_host) return; /* interfaces: not here */
  if (mine->rdma.ndevs == peer->rdma.ndevs && mine->rdma.is_rdma_host == peer->rdma.is_rdma_host)
    return;
  const struct hello *few = mine->rdma.ndevs <= peer->rdma.ndevs ? mine : peer;
  const struct hello *many = few == mine ? peer : mine;
  char a[400], b[400], lacks[256], common[256], name[160], msg[1400];
  side_text(few, a, sizeof(a));
  side_text(many, b, sizeof(b));
  set_diff(many->rdma.devs, few->rdma.devs, lacks, sizeof(lacks), common, sizeof(common));
  ib_peer_name(few, name, sizeof(name));
  size_t o = (size_t)snprintf(msg, sizeof(msg),
                              "NCCL may hang: %s, %s. NCCL lays out its channels by each node's "
                              "devices, and nodes that disagree wait for each other. ",
                              a, b);
  if (few->rdma.is_rdma_host && many->rdma.is_rdma_host && common[0])
    strbuf_cat(msg, sizeof(msg), o,
               "Set NCCL_IB_HCA=%s (the devices both have) on every node, or give %s access to %s "
               "(its log says why it is not used: a device cgroup, or a container without its "
               "/dev/infiniband/uverbs device)",
               common, few->host, lacks);
  else
    strbuf_cat(msg, sizeof(msg), o,
               "Give every node the same devices: make RDMA work on %s (its log says why it is not "
               "used), or set NCCL_IB_DISABLE=1 on every node",
               name);
  warn_once(peer, "devset", msg);
}

/* One side offers RDMA, the other only TCP: this pair runs at TCP speed. */
static void check_rdma_pair(const struct transport_dev *dev, const struct hello *peer) {
  if (!peer->rdma.has_devs || (dev->is_ib == peer->ib.is_present)) return;
  char name[160], msg[900];
  ib_peer_name(peer, name, sizeof(name));
  if (dev->is_ib)
    snprintf(msg, sizeof(msg),
             "%s offers no RDMA device (its devices: %s), this host uses %s: this connection runs "
             "over TCP, at TCP speed. Make RDMA work on %s (its log says why it is not used)",
             name, peer->rdma.devs, dev->name, peer->host);
  else
    snprintf(msg, sizeof(msg),
             "%s offers RDMA (%s port %d) but this host has no usable RDMA device: this "
             "connection runs over TCP, at TCP speed. Make RDMA work here (the warning at init "
             "says why it is not used)",
             name, peer->ib.dev, peer->ib.port);
  warn_once(peer, "rdmapair", msg);
}

void ib_peer_check(const struct transport_dev *dev, const struct hello *mine,
                   const struct hello *peer) {
  if (!mine->rdma.has_devs || !peer->rdma.has_devs) return; /* a peer that does not say */
  check_rdma_pair(dev, peer);
  check_sets(mine, peer);
}
