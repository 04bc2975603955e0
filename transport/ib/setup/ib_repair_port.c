/* SPDX-License-Identifier: Apache-2.0 */
/* A repair onto another port or NIC (ib_repair.h). NCCL pairs any of its
 * devices with any of a peer's: on a rail-optimised fabric (one subnet per
 * rail) a cross-rail pair never reaches, nor does a NIC of the storage
 * network against a rail. Each hello lists the ports its host offers, so
 * both sides compute the same pair that shares a subnet, preferring, in
 * order: the same ports with other GIDs; other ports of the same NICs; one
 * side kept, the other moved to a port on its rail; any two ports. A port
 * without GPUDirect never replaces one with it (NCCL's GPU registrations
 * would fail there). Within an order: the rail NCCL_IB_HCA gives,
 * RoCE v2, the receiver moved rather than the sender, the longest common
 * prefix, then list order. Two ends on one host (the same GIDs in both
 * lists) are not repaired: that pair is NCCL's intra-node choice. */
#include <stdio.h>
#include <string.h>

#include "topo/gid.h"
#include "transport/ib/dev/ib.h"
#include "transport/ib/setup/ib_repair.h"
#include "transport/transport.h"

static bool is_v4_mapped(const uint8_t *g) {
  static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return !memcmp(g, pfx, 12);
}

static int common_bits(const uint8_t *a, const uint8_t *b) {
  int n = 0;
  for (int i = 0; i < 16; i++) {
    uint8_t x = a[i] ^ b[i];
    if (x) return n + __builtin_clz((unsigned)x) - 24;
    n += 8;
  }
  return n;
}

const struct hello_port *ib_repair_port_of(const struct hello *h, const char *dev, int port) {
  for (int i = 0; i < h->rdma.nports; i++)
    if (h->rdma.ports[i].port == port && !strcmp(h->rdma.ports[i].dev, dev))
      return &h->rdma.ports[i];
  return NULL;
}

/* The port's prefix is that of its GID in use (listed first): it is
 * trusted for GIDs of that GID's address family only. */
static int prefix_bits(const struct hello_port *p, const uint8_t *g) {
  if (p->prefix < 0 || !p->ngids || is_v4_mapped(g) != is_v4_mapped(p->gids[0].gid)) return -1;
  return is_v4_mapped(g) ? 96 + p->prefix : p->prefix;
}

static bool is_one_subnet(const struct hello_port *pa, const uint8_t *a,
                          const struct hello_port *pb, const uint8_t *b) {
  int x = prefix_bits(pa, a), y = prefix_bits(pb, b);
  if (x < 0 || y < 0 || is_v4_mapped(a) != is_v4_mapped(b)) return false;
  return common_bits(a, b) >= (x < y ? x : y);
}

static bool is_one_host(const struct hello *s, const struct hello *v) {
  for (int i = 0; i < s->rdma.nports; i++)
    for (int k = 0; k < s->rdma.ports[i].ngids; k++)
      for (int j = 0; j < v->rdma.nports; j++)
        for (int m = 0; m < v->rdma.ports[j].ngids; m++)
          if (!memcmp(s->rdma.ports[i].gids[k].gid, v->rdma.ports[j].gids[m].gid, 16)) return true;
  return false;
}

/* "mlx5_2 port 1 of host-a (10.1.2.5/24)" */
static void port_text(const struct hello *h, const struct hello_port *p, const uint8_t *g,
                      char *buf, size_t cap) {
  struct ipaddr a;
  char addr[64];
  gid_to_ipaddr(g, &a);
  ipaddr_str(&a, addr, sizeof(addr));
  snprintf(buf, cap, "%s port %d of %s (%s/%d)", p->dev, p->port, h->host, addr,
           p->prefix >= 0 ? p->prefix : 0);
}

/* Whether NCCL's pair breaks on ports: r->cause and r->broken. */
static bool is_port_broken(const struct hello *s, const struct hello *v, struct ib_repair *r) {
  const struct hello_port *ps = ib_repair_port_of(s, s->ib.dev, s->ib.port);
  const struct hello_port *pv = ib_repair_port_of(v, v->ib.dev, v->ib.port);
  if (!ps || !pv || is_one_subnet(ps, s->ib.gid, pv, v->ib.gid)) return false;
  if (prefix_bits(ps, s->ib.gid) < 0 || prefix_bits(pv, v->ib.gid) < 0) return false;
  char a[160], b[160];
  port_text(s, ps, s->ib.gid, a, sizeof(a));
  port_text(v, pv, v->ib.gid, b, sizeof(b));
  if (ps->is_off_plane || pv->is_off_plane) {
    const struct hello *h = ps->is_off_plane ? s : v;
    const struct hello_port *p = ps->is_off_plane ? ps : pv;
    r->cause = IB_REPAIR_OFF_PLANE;
    snprintf(r->broken, sizeof(r->broken),
             "NCCL paired %s with %s, and %s on %s is a NIC its host's layout sets apart (the "
             "storage or management network, not the RDMA fabric of the GPU rails)",
             a, b, p->dev, h->host);
    return true;
  }
  r->cause = IB_REPAIR_CROSS_RAIL;
  snprintf(r->broken, sizeof(r->broken),
           "cross-rail pair: NCCL paired %s with %s, on different subnets (each rail is its own)",
           a, b);
  return true;
}

/* NCCL's ports share a subnet through other GIDs: the GID entries in use
 * are on two subnets (a forced NCCL_IB_GID_INDEX, usually). */
static void say_gid_subnets(const struct hello *s, const struct hello *v, struct ib_repair *r) {
  const struct hello_port *ps = ib_repair_port_of(s, s->ib.dev, s->ib.port);
  const struct hello_port *pv = ib_repair_port_of(v, v->ib.dev, v->ib.port);
  char a[160], b[160];
  port_text(s, ps, s->ib.gid, a, sizeof(a));
  port_text(v, pv, v->ib.gid, b, sizeof(b));
  r->cause = IB_REPAIR_GID;
  snprintf(r->broken, sizeof(r->broken),
           "GID index %d of %s and GID index %d of %s are on different subnets", s->ib.gid_index, a,
           v->ib.gid_index, b);
}

struct cand {
  const struct hello_port *p[2];
  const struct hello_port_gid *g[2];
  long key;
};

static long rank(const struct hello *s, const struct hello *v, const struct cand *c, int i, int j) {
  bool keep_s = c->p[0]->port == s->ib.port && !strcmp(c->p[0]->dev, s->ib.dev);
  bool keep_v = c->p[1]->port == v->ib.port && !strcmp(c->p[1]->dev, v->ib.dev);
  bool nic_s = !strcmp(c->p[0]->dev, s->ib.dev), nic_v = !strcmp(c->p[1]->dev, v->ib.dev);
  int tier = keep_s && keep_v ? 3 : nic_s && nic_v ? 2 : keep_s || keep_v ? 1 : 0;
  bool rail = c->p[0]->rail >= 0 && c->p[0]->rail == c->p[1]->rail;
  return (long)tier << 52 | (long)rail << 49 | (long)(c->g[0]->gid_type == 2) << 48 |
         (long)keep_s << 47 | (long)common_bits(c->g[0]->gid, c->g[1]->gid) << 39 |
         (long)(63 - (i & 63)) << 33 | (long)(63 - (j & 63)) << 27 |
         (long)(255 - (c->g[0]->gid_index & 0xff)) << 8 | (long)(255 - (c->g[1]->gid_index & 0xff));
}

static void end_of(const struct hello *h, const struct hello_port *p, struct ib_repair_end *e) {
  e->is_moved = p->port != h->ib.port || strcmp(p->dev, h->ib.dev);
  snprintf(e->dev, sizeof(e->dev), "%s", p->dev);
  snprintf(e->netdev, sizeof(e->netdev), "%s", p->netdev);
  e->port = p->port;
  e->mtu = p->mtu;
  e->prefix = p->prefix;
  e->has_gdr = p->has_gdr;
}

static void take(const struct cand *c, struct ib_repair *r) {
  for (int k = 0; k < 2; k++) {
    r->pick[k].port = c->p[k]->port;
    r->pick[k].gid_index = c->g[k]->gid_index;
    r->pick[k].gid_type = c->g[k]->gid_type;
    memcpy(r->pick[k].gid, c->g[k]->gid, 16);
  }
}

/* NCCL registers GPU memory on the comm when its own port has GPUDirect:
 * a port without it could not take those registrations. */
static bool can_carry(const struct hello *h, const struct hello_port *p) {
  const struct hello_port *was = ib_repair_port_of(h, h->ib.dev, h->ib.port);
  return !p->is_off_plane && (p == was || !was || !was->has_gdr || p->has_gdr);
}

/* One port of s against every port of v. */
static void try_port(const struct hello *s, const struct hello *v, int i, const struct ib_repair *r,
                     struct cand *best) {
  struct cand c = {.p = {&s->rdma.ports[i], NULL}};
  if (!can_carry(s, c.p[0])) return;
  for (int j = 0; j < v->rdma.nports; j++) {
    c.p[1] = &v->rdma.ports[j];
    if (!can_carry(v, c.p[1])) continue;
    for (int a = 0; a < c.p[0]->ngids; a++)
      for (int b = 0; b < c.p[1]->ngids; b++) {
        c.g[0] = &c.p[0]->gids[a], c.g[1] = &c.p[1]->gids[b];
        if (c.g[0]->gid_type != c.g[1]->gid_type ||
            (c.g[0]->gid_type != 1 && c.g[0]->gid_type != 2))
          continue;
        if (!is_one_subnet(c.p[0], c.g[0]->gid, c.p[1], c.g[1]->gid)) continue;
        if (ib_repair_was_tried(r, c.p, c.g)) continue;
        c.key = rank(s, v, &c, i, j);
        if (c.key > best->key) *best = c;
      }
  }
}

void ib_repair_port_choose(const struct hello *s, const struct hello *v, struct ib_repair *r) {
  if (!s->rdma.has_ports || !v->rdma.has_ports || is_one_host(s, v)) return;
  if (!r->is_broken && !is_port_broken(s, v, r)) return;
  r->is_broken = true;
  struct cand best = {.key = -1};
  for (int i = 0; i < s->rdma.nports; i++) try_port(s, v, i, r, &best);
  if (best.key < 0) return;
  r->is_found = true;
  take(&best, r);
  end_of(s, best.p[0], &r->end[0]);
  end_of(v, best.p[1], &r->end[1]);
  if (r->cause == IB_REPAIR_CROSS_RAIL && !r->end[0].is_moved && !r->end[1].is_moved)
    say_gid_subnets(s, v, r); /* the same ports reach: a GID entry was wrong, not the rail */
}

void ib_repair_port_apply(const struct ib_repair_end *e, struct hello *h) {
  if (!e->is_moved) return;
  snprintf(h->ib.dev, sizeof(h->ib.dev), "%s", e->dev);
  snprintf(h->ib.netdev, sizeof(h->ib.netdev), "%s", e->netdev);
  h->ib.port = e->port;
  if (e->mtu) h->ib.mtu = e->mtu;
  h->ib.is_off_plane = false;
  struct ipaddr a;
  char addr[64];
  gid_to_ipaddr(h->ib.gid, &a);
  ipaddr_str(&a, addr, sizeof(addr));
  snprintf(h->ib.subnet, sizeof(h->ib.subnet), "%s/%d", addr, e->prefix >= 0 ? e->prefix : 0);
}

struct ib_dev *ib_repair_local_dev(const struct ib_repair *r, bool is_send) {
  const struct ib_repair_end *e = &r->end[is_send ? 0 : 1];
  const struct transport_host *host = transport_host();
  for (int i = 0; i < host->ndev; i++) {
    struct ib_dev *d = host->devs[i].is_ib ? host->devs[i].ib : NULL;
    if (d && d->td->ib_port == e->port && !strcmp(d->td->name, e->dev)) return d;
  }
  return NULL;
}
