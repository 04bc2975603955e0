/* SPDX-License-Identifier: Apache-2.0 */
/* What an RDMA device says about itself in the hello: the fixed identity
 * block (device, port, GID, MTU, LID, netdev, subnet) and the details in
 * fields of their own (whether the GID index in use holds a GID, and which
 * entries of the port's table would). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/knobs.h"
#include "common/strutil.h"
#include "topo/gid.h"
#include "transport/ib/dev/ib.h"
#include "transport/ib/setup/ib_repair.h"
#include "transport/prefs.h"

/* The state of the GID index in use, as this host's table has it. */
static int gid_state(const struct topo_port *pt, int index) {
  if (index >= pt->gid_tbl_len) return HELLO_GID_MISSING;
  for (int k = 0; k < pt->ngid; k++)
    if (pt->gids[k].index == index) return HELLO_GID_POPULATED;
  return HELLO_GID_EMPTY;
}

/* "6 RoCE v1 10.50.0.22, 7 RoCE v2 10.50.0.22": the entries a forced index
 * could use (populated, of a known type, not link-local). */
static void gid_usable(const struct topo_port *pt, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int k = 0; k < pt->ngid && o < cap; k++) {
    const struct topo_gid *g = &pt->gids[k];
    if (g->type_errno || g->type == GID_TYPE_UNKNOWN || gid_is_link_local(g->raw)) continue;
    struct ipaddr a;
    char addr[64];
    gid_to_ipaddr(g->raw, &a);
    ipaddr_str(&a, addr, sizeof(addr));
    o = strbuf_cat(buf, cap, o, "%s%d %s %s", o ? ", " : "", g->index,
                   gid_type_name(g->type, pt->ll), addr);
  }
}

/* The port's GIDs a repair could move the pair to (ib_repair.c). */
static void fill_alts(const struct topo_dev *t, const struct topo_port *pt, struct hello_rdma *r) {
  ib_repair_prefs_read(&r->has_alts, &r->repair_mode);
  if (!r->has_alts || pt->ll != TOPO_LL_ETH) return;
  for (int k = 0; k < pt->ngid && r->nalts < HELLO_MAX_ALTS; k++) {
    const struct topo_gid *g = &pt->gids[k];
    if (g->type_errno || (g->type != GID_TYPE_V1 && g->type != GID_TYPE_V2)) continue;
    struct hello_alt *a = &r->alts[r->nalts++];
    a->port = t->ib_port;
    a->gid_index = g->index;
    a->gid_type = g->type == GID_TYPE_V2 ? 2 : 1;
    memcpy(a->gid, g->raw, 16);
  }
}

/* A port's GIDs a RoCE pair could use, its own in use first. */
static void port_gids(const struct topo_dev *t, const struct topo_port *pt, struct hello_port *p) {
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < pt->ngid && p->ngids < HELLO_MAX_PORT_GIDS; k++) {
      const struct topo_gid *g = &pt->gids[k];
      if ((pass == 0) != (g->index == t->gid_index)) continue;
      if (g->type_errno || (g->type != GID_TYPE_V1 && g->type != GID_TYPE_V2) ||
          gid_is_link_local(g->raw))
        continue;
      struct hello_port_gid *o = &p->gids[p->ngids++];
      o->gid_index = g->index;
      o->gid_type = g->type == GID_TYPE_V2 ? 2 : 1;
      memcpy(o->gid, g->raw, 16);
    }
}

/* Every RoCE port this host offers NCCL: where a repair may move a pair
 * that NCCL's choice breaks (ib_repair.h). Off with NCCL_DIAG_REPAIR=off. */
static void fill_ports(struct hello_rdma *r) {
  const struct topo_host *h;
  topo_process(&h);
  const struct transport_host *host = transport_host();
  r->has_ports = r->has_alts && transport_prefs()->is_repair_ports;
  for (int i = 0; r->has_ports && i < host->ndev && r->nports < HELLO_MAX_PORTS; i++) {
    const struct transport_dev *x = &host->devs[i];
    if (!x->is_ib || !x->ib) continue;
    const struct ib_dev *d = x->ib;
    const struct topo_dev *t = d->td;
    if (t->ll != TOPO_LL_ETH) continue;
    struct hello_port *p = &r->ports[r->nports];
    memset(p, 0, sizeof(*p));
    scopy(p->dev, sizeof(p->dev), t->name);
    p->port = t->ib_port;
    p->mtu = d->mtu;
    p->rail = t->rail, p->plane = t->plane;
    p->prefix = t->subnet.family ? t->subnet.prefix : -1;
    p->is_off_plane = t->off_plane;
    p->has_gdr = (d->ptr_support & NCCL_PTR_CUDA) != 0;
    scopy(p->netdev, sizeof(p->netdev), t->netdev ? t->netdev : "");
    port_gids(t, &h->ports[t->port], p);
    if (p->ngids) r->nports++;
  }
}

static void fill_rdma(const struct topo_dev *t, struct hello_rdma *r) {
  const struct topo_host *h;
  topo_process(&h);
  const struct topo_port *pt = &h->ports[t->port];
  r->gid_state = pt->ll == TOPO_LL_ETH ? gid_state(pt, t->gid_index) : HELLO_GID_POPULATED;
  gid_usable(pt, r->gid_usable, sizeof(r->gid_usable));
  r->has_pkey = t->pkey >= 0;
  r->pkey = t->pkey;
  fill_alts(t, pt, r);
  fill_ports(r);
}

/* The devices this host offers NCCL, RDMA ports or TCP interfaces. */
static void fill_devs(struct hello_rdma *r) {
  const struct transport_host *host = transport_host();
  size_t o = 0;
  r->has_devs = true;
  r->ndevs = host->ndev;
  r->is_rdma_host = host->ndev && host->devs[0].is_ib;
  for (int i = 0; i < host->ndev && o < sizeof(r->devs); i++)
    o = strbuf_cat(r->devs, sizeof(r->devs), o, "%s%s", i ? "," : "", host->devs[i].name);
}

void ib_fill_hello(const struct transport_dev *x, struct hello *h) {
  fill_devs(&h->rdma);
  if (!x->is_ib || !x->ib) return;
  struct ib_dev *d = x->ib;
  const struct topo_dev *t = d->td;
  struct hello_ib *b = &h->ib;
  ib_dev_refresh_gid(d);
  snprintf(h->transport, sizeof(h->transport), "ib");
  b->is_present = true;
  scopy(b->dev, sizeof(b->dev), t->name);
  b->port = t->ib_port;
  b->link_layer = t->ll == TOPO_LL_IB ? 1 : 2;
  b->gid_index = t->gid_index;
  pthread_mutex_lock(&d->lock);
  memcpy(b->gid, ib_dev_gid(d, b->subnet, sizeof(b->subnet)), 16);
  pthread_mutex_unlock(&d->lock);
  fill_rdma(t, &h->rdma);
  ib_ece_fill_hello(d, &h->rdma);
  h->rdma.stripe_ports = ib_stripe_offer(d);
  /* A GID that is not there has no type: 0, which no version check reads. */
  b->gid_type = t->ll == TOPO_LL_IB || h->rdma.gid_state != HELLO_GID_POPULATED ? 0
                : t->gid_type == GID_TYPE_V2                                    ? 2
                : t->gid_type == GID_TYPE_V1                                    ? 1
                                                                                : 0;
  b->mtu = d->mtu;
  b->lid = t->lid;
  b->pkey_index = (int)transport_prefs()->ib_pkey;
  scopy(b->netdev, sizeof(b->netdev), t->netdev ? t->netdev : "");
  b->is_off_plane = t->off_plane;
}

void ib_peer_name(const struct hello *peer, char *buf, size_t cap) {
  char addr[sizeof(peer->addr)];
  const char *a = peer->addr;
  if (*a == '[') a++;
  if (!strncmp(a, "::ffff:", 7) && strchr(a + 7, '.')) a += 7; /* an IPv4 peer on a v6 socket */
  scopy(addr, sizeof(addr), a);
  addr[strcspn(addr, "]<")] = 0; /* the port is noise here */
  const char *host = peer->host[0] ? peer->host : "the peer";
  if (addr[0]) snprintf(buf, cap, "%s (%s)", host, addr);
  else snprintf(buf, cap, "%s", host);
}
