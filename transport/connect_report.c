/* SPDX-License-Identifier: Apache-2.0 */
/* What the connector tells the user about the listener's addresses: each
 * one described with its interface, host and reachability; the detour when
 * an address we preferred failed and a later one worked; and, when none
 * worked, why, with the fix. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/events.h"
#include "common/log.h"
#include "topo/strbuf.h"
#include "transport/connect.h"
#include "transport/report.h"
#include "transport/sock.h"

/* "10.0.0.7<46417> (eth1 on host-b, subnet 10.0.0.0/24, local eth0)" */
void connect_cand_desc(const struct connecting *c, const struct cand *k, char *buf, size_t cap) {
  char cidr[64];
  ipaddr_subnet_str(&k->hc.addr, cidr, sizeof(cidr));
  if (ipaddr_is_loopback(&k->hc.addr))
    snprintf(buf, cap, "%s (%s on %s: its loopback address)", k->str, k->hc.ifname, c->h.host);
  else if (ipaddr_is_link_local(&k->hc.addr))
    snprintf(buf, cap, "%s (%s on %s: link-local, reachable only on a link both hosts share%s%s)",
             k->str, k->hc.ifname, c->h.host, k->is_local ? ", local " : "", k->local_if);
  else if (k->is_local)
    snprintf(buf, cap, "%s (%s on %s, subnet %s, local %s)", k->str, k->hc.ifname, c->h.host, cidr,
             k->local_if);
  else
    snprintf(buf, cap, "%s (%s on %s, subnet %s, which no local interface is on)", k->str,
             k->hc.ifname, c->h.host, cidr);
}

/* Every address we preferred over the one that worked, with what happened
 * to it: failed (with its errno), or still unanswered when a later one won. */
void connect_report_detour(struct connecting *c, const struct cand *won) {
  char failed[1400];
  size_t o = 0;
  int nfail = 0;
  int64_t now = now_ns();
  for (int o2 = 0; o2 < c->ncands; o2++) {
    const struct cand *k = &c->cands[c->cand_order[o2]];
    if (k == won) break;
    if (!k->attempts) continue;
    char d[256], what[700];
    connect_cand_desc(c, k, d, sizeof(d));
    if (k->stage == CAND_CONNECTING || k->stage == CAND_HELLO)
      snprintf(what, sizeof(what), "no answer after %lld ms (%d attempt%s)",
               (long long)((now - k->attempt_start) / 1000000), k->attempts,
               k->attempts == 1 ? "" : "s");
    else snprintf(what, sizeof(what), "%s", k->last_why);
    o = topo_cat(failed, sizeof(failed), o, "%s%s: %s", nfail ? "; " : "", d, what);
    nfail++;
  }
  if (!nfail) return;
  char wd[256], key[600];
  connect_cand_desc(c, won, wd, sizeof(wd));
  const char *peer_if = hello_info_value(&c->peer, "NCCL_SOCKET_IFNAME");
  snprintf(key, sizeof(key), "detour|%s|%s|%s", c->peer.host, won->hc.ifname, failed);
  struct ev e;
  ev_begin(&e, "connect_detour");
  ev_str(&e, "device", c->dev->name);
  ev_str(&e, "peer_host", c->peer.host);
  ev_str(&e, "failed", failed);
  ev_str(&e, "worked", wd);
  ev_end(&e);
  if (report_first(key))
    WARN("connected to %s for device %s through %s, after %s. Traffic works, but the peer "
         "advertises an address this host cannot reach: set NCCL_SOCKET_IFNAME=%s on every node "
         "so both sides use the network they share (on %s it is %s)",
         c->peer.host, c->dev->name, wd, failed, won->hc.ifname, c->peer.host, peer_if);
}

/* Every candidate is the loopback address of a peer on another host. */
static bool only_peer_loopback(const struct connecting *c) {
  for (int i = 0; i < c->ncands; i++)
    if (!c->cands[i].is_peer_loopback) return false;
  return c->ncands > 0;
}

/* The listener offered nothing but its loopback address: no attempt can
 * work, and the fix is on the listener's host. */
static void fail_peer_loopback(const struct connecting *c) {
  const struct transport_dev *d = c->dev;
  char mine[64], tried[400];
  size_t o = 0;
  for (int i = 0; i < c->ncands; i++)
    o = topo_cat(tried, sizeof(tried), o, "%s%s", i ? ", " : "", c->cands[i].str);
  ipaddr_cidr(&d->addr, mine, sizeof(mine));
  WARN("cannot connect to %s for device %s: %s offered its loopback address (%s): "
       "NCCL_SOCKET_IFNAME on %s selects nothing routable, so no other host can connect to it. On "
       "%s, bring up the interface on the network the nodes share or set NCCL_SOCKET_IFNAME there "
       "to it; this host connects from %s (%s)",
       c->h.host, d->name, c->h.host, tried, c->h.host, c->h.host, d->ifname, mine);
}

void connect_report_failure(struct connecting *c) {
  char tried[2000], have[700];
  size_t o = 0;
  for (int o2 = 0; o2 < c->ncands; o2++) {
    const struct cand *k = &c->cands[c->cand_order[o2]];
    char d[256];
    connect_cand_desc(c, k, d, sizeof(d));
    if (!k->attempts)
      o = topo_cat(tried, sizeof(tried), o, "%s%s: not tried%s%s", o2 ? "; " : "", d,
                   k->last_why[0] ? ", " : "", k->last_why);
    else
      o = topo_cat(tried, sizeof(tried), o, "%s%s: %s after %d attempt%s", o2 ? "; " : "", d,
                   k->last_why, k->attempts, k->attempts == 1 ? "" : "s");
  }
  netif_list_str(&transport_host()->ifs, have, sizeof(have));
  ev_count(C_CONN_FAILURES, 1);
  struct ev e;
  ev_begin(&e, "connect_failed");
  ev_str(&e, "device", c->dev->name);
  ev_str(&e, "peer_host", c->h.host);
  ev_str(&e, "tried", tried);
  ev_end(&e);
  if (only_peer_loopback(c)) {
    fail_peer_loopback(c);
    return;
  }
  WARN("cannot connect to %s for device %s within %lld ms (NCCL_DIAG_CONNECT_TIMEOUT_MS): %s. "
       "This host has %s. Check that the peer process is alive, that NCCL_SOCKET_IFNAME selects a "
       "network both nodes share, and that no firewall drops TCP between them",
       c->h.host, c->dev->name, (long long)((c->deadline - c->start) / 1000000), tried, have);
}
