/* SPDX-License-Identifier: Apache-2.0 */
/* A stalled path in words (path_words.h). */
#include "transport/run/path_words.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/log.h"
#include "transport/run/evidence.h"
#include "transport/transport.h"

static bool is_tcp(const struct transport_comm *c) {
  return c->ops && !strcmp(c->ops->name, "tcp");
}

bool run_path_local(const struct transport_comm *c, struct ipaddr *a) {
  struct run_tcp_evidence e;
  if (!is_tcp(c)) return false;
  tcp_comm_evidence(c, &e);
  char ip[64];
  snprintf(ip, sizeof(ip), "%s", e.local);
  char *lt = strchr(ip, '<');
  if (lt) *lt = '\0';
  return ip[0] && ipaddr_parse(a, ip) == 0;
}

/* "vm (10.0.0.6<39312>, eth0)" or "vm (mlx5_0 port 1)", and the data
 * sockets' counters. */
static void this_end(const struct transport_comm *c, char *end, size_t cap, char *counters,
                     size_t ccap) {
  char host[64] = "";
  gethostname(host, sizeof(host) - 1);
  counters[0] = '\0';
  if (!is_tcp(c)) {
    snprintf(end, cap, "%s (%s port %d)", host, c->dev ? c->dev->name : "?",
             c->dev ? c->dev->port : 0);
    return;
  }
  struct run_tcp_evidence e;
  tcp_comm_evidence(c, &e);
  snprintf(end, cap, "%s (%s, %s)", host, e.local[0] ? e.local : "?", c->dev ? c->dev->name : "?");
  if (e.has)
    snprintf(counters, ccap,
             "; its data sockets here: %llu retransmits, %u segments unacknowledged",
             (unsigned long long)e.retrans, e.unacked);
}

void run_say_link(const struct transport_comm *c, bool is_cut, const struct liveness_path *lp,
                  const char *what, long long secs) {
  const struct transport_peer *p = &c->peer;
  char end[200], counters[160], how[300];
  this_end(c, end, sizeof(end), counters, sizeof(counters));
  if (!is_cut) snprintf(how, sizeof(how), "moves no bytes while both processes run and post");
  else if (lp->is_syn)
    snprintf(how, sizeof(how),
             "drops everything: its process does not answer and our liveness connection to it "
             "gets no reply to its SYN (%u retransmits), so the path or that host is down",
             lp->retrans);
  else
    snprintf(how, sizeof(how),
             "drops everything: its process does not answer and our liveness checks to it go "
             "unacknowledged (the kernel retransmits them and backs off; %u retransmits, %u "
             "unacknowledged on its current connection), which a stopped process's kernel never "
             "causes, so the path or that host is down",
             lp->retrans, lp->unacked);
  WARN("stall: the path between this host and %s pid %u (%s) %s; this end %s, that end %s%s; "
       "here %s for %lld s. Fix: check that path on both hosts (ping, ip -s link, the switch "
       "ports' error counters, routes, firewall rules such as nft list ruleset)",
       p->host, p->who.pid, p->addr, how, end, p->desc, counters, what, secs);
}
