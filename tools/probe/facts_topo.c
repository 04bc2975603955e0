/* SPDX-License-Identifier: Apache-2.0 */
/* The topology half of a host's facts: the same discovery and choice the
 * plugin and doctor run (topo_discover, topo_choose), reduced to what must
 * agree across hosts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/knobs.h"
#include "common/strutil.h"
#include "tools/probe/facts.h"
#include "topo/gid.h"
#include "topo/sysfs.h"
#include "topo/topo.h"

static void topo_ifs(struct probe_facts *f, const struct topo_host *h,
                     const struct topo_choice *c) {
  for (int i = 0; i < h->ifs.n && f->nif < PROBE_MAX_IFS; i++) {
    const struct netif *n = &h->ifs.ifs[i];
    struct probe_if *x = &f->ifs[f->nif++];
    scopy(x->name, sizeof(x->name), n->name);
    if (n->naddr) ipaddr_cidr(&n->addr[0], x->addr, sizeof(x->addr));
    x->mtu = n->mtu;
    x->up = n->up && n->running;
  }
  size_t o = 0;
  for (int j = 0; j < c->sock.n && o < sizeof(f->sock_ifs); j++)
    o += (size_t)snprintf(f->sock_ifs + o, sizeof(f->sock_ifs) - o, "%s%s", j ? "," : "",
                          h->ifs.ifs[c->sock.idx[j]].name);
  if (c->sock.n) f->sock_mtu = h->ifs.ifs[c->sock.idx[0]].mtu;
  scopy(f->sock_err, sizeof(f->sock_err), c->sock.error);
  struct netif_choice a;
  if (netif_choose(&h->ifs, NULL, c->prefs.socket_family, &a) > 0)
    scopy(f->auto_if, sizeof(f->auto_if), h->ifs.ifs[a.idx[0]].name);
}

/* The P_Key at index NCCL_IB_PKEY; pkey untouched when sysfs has none. */
static void pkey_of(const char *dev, int port, int *pkey) {
  char text[32];
  long idx = (long)knob_int(K_IB_PKEY);
  if (!sysfs_read_str(text, sizeof(text), "class/infiniband/%s/ports/%d/pkeys/%ld", dev, port, idx))
    *pkey = (int)strtol(text, NULL, 0) & 0xffff;
}

static void topo_rdma(struct probe_facts *f, const struct topo_host *h,
                      const struct topo_choice *c) {
  f->rdma_present = h->has_rdma;
  for (int d = 0; d < c->ndev && f->nrdma < PROBE_MAX_RDMA; d++) {
    const struct topo_dev *v = &c->dev[d];
    struct probe_rdma *x = &f->rdma[f->nrdma++];
    scopy(x->name, sizeof(x->name), v->name);
    x->port = v->ib_port;
    scopy(x->ll, sizeof(x->ll), topo_ll_name(v->ll));
    x->gid_index = v->gid_index;
    gid_str(v->gid, x->gid, sizeof(x->gid));
    scopy(x->gid_type, sizeof(x->gid_type), gid_type_name(v->gid_type, v->ll));
    if (v->subnet.family) ipaddr_subnet_str(&v->subnet, x->subnet, sizeof(x->subnet));
    scopy(x->netdev, sizeof(x->netdev), v->netdev ? v->netdev : "");
    x->mtu = v->mtu;
    x->speed_mbps = v->speed_mbps;
    x->pkey = -1; /* unknown */
    pkey_of(v->name, v->ib_port, &x->pkey);
    facts_qos(x, h, v);
  }
}

static void topo_advice(struct probe_facts *f, const struct topo_choice *c) {
  for (int i = 0; i < c->nissue && f->nissue < PROBE_MAX_ISSUES; i++) {
    struct probe_issue *x = &f->issues[f->nissue++];
    const struct topo_issue *is = &c->issues[i];
    x->sev = is->severity == TOPO_ERROR ? 2 : is->severity == TOPO_WARNING ? 1 : 0;
    scopy(x->text, sizeof(x->text), is->text ? is->text : "");
  }
  for (int i = 0; i < c->nsetting && f->nrec < PROBE_MAX_RECS; i++) {
    struct probe_rec *x = &f->recs[f->nrec++];
    scopy(x->name, sizeof(x->name), c->settings[i].name);
    scopy(x->value, sizeof(x->value), c->settings[i].value);
    scopy(x->status, sizeof(x->status), c->settings[i].status);
  }
}

/* Discover and decide only: the report pass (log lines, events) is the
 * plugin's, which the probe loads as well. */
void facts_topo(struct probe_facts *f) {
  struct topo_host h;
  struct topo_choice c;
  if (topo_discover(&h, 0)) {
    scopy(f->sock_err, sizeof(f->sock_err), "the host's interfaces could not be listed");
  } else if (topo_decide(&h, NULL, &c)) {
    scopy(f->sock_err, sizeof(f->sock_err), "out of memory deciding the topology");
    topo_choice_free(&c);
  } else {
    topo_ifs(f, &h, &c);
    topo_rdma(f, &h, &c);
    topo_advice(f, &c);
    topo_choice_free(&c);
  }
  topo_host_free(&h);
}
