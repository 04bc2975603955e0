/* SPDX-License-Identifier: Apache-2.0 */
/* The listener's addresses as this host tries them: those on a local
 * subnet first; an IPv6 link-local address once through each local
 * interface that has one (the same interface name as the listener's first),
 * because such an address means nothing without the link it is on and the
 * kernel refuses it (EINVAL) without a scope; a listener's loopback address
 * never, when the listener is on another host. */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "transport/connect.h"
#include "transport/sock.h"

/* Local interfaces that can carry an IPv6 link-local connection: up,
 * running, not loopback, with an fe80:: address. */
static bool has_link(const struct netif *n) {
  if (!n->up || !n->running || n->loopback) return false;
  for (int a = 0; a < n->naddr; a++)
    if (n->addr[a].family == AF_INET6 && ipaddr_is_link_local(&n->addr[a])) return true;
  return false;
}

static bool needs_scope(const struct handle_cand *hc) {
  return hc->addr.family == AF_INET6 && ipaddr_is_link_local(&hc->addr);
}

/* How many candidates the handle's addresses become here. */
static int count_candidates(const struct handle *h, const struct netif_list *ifs) {
  int nlinks = 0, n = 0;
  for (int j = 0; j < ifs->n; j++) nlinks += has_link(&ifs->ifs[j]);
  for (int i = 0; i < h->ncands; i++) n += needs_scope(&h->cands[i]) && nlinks ? nlinks : 1;
  return n;
}

static void init_cand(struct cand *k, const struct handle_cand *hc, const char *scope_if) {
  k->hc = *hc;
  k->fd = -1;
  k->sl = ipaddr_to_sockaddr(&k->hc.addr, k->hc.port, &k->ss);
  if (scope_if) {
    ((struct sockaddr_in6 *)&k->ss)->sin6_scope_id = if_nametoindex(scope_if);
    snprintf(k->scope_if, sizeof(k->scope_if), "%s", scope_if);
    snprintf(k->local_if, sizeof(k->local_if), "%s", scope_if);
    k->is_local = true;
  }
  sockaddr_str((struct sockaddr *)&k->ss, k->str, sizeof(k->str));
}

/* A link-local address once through each local link: the interface named
 * as the listener's first (the same wiring on every node is the common
 * case), then the others. Without any local link it stays one candidate
 * that is never tried. */
static int expand_link_local(struct connecting *c, const struct handle_cand *hc, int at) {
  const struct netif_list *ifs = &transport_host()->ifs;
  int n = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int j = 0; j < ifs->n; j++) {
      const struct netif *ni = &ifs->ifs[j];
      if (!has_link(ni) || (strcmp(ni->name, hc->ifname) == 0) != (pass == 0)) continue;
      init_cand(&c->cands[at + n++], hc, ni->name);
    }
  if (n) return n;
  struct cand *k = &c->cands[at];
  init_cand(k, hc, NULL);
  k->stage = CAND_DEAD;
  snprintf(k->last_why, sizeof(k->last_why),
           "a link-local address, and no interface of this host is up with one (so none shares "
           "a link with %s)",
           c->h.host);
  return 1;
}

static bool on_local_subnet(const struct netif_list *ifs, struct cand *k) {
  int ai;
  const struct netif *ni = netif_on_subnet(ifs, &k->hc.addr, &ai);
  /* A candidate prefix tells its subnet from the listener's side; our own
   * prefix tells it from ours. Either match is a local subnet. */
  for (int j = 0; j < ifs->n && !ni; j++)
    for (int a = 0; a < ifs->ifs[j].naddr; a++) {
      struct ipaddr mine = ifs->ifs[j].addr[a];
      mine.prefix = k->hc.addr.prefix;
      if (k->hc.addr.prefix > 0 && ifs->ifs[j].up && ipaddr_in_subnet(&k->hc.addr, &mine) &&
          !ipaddr_is_loopback(&mine)) {
        ni = &ifs->ifs[j];
        break;
      }
    }
  if (ni) snprintf(k->local_if, sizeof(k->local_if), "%s", ni->name);
  return ni != NULL;
}

static void order_candidates(struct connecting *c) {
  const struct transport_host *host = transport_host();
  int n = 0;
  for (int i = 0; i < c->ncands; i++) {
    struct cand *k = &c->cands[i];
    if (!k->scope_if[0]) k->is_local = on_local_subnet(&host->ifs, k);
  }
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < c->ncands; i++)
      if (c->cands[i].is_local == (pass == 0)) c->cand_order[n++] = i;
}

/* A listener on another host that offers its loopback address means this
 * host by it: that candidate is never tried (connect_report.c names it). */
static void skip_peer_loopback(struct connecting *c) {
  if (handle_host_is_local(&c->h)) return;
  for (int i = 0; i < c->ncands; i++) {
    struct cand *k = &c->cands[i];
    if (!ipaddr_is_loopback(&k->hc.addr)) continue;
    k->is_peer_loopback = true;
    k->stage = CAND_DEAD;
    snprintf(k->last_why, sizeof(k->last_why), "on this host that address is this host itself");
  }
}

int connect_cands_build(struct connecting *c) {
  const struct handle *h = &c->h;
  int n = count_candidates(h, &transport_host()->ifs);
  c->cands = calloc((size_t)n, sizeof(*c->cands));
  c->cand_order = calloc((size_t)n, sizeof(*c->cand_order));
  if (!c->cands || !c->cand_order) return ENOMEM;
  int at = 0;
  for (int i = 0; i < h->ncands && at < n; i++) {
    if (needs_scope(&h->cands[i])) at += expand_link_local(c, &h->cands[i], at);
    else init_cand(&c->cands[at++], &h->cands[i], NULL);
  }
  c->ncands = at;
  order_candidates(c);
  skip_peer_loopback(c);
  return 0;
}
