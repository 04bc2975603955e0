/* SPDX-License-Identifier: Apache-2.0 */
/* The root of a stall, passed along the wait-for chain (stall.h): a rank
 * that judged its own stall's root (its peer does not answer, its peer's
 * caller is idle, its path moves nothing) tells it to whoever waits on it;
 * a rank whose peer is busy waiting itself takes the root its peer tells,
 * so every rank of the chain names the same root first. An end's address
 * is IPv4 (ip4) or IPv6 (ip6, has6), whichever its connection used. */
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

/* Puts a into end e of r; false when it is neither IPv4 nor IPv6. */
static bool put_end(struct run_root *r, int e, struct ipaddr *a) {
  ipaddr_unmap(a);
  if (a->family == AF_INET) {
    memcpy(e ? &r->ip4b : &r->ip4, a->bytes, 4);
    return true;
  }
  if (a->family != AF_INET6) return false;
  r->has6 |= (uint8_t)(1u << e);
  memcpy(r->ip6[e], a->bytes, 16);
  return true;
}

static bool peer_end(const struct transport_peer *p, struct run_root *r) {
  struct ipaddr a;
  if (!p->sa_len || ipaddr_from_sockaddr(&a, (const struct sockaddr *)&p->sa, NULL)) return false;
  return put_end(r, 0, &a);
}

static bool has_addr(const struct run_root *r, int e) {
  return (r->has6 >> e & 1) || (e ? r->ip4b : r->ip4);
}

static void end_words(const struct run_root *r, int e, char *out, size_t cap) {
  if (r->has6 >> e & 1) inet_ntop(AF_INET6, r->ip6[e], out, (socklen_t)cap);
  else inet_ntop(AF_INET, e ? &r->ip4b : &r->ip4, out, (socklen_t)cap);
}

/* Whether end 1 sorts before end 0: IPv4 first, then by address, then pid. */
static bool end1_first(const struct run_root *r) {
  bool v6a = r->has6 & 1, v6b = r->has6 >> 1 & 1;
  if (v6a != v6b) return v6a;
  int d = v6a ? memcmp(r->ip6[1], r->ip6[0], 16)
              : (ntohl(r->ip4b) > ntohl(r->ip4)) - (ntohl(r->ip4b) < ntohl(r->ip4));
  return d < 0 || (d == 0 && r->pid2 < r->pid);
}

static void swap_ends(struct run_root *r) {
  struct run_root s = *r;
  r->pid = s.pid2, r->pid2 = s.pid, r->ip4 = s.ip4b, r->ip4b = s.ip4;
  r->has6 = (uint8_t)((s.has6 & 1) << 1 | (s.has6 >> 1 & 1));
  memcpy(r->ip6[0], s.ip6[1], 16);
  memcpy(r->ip6[1], s.ip6[0], 16);
}

/* This host's end of c: its device's interface address. */
static bool here_end(const struct transport_comm *c, struct run_root *r) {
  struct ipaddr a;
  if (run_path_local(c, &a) && put_end(r, 0, &a)) return true;
  if (!c->dev) return false;
  a = c->dev->addr;
  return put_end(r, 0, &a);
}

void run_stall_root(struct transport_comm *c, int verdict, bool is_here) {
  struct run_root r = {0};
  if (verdict <= RUN_ROOT_NONE || verdict > RUN_ROOT_PORT) return;
  r.pid = is_here ? (uint32_t)getpid() : c->peer.who.pid;
  if (!(is_here ? here_end(c, &r) : peer_end(&c->peer, &r))) return;
  r.verdict = (uint16_t)verdict;
  struct ipaddr here;
  if (r.verdict == RUN_ROOT_LINK && run_path_local(c, &here) && put_end(&r, 1, &here))
    r.pid2 = (uint32_t)getpid(); /* a path: this end too, so every rank names both */
  run_root_set(&r);
}

/* The root the peer of c told, with its ends' addresses; false when none
 * (or its address has not come yet). */
static bool told_root(struct transport_comm *c, struct run_root *r) {
  memset(r, 0, sizeof(*r));
  r->verdict = (uint16_t)liveness_peer_root(c->live, &r->pid, &r->ip4);
  if (!r->verdict || r->verdict > RUN_ROOT_PORT) return false;
  liveness_peer_root_end(c->live, &r->pid2, &r->ip4b);
  r->has6 = (uint8_t)liveness_peer_root6(c->live, r->ip6);
  if (!has_addr(r, 1)) r->pid2 = 0;
  return has_addr(r, 0);
}

static void say_adopted(struct transport_comm *c, const struct run_root *r, const char *what,
                        long long secs) {
  char ip[INET6_ADDRSTRLEN], ip2[INET6_ADDRSTRLEN], path[160] = "";
  end_words(r, 0, ip, sizeof(ip));
  if (r->verdict == RUN_ROOT_LINK && r->pid2) {
    end_words(r, 1, ip2, sizeof(ip2));
    snprintf(path, sizeof(path), ": the path between pid %u at %s and pid %u at %s", r->pid, ip,
             r->pid2, ip2);
  }
  static const char *const how[] = {
    "",
    "it does not answer liveness checks (stopped, frozen, dead or cut off)",
    "its caller has stopped posting to the network (it did not enter this collective)",
    "the path to it moves no bytes while both ends post",
    ("a network link of its process is down (an RDMA port or an interface), so nothing moves "
     "through it"),
  };
  static const char *const fix[] = {
    "", "on that host run ps -o stat,cmd -p %u",
    "look at its stack with py-spy dump --pid %u on that host",
    "check the path to pid %u (ping, error counters, firewall)",
    ("on that host, the port or interface pid %u's log names (its stall WARN): its cable, "
     "transceiver and switch port (ibstat, ip link, dmesg)")};
  char f[240];
  snprintf(f, sizeof(f), fix[r->verdict], r->pid);
  WARN("stall: the root is pid %u at %s: %s%s (this rank is waiting on %s pid %u (%s), which is "
       "busy itself and reports it); here %s for %lld s. Fix: %s",
       r->pid, ip, how[r->verdict], path, c->peer.host, c->peer.who.pid, c->peer.addr, what, secs,
       f);
}

bool run_stall_adopt(struct transport_comm *c, const char *what, long long secs) {
  struct run_root r;
  if (!told_root(c, &r)) return false;
  if (r.pid == (uint32_t)getpid()) {
    /* The chain came back naming this process, which runs: the far end of
     * its own silent peer judged it silent too. The path between is it. */
    struct run_root own;
    if (!run_root_get(&own) || own.verdict != RUN_ROOT_SILENT) return false;
    r = own;
    r.verdict = RUN_ROOT_LINK;
  }
  /* one order for a path's two ends, so every rank's line names it alike */
  if (r.verdict == RUN_ROOT_LINK && r.pid2 && end1_first(&r)) swap_ends(&r);
  run_root_set(&r); /* and tell whoever waits on this rank */
  say_adopted(c, &r, what, secs);
  return true;
}
