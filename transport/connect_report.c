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
#include "common/strbuf.h"
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
    /* Reachable: connected, and the listener took another attempt of ours
     * (it drops the ones it did not take) */
    if (!k->attempts || k->was_connected) continue;
    char d[256], what[700];
    connect_cand_desc(c, k, d, sizeof(d));
    if (k->stage == CAND_CONNECTING)
      snprintf(what, sizeof(what), "no answer after %lld ms (%d attempt%s)",
               (long long)((now - k->attempt_start) / 1000000), k->attempts,
               k->attempts == 1 ? "" : "s");
    else snprintf(what, sizeof(what), "%s", k->last_why);
    o = strbuf_cat(failed, sizeof(failed), o, "%s%s: %s", nfail ? "; " : "", d, what);
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
  char job[40];
  const char *here = won->local_if[0] ? won->local_if : c->dev->ifname;
  if (!report_job_ifname(won->hc.ifname, here, job, sizeof(job))) return;
  if (report_first(key))
    WARN("connected to %s for device %s through %s, after %s. Traffic works, but the peer "
         "advertises an address this host cannot reach: set NCCL_SOCKET_IFNAME=%s on every node "
         "so both sides use the network they share (%s on %s, %s here; the setting on %s is %s "
         "now)",
         c->peer.host, c->dev->name, wd, failed, job, won->hc.ifname, c->peer.host, here,
         c->peer.host, peer_if);
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
    o = strbuf_cat(tried, sizeof(tried), o, "%s%s", i ? ", " : "", c->cands[i].str);
  ipaddr_cidr(&d->addr, mine, sizeof(mine));
  WARN("cannot connect to %s for device %s: %s offered its loopback address (%s): "
       "NCCL_SOCKET_IFNAME on %s selects nothing routable, so no other host can connect to it. On "
       "%s, bring up the interface on the network the nodes share or set NCCL_SOCKET_IFNAME there "
       "to it; this host connects from %s (%s)",
       c->h.host, d->name, c->h.host, tried, c->h.host, c->h.host, d->ifname, mine);
}

/* Why an address did not work, as far as its last attempt tells. */
enum fail_cause {
  FC_LOOPBACK,   /* the loopback address of a listener on another host */
  FC_NO_LINK,    /* link-local, and this host has no link-local interface */
  FC_LINK_LOCAL, /* link-local, tried through a local link, and no answer there */
  FC_REFUSED,    /* ECONNREFUSED: nothing listens there any more */
  FC_NO_ROUTE,   /* EHOSTUNREACH and kin: no route, or a router says so */
  FC_NO_ANSWER,  /* ETIMEDOUT, or still unanswered at the deadline */
  FC_INVALID,    /* EINVAL: an address this host cannot connect to */
  FC_FORBIDDEN,  /* EACCES, EPERM: a local rule forbids it */
  FC_REJECTED,   /* the process there broke or refused our handshake */
  FC_DROPPED,    /* closed twice before any answer: a listener that does not know the handle */
  FC_BUSY,       /* connected, the process there has not answered yet */
  FC_OTHER,
  FC_COUNT
};

static enum fail_cause cause_of(const struct cand *k) {
  if (k->is_peer_loopback) return FC_LOOPBACK;
  if (!k->attempts) return FC_NO_LINK;
  if (k->stage == CAND_HELLO) return FC_BUSY; /* connected, our hello unanswered */
  /* A link-local address reaches one link; whatever the errno, the link
   * this host tried is not the listener's. */
  if (ipaddr_is_link_local(&k->hc.addr) && (k->stage == CAND_CONNECTING || k->last_err))
    return FC_LINK_LOCAL;
  if (k->stage == CAND_CONNECTING) return FC_NO_ANSWER;
  switch (k->last_err) {
  case 0: return FC_REJECTED;
  case ECONNREFUSED: return FC_REFUSED;
  case ECONNRESET:
  case EPIPE: return k->was_dropped ? FC_DROPPED : FC_OTHER;
  case EHOSTUNREACH:
  case ENETUNREACH:
  case ENETDOWN:
  case EHOSTDOWN: return FC_NO_ROUTE;
  case ETIMEDOUT: return FC_NO_ANSWER;
  case EINVAL:
  case EADDRNOTAVAIL:
  case EAFNOSUPPORT: return FC_INVALID;
  case EACCES:
  case EPERM: return FC_FORBIDDEN;
  default: return FC_OTHER;
  }
}

/* The cause as a code for the event file, so tools need not read the text. */
static const char *const cause_codes[FC_COUNT] = {
  [FC_LOOPBACK] = "peer_loopback", [FC_NO_LINK] = "no_link",     [FC_LINK_LOCAL] = "link_local",
  [FC_REFUSED] = "refused",        [FC_NO_ROUTE] = "no_route",   [FC_NO_ANSWER] = "no_answer",
  [FC_INVALID] = "invalid",        [FC_FORBIDDEN] = "forbidden", [FC_REJECTED] = "rejected",
  [FC_DROPPED] = "dropped",        [FC_BUSY] = "busy",           [FC_OTHER] = "other",
};

/* The causes where a TCP connection came up: what the process there did. */
static size_t cause_text_reached(char *buf, size_t cap, size_t o, enum fail_cause fc,
                                 const char *host) {
  switch (fc) {
  case FC_REJECTED:
    return strbuf_cat(buf, cap, o,
                      "the process listening there closed our connection or answered in a way this "
                      "build cannot read, without a refusal: see %s's log for why",
                      host);
  case FC_DROPPED:
    return strbuf_cat(buf, cap, o,
                      "a process listens there but closed our connection twice without answering: "
                      "it does not know this handle, so the process on %s that handed out this "
                      "address has exited or was restarted and another took its port (or the "
                      "handle is from another communicator); restart every rank of the job so "
                      "each gets current handles",
                      host);
  case FC_BUSY:
    return strbuf_cat(buf, cap, o,
                      "the process listening there has the connection but has not answered yet (it "
                      "has not called accept: busy, slow to start, or stopped): see %s's log",
                      host);
  default: return strbuf_cat(buf, cap, o, "see the error above");
  }
}

/* One sentence: the cause, and the fix on the host that has to change. */
static size_t cause_text(char *buf, size_t cap, size_t o, enum fail_cause fc, const char *host,
                         const char *have, const struct cand *k) {
  char works[200];
  if (fc == FC_REJECTED || fc == FC_DROPPED || fc == FC_BUSY)
    return cause_text_reached(buf, cap, o, fc, host);
  switch (fc) {
  case FC_LINK_LOCAL:
    if (!report_routable_ifname(k->local_if[0] ? k->local_if : NULL, works, sizeof(works)))
      snprintf(works, sizeof(works),
               "NCCL_SOCKET_IFNAME to an interface with a routable address "
               "(this host has %s)",
               have);
    return strbuf_cat(buf, cap, o,
                      "%s offered a link-local address, which reaches only its own link, and the "
                      "link this host tried it through%s%s%s is another one (no answer there): set "
                      "%s on every node",
                      host, k->local_if[0] ? " (" : "", k->local_if, k->local_if[0] ? ")" : "",
                      works);
  case FC_LOOPBACK:
    return strbuf_cat(buf, cap, o,
                      "%s offered its loopback address: NCCL_SOCKET_IFNAME on %s selects nothing "
                      "routable; set it there to the interface on the network the nodes share",
                      host, host);
  case FC_NO_LINK:
    return strbuf_cat(
      buf, cap, o,
      "%s offered a link-local address and no interface here shares a link with it: "
      "set NCCL_SOCKET_IFNAME on %s to an interface with a routable address",
      host, host);
  case FC_REFUSED:
    return strbuf_cat(buf, cap, o,
                      "nothing listens there any more: the process on %s that handed out this "
                      "address has exited or was restarted (a restarted process listens on a new "
                      "port); find in %s's log why it stopped, and restart every rank of the job",
                      host, host);
  case FC_NO_ROUTE:
    return strbuf_cat(
      buf, cap, o,
      "this host has no route to it (no neighbour answers for it on the local link, "
      "or a router or firewall reports it unreachable): %s advertises an address on "
      "a network this host does not reach; set NCCL_SOCKET_IFNAME on %s to the "
      "network both share (this host has %s)",
      host, host, have);
  case FC_NO_ANSWER:
    return strbuf_cat(
      buf, cap, o,
      "its TCP connects go unanswered: a firewall drops them (allow TCP between the "
      "nodes, ports 1024-65535, in nftables/iptables or the cloud security group), "
      "or %s advertises a network this host reaches only in name; then set "
      "NCCL_SOCKET_IFNAME on %s to the network both share (this host has %s)",
      host, host, have);
  case FC_INVALID:
    return strbuf_cat(
      buf, cap, o,
      "the kernel refuses to connect to that address (EINVAL: a blackhole route, or "
      "an address this host cannot use); check 'ip route get' for it here, or set "
      "NCCL_SOCKET_IFNAME on %s to an interface with an address this host routes",
      host);
  case FC_FORBIDDEN:
    return strbuf_cat(buf, cap, o,
                      "a rule on this host forbids it (a prohibit route, or a firewall rule that "
                      "rejects locally): allow TCP to %s",
                      host);
  case FC_REJECTED:
  case FC_DROPPED:
  case FC_BUSY: /* cause_text_reached */
  case FC_OTHER:
  case FC_COUNT: break;
  }
  return strbuf_cat(buf, cap, o, "see the error above");
}

/* "10.0.0.7<46417> (eth1 on host-b, ...): Connection refused (ECONNREFUSED)
 * after 5 attempts; ..." and the distinct causes, each with its fix. */
static void failure_text(const struct connecting *c, char *tried, size_t tcap, char *causes,
                         size_t ccap, char *codes, size_t kcap) {
  char have[700];
  netif_list_str(&transport_host()->ifs, have, sizeof(have));
  bool seen[FC_COUNT] = {false};
  int ncause = 0;
  for (int i = 0; i < c->ncands; i++) {
    enum fail_cause fc = cause_of(&c->cands[c->cand_order[i]]);
    ncause += !seen[fc];
    seen[fc] = true;
  }
  size_t o = 0, oc = 0, ok = 0;
  memset(seen, 0, sizeof(seen));
  codes[0] = 0;
  for (int i = 0; i < c->ncands; i++) {
    const struct cand *k = &c->cands[c->cand_order[i]];
    enum fail_cause fc = cause_of(k);
    char d[256];
    connect_cand_desc(c, k, d, sizeof(d));
    if (!k->attempts)
      o = strbuf_cat(tried, tcap, o, "%s%s: not tried, %s", i ? "; " : "", d, k->last_why);
    else if (k->stage == CAND_HELLO)
      o =
        strbuf_cat(tried, tcap, o, "%s%s: connected, but no answer to our hello", i ? "; " : "", d);
    else if (k->stage == CAND_CONNECTING)
      o = strbuf_cat(tried, tcap, o, "%s%s: no answer after %d attempt%s", i ? "; " : "", d,
                     k->attempts, k->attempts == 1 ? "" : "s");
    else
      o = strbuf_cat(tried, tcap, o, "%s%s: %s after %d attempt%s", i ? "; " : "", d, k->last_why,
                     k->attempts, k->attempts == 1 ? "" : "s");
    if (seen[fc]) continue;
    seen[fc] = true;
    ok = strbuf_cat(codes, kcap, ok, "%s%s", ok ? "," : "", cause_codes[fc]);
    if (fc == FC_OTHER) continue;
    oc = strbuf_cat(causes, ccap, oc, "%s", oc ? ". " : "");
    if (ncause > 1) oc = strbuf_cat(causes, ccap, oc, "%s: ", k->str);
    oc = cause_text(causes, ccap, oc, fc, c->h.host, have, k);
  }
  if (!oc) strbuf_cat(causes, ccap, 0, "this host has %s", have);
}

/* socket() itself failed here: no address can be tried. */
static void fail_local(const struct connecting *c) {
  char advice[700];
  sock_fd_advice(c->local_err, c->dev->is_ib ? 1 : 1 + c->h.nsocks, advice, sizeof(advice));
  WARN("cannot connect to %s for device %s: this process cannot open a socket: %s (%s)%s%s",
       c->h.host, c->dev->name, strerror(c->local_err), errno_name(c->local_err),
       advice[0] ? "; " : "", advice);
}

void connect_report_failure(struct connecting *c) {
  char tried[1600], causes[1400] = "", codes[160];
  failure_text(c, tried, sizeof(tried), causes, sizeof(causes), codes, sizeof(codes));
  ev_count(C_CONN_FAILURES, 1);
  struct ev e;
  ev_begin(&e, "connect_failed");
  ev_str(&e, "device", c->dev->name);
  ev_str(&e, "peer_host", c->h.host);
  ev_str(&e, "tried", tried);
  ev_str(&e, "cause", causes);
  ev_str(&e, "cause_code", c->local_err ? "local_socket" : codes);
  ev_end(&e);
  if (c->local_err) fail_local(c);
  else if (only_peer_loopback(c)) fail_peer_loopback(c);
  else if (now_ns() > c->deadline)
    WARN("cannot connect to %s for device %s within %lld ms (NCCL_DIAG_CONNECT_TIMEOUT_MS): %s. "
         "Tried %s",
         c->h.host, c->dev->name, (long long)((c->deadline - c->start) / 1000000), causes, tried);
  else
    WARN("cannot connect to %s for device %s, and no address is left to try: %s. Tried %s",
         c->h.host, c->dev->name, causes, tried);
}
