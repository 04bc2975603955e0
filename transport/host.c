/* SPDX-License-Identifier: Apache-2.0 */
/* The host's network view and the device list NCCL sees, built once at
 * init: one device per usable RDMA port (added by the IB transport), or,
 * when there is none, one per chosen TCP interface. The list itself lives
 * in host_devs.c, which the transports fill without calling back here. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "common/strutil.h"
#include "topo/topo.h"
#include "transport/ib/dev/ib.h"
#include "transport/ib/ib_ops.h"
#include "transport/prefs.h"
#include "transport/transport.h"

static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void add_tcp_devices(struct transport_host *h) {
  if (transport_host_reserve(h, h->choice.n)) return;
  for (int j = 0; j < h->choice.n; j++) {
    const struct netif *n = &h->ifs.ifs[h->choice.idx[j]];
    struct transport_dev *d = transport_host_add_dev(h, n->pci_path);
    if (!d) break;
    scopy(d->name, sizeof(d->name), n->name);
    d->netif = h->choice.idx[j];
    scopy(d->ifname, sizeof(d->ifname), n->name);
    d->addr = n->addr[h->choice.primary[j]];
    d->guid = (uint64_t)d->index;
    d->speed_mbps = n->speed_mbps > 0 ? n->speed_mbps : 10000;
  }
}

static void log_choice(struct transport_host *h) {
  char summary[2048];
  netif_choice_summary(&h->ifs, &h->choice, summary, sizeof(summary));
  struct ev e;
  ev_begin(&e, "interface_choice");
  ev_str(&e, "source", h->ifs.source);
  ev_str(&e, "filter", transport_prefs()->socket_ifname ? transport_prefs()->socket_ifname : "");
  ev_str(&e, "summary", summary);
  ev_int(&e, "chosen", h->choice.n);
  ev_end(&e);
  INFO(LOG_INIT, "socket interfaces: %s", summary);
}

/* RDMA ports, chosen by topo/ and opened by the IB transport, become the
 * devices; without any, one line says why and the TCP interfaces are used. */
static int add_rdma_devices(struct transport_host *h) {
  int n = ib_transport_init(h);
  if (!n && !ib_state()->has_warned_none)
    INFO(LOG_INIT, "no RDMA device: %s; using TCP interfaces", ib_state()->why_none);
  return n;
}

static void build(void) {
  struct transport_host *h = transport_host_edit();
  memset(h, 0, sizeof(*h));
  if (netif_discover(&h->ifs) != 0) {
    snprintf(h->why_none, sizeof(h->why_none),
             "the network interfaces could not be listed (see the warning above)");
    return;
  }
  int fam = transport_prefs()->socket_family;
  int family = fam == 0 ? AF_INET : fam == 1 ? AF_INET6 : AF_UNSPEC;
  netif_choose(&h->ifs, transport_prefs()->socket_ifname, family, &h->choice);
  log_choice(h);
  if (h->choice.n == 0) {
    /* Control connections need an interface even for RDMA devices. */
    snprintf(h->why_none, sizeof(h->why_none), "%s", h->choice.error);
    return;
  }
  if (!add_rdma_devices(h)) add_tcp_devices(h);
}

void transport_host_init(void) { pthread_once(&host_once, build); }
