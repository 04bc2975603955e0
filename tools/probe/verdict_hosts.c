/* SPDX-License-Identifier: Apache-2.0 */
/* A cause that sits on one host shows as every pair with that host
 * failing the same way: TCP connects to it unanswered (a firewall there),
 * or its large messages stalling while small ones pass (a hop on its path
 * with a smaller MTU). The pairs are listed one by one; this names the
 * host once, with the fix on that host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "tools/probe/verdict.h"

#define MIN_PEERS 2 /* with one peer, either host could be the cause */

/* The rank in every failed direction labelled cause, with at least
 * MIN_PEERS distinct peers (listed in peers): true with *rank set, false
 * when there is none. */
static bool common_rank(const struct probe_run *r, const char *cause, char *peers, size_t cap,
                        int *rank) {
  int *hits = calloc((size_t)r->world, sizeof(int)), total = 0, found = -1;
  if (!hits) return false;
  for (int i = 0; i < r->npair; i++) {
    const struct probe_pair *p = &r->pairs[i];
    if (!p->tested || p->ok || strcmp(p->cause, cause)) continue;
    hits[p->src]++, hits[p->dst]++, total++;
  }
  for (int k = 0; total && k < r->world && found < 0; k++)
    if (hits[k] == total) found = k;
  free(hits);
  if (found < 0) return false;
  size_t o = 0;
  int n = 0;
  peers[0] = 0;
  for (int k = 0; k < r->world; k++) {
    int with = 0;
    for (int i = 0; i < r->npair && !with; i++) {
      const struct probe_pair *p = &r->pairs[i];
      with = p->tested && !p->ok && !strcmp(p->cause, cause) &&
             ((p->src == found && p->dst == k) || (p->dst == found && p->src == k));
    }
    if (!with || o >= cap) continue;
    int w = snprintf(peers + o, cap - o, "%s%s", n ? ", " : "", r->facts[k].host);
    o += w > 0 ? (size_t)w : 0;
    n++;
  }
  *rank = found;
  return n >= MIN_PEERS;
}

static void unanswered(struct probe_run *r) {
  char peers[600];
  int k;
  if (!common_rank(r, "no answer", peers, sizeof(peers), &k)) return;
  const char *h = r->facts[k].host;
  char fix[600];
  snprintf(fix, sizeof(fix),
           "allow incoming TCP on %s from the other nodes, ports 1024-65535 (the plugin listens "
           "on ephemeral ports): nft list ruleset / iptables -S on %s, or the cloud security "
           "group; then rerun the probe",
           h, h);
  probe_add_problem(r, SEV_ERROR, h, fix,
                    "%s: TCP connects between it and %s go unanswered (the plugin's cause for "
                    "every failed pair with it): a firewall on %s or in front of it drops them",
                    h, peers, h);
}

static void stalled(struct probe_run *r) {
  char peers[600];
  int k;
  if (!common_rank(r, "path MTU", peers, sizeof(peers), &k)) return;
  const struct probe_facts *f = &r->facts[k];
  int bytes = 0;
  for (int i = 0; i < r->npair && !bytes; i++)
    if ((r->pairs[i].src == k || r->pairs[i].dst == k) && r->pairs[i].stall_bytes)
      bytes = r->pairs[i].stall_bytes;
  char fix[700];
  snprintf(fix, sizeof(fix),
           "give every hop between %s and the others (switch ports, bridges, veths, tunnels) "
           "the hosts' MTU %d, or set the hosts' MTU to the smallest on the path "
           "(ip link set %s mtu 1500 on every node); find the hop with "
           "ping -M do -s %d <address of %s> from another node",
           f->host, f->sock_mtu, f->sock_ifs[0] ? f->sock_ifs : "<interface>",
           f->sock_mtu > 28 ? f->sock_mtu - 28 : 1472, f->host);
  probe_add_problem(r, SEV_ERROR, f->host, fix,
                    "%s: the pair's large transfers stall while small ones pass: path MTU. "
                    "%d-byte messages between %s and %s never arrive while 8-byte ones do; the "
                    "socket interface MTU is %d on %s, so a hop on its path carries smaller "
                    "frames and drops the larger ones without a word",
                    f->host, bytes, f->host, peers, f->sock_mtu, f->host);
}

void verdict_hosts(struct probe_run *r) {
  unanswered(r);
  stalled(r);
}
