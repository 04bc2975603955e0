/* SPDX-License-Identifier: Apache-2.0 */
/* The root of a stall, passed along the wait-for chain (stall.h): a rank
 * that judged its own stall's root (its peer does not answer, its peer's
 * caller is idle, its path moves nothing) tells it to whoever waits on it;
 * a rank whose peer is busy waiting itself takes the root its peer tells,
 * so every rank of the chain names the same root first. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/log.h"
#include "transport/liveness.h"
#include "transport/run/path_words.h"
#include "transport/run/stall.h"
#include "transport/run/waitfor.h"
#include "transport/transport.h"

static bool peer_ip4(const struct transport_peer *p, uint32_t *ip4) {
  struct ipaddr a;
  if (!p->sa_len || ipaddr_from_sockaddr(&a, (const struct sockaddr *)&p->sa, NULL)) return false;
  ipaddr_unmap(&a);
  if (a.family != AF_INET) return false; /* the frame carries IPv4 only */
  memcpy(ip4, a.bytes, 4);
  return true;
}

void run_stall_root(struct transport_comm *c, int verdict) {
  static const uint16_t map[] = {RUN_ROOT_SILENT, RUN_ROOT_IDLE, RUN_ROOT_LINK};
  struct run_root r = {0, c->peer.who.pid, 0};
  if (verdict < 0 || verdict > 2 || !peer_ip4(&c->peer, &r.ip4)) return;
  r.verdict = map[verdict];
  if (r.verdict == RUN_ROOT_LINK) { /* a path: this end too, so every rank names both */
    r.pid2 = (uint32_t)getpid();
    r.ip4b = run_path_local_ip4(c);
  }
  run_root_set(&r);
}

bool run_stall_adopt(struct transport_comm *c, const char *what, long long secs) {
  struct run_root r = {0};
  r.verdict = (uint16_t)liveness_peer_root(c->live, &r.pid, &r.ip4);
  if (!r.verdict || r.verdict > RUN_ROOT_LINK) return false;
  if (r.pid == (uint32_t)getpid()) {
    /* The chain came back naming this process, which runs: the far end of
     * its own silent peer judged it silent too. The path between is it. */
    struct run_root own;
    if (!run_root_get(&own) || own.verdict != RUN_ROOT_SILENT) return false;
    r = own;
    r.verdict = RUN_ROOT_LINK;
  }
  if (r.verdict == RUN_ROOT_LINK && liveness_peer_root_end(c->live, &r.pid2, &r.ip4b) &&
      (ntohl(r.ip4b) < ntohl(r.ip4) || (r.ip4b == r.ip4 && r.pid2 < r.pid))) {
    /* one order for both ends, so every rank's line names the path alike */
    uint32_t pid = r.pid, ip4 = r.ip4;
    r.pid = r.pid2, r.ip4 = r.ip4b, r.pid2 = pid, r.ip4b = ip4;
  }
  run_root_set(&r); /* and tell whoever waits on this rank */
  char ip[INET_ADDRSTRLEN], ip2[INET_ADDRSTRLEN], path[120] = "";
  inet_ntop(AF_INET, &r.ip4, ip, sizeof(ip));
  if (r.verdict == RUN_ROOT_LINK && r.pid2) {
    inet_ntop(AF_INET, &r.ip4b, ip2, sizeof(ip2));
    snprintf(path, sizeof(path), ": the path between pid %u at %s and pid %u at %s", r.pid, ip,
             r.pid2, ip2);
  }
  static const char *const how[] = {
    "",
    "it does not answer liveness checks (stopped, frozen, dead or cut off)",
    "its caller has stopped posting to the network (it did not enter this collective)",
    "the path to it moves no bytes while both ends post",
  };
  static const char *const fix[] = {"", "on that host run ps -o stat,cmd -p %u",
                                    "look at its stack with py-spy dump --pid %u on that host",
                                    "check the path to pid %u (ping, error counters, firewall)"};
  char f[160];
  snprintf(f, sizeof(f), fix[r.verdict], r.pid);
  WARN("stall: the root is pid %u at %s: %s%s (this rank is waiting on %s pid %u (%s), which is "
       "busy itself and reports it); here %s for %lld s. Fix: %s",
       r.pid, ip, how[r.verdict], path, c->peer.host, c->peer.who.pid, c->peer.addr, what, secs, f);
  return true;
}
