/* SPDX-License-Identifier: Apache-2.0 */
/* The slow link's WARN and event (slow_say.h). */
#include "transport/run/slow_say.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "common/size.h"
#include "transport/run/waitfor.h"

/* "1.5 MiB/s"-style, for a line people read. */
static void rate_words(char *out, size_t cap, double v) {
  const char *p[] = {"", "Ki", "Mi", "Gi", "Ti"};
  int k = 0;
  while (v >= 1024 && k < 4) v /= 1024, k++;
  snprintf(out, cap, "%.1f %sB/s", v, p[k]);
}

static bool is_ib(const struct run_conn_info *i) { return !strcmp(i->transport, "ib"); }

/* This end: "host-a (10.0.0.6<39312>, eth0)", or over RDMA "host-a
 * (10.0.0.6, mlx5_0 port 1)". */
static void here(char *out, size_t cap, const struct run_conn_info *i) {
  char host[64] = "";
  gethostname(host, sizeof(host) - 1);
  if (is_ib(i)) {
    snprintf(out, cap, "%s (%s%s%s port %d)", host, i->local, i->local[0] ? ", " : "", i->dev,
             i->port);
    return;
  }
  snprintf(out, cap, "%s (%s%s%s)", host, i->tcp.local[0] ? i->tcp.local : "this host",
           i->dev[0] ? ", " : "", i->dev);
}

static void event(const struct run_conn_info *i, double ratio, double rate, double med, int secs,
                  uint64_t retrans, uint64_t ooo, const struct slow_port_view *port) {
  if (!ev_enabled()) return;
  struct ev e;
  ev_begin(&e, "slow_link");
  ev_str(&e, "direction", i->is_send ? "send" : "recv");
  ev_str(&e, "transport", i->transport);
  ev_str(&e, "device", i->dev);
  ev_str(&e, "local", is_ib(i) ? i->local : i->tcp.local);
  ev_str(&e, "peer_host", i->peer_host);
  ev_int(&e, "peer_pid", i->peer_pid);
  ev_str(&e, "peer", i->peer_addr);
  ev_dbl(&e, "ratio", ratio);
  ev_dbl(&e, "rate_bytes_per_s", rate);
  ev_dbl(&e, "siblings_median_bytes_per_s", med);
  ev_int(&e, "seconds", secs);
  ev_int(&e, "retransmits", (long long)retrans);
  ev_int(&e, "lost", i->tcp.lost);
  ev_int(&e, "out_of_order", (long long)ooo);
  ev_int(&e, "rtt_us", i->tcp.rtt_us);
  if (port) {
    ev_int(&e, "port", i->port);
    ev_int(&e, "port_retries", (long long)port->retries);
    ev_int(&e, "port_congestion", (long long)port->congestion);
    ev_str(&e, "port_counters", port->words);
  }
  ev_end(&e);
}

/* " (2.4 % of its 81234 data segments; " or " (" for a kernel without counts. */
static void share(char *out, size_t cap, uint64_t n, uint64_t segs) {
  if (segs)
    snprintf(out, cap, " (%.1f %% of its %llu data segments; ", 100.0 * (double)n / (double)segs,
             (unsigned long long)segs);
  else snprintf(out, cap, " (");
}

/* Its siblings' ports, against which its own port's counts stand out. */
static void others(char *out, size_t cap, const struct slow_sample *sib, uint64_t theirs) {
  int n = 0;
  n = snprintf(out, cap, "; ");
  if (sib->nother_ports)
    n += snprintf(out + n, cap - (size_t)n, "its siblings' other ports: %llu in all",
                  (unsigned long long)theirs);
  if (sib->nsame_port)
    snprintf(out + n, cap - (size_t)n,
             "%s%d siblings on this port run at their rate, so it is "
             "this connection's path",
             sib->nother_ports ? "; " : "", sib->nsame_port);
}

/* An RDMA connection's port: what its counters say, what they mean first. */
static void port_counters(char *out, size_t cap, const struct slow_sample *x,
                          const struct slow_sample *sib, enum slow_evidence ev, int secs) {
  const struct run_conn_info *i = x->i;
  char o[200];
  if (ev == SLOW_EV_PORT_RATE) {
    snprintf(out, cap,
             "its port's link runs at %.0f Gb/s where its siblings' ports run at %.0f Gb/s, so "
             "the link trained at a lower speed or width",
             x->port.gbps, sib->port_gbps);
    return;
  }
  if (ev == SLOW_EV_QUEUE) {
    snprintf(out, cap,
             "its writes take %.1f ms each to complete against its siblings' %.1f ms, and %s "
             "port %d counted %s, so a queue builds on this path (a shaped or congested link, or "
             "one at a lower speed)",
             x->lat_us / 1000.0, sib->lat_us / 1000.0, i->dev, i->port,
             x->port.words[0] ? x->port.words : "no resends");
    return;
  }
  bool is_loss = ev == SLOW_EV_PORT_LOSS;
  others(o, sizeof(o), sib, is_loss ? sib->port_retries : sib->port_congestion);
  snprintf(out, cap, "%s port %d counted %s in %d s%s: %s", i->dev, i->port, x->port.words, secs, o,
           is_loss ? "packets on the path are lost and sent again"
                   : "the path is congested (switches mark it and the sender slows down)");
}

/* The fix that goes with what the counters showed. */
static const char *fix_of(const struct run_conn_info *i, enum slow_evidence ev) {
  switch (ev) {
  case SLOW_EV_PORT_LOSS:
    return "on RoCE, check that NCCL_IB_TC's priority has PFC on both hosts and every switch "
           "between them (nccl-net-diag doctor shows this host's); then the cables and switch "
           "ports of that path (ethtool -S or mlxlink on both ports, the switch ports' error "
           "counters)";
  case SLOW_EV_PORT_CONGESTION:
    return "find the congested switch port on that path (its queue depth and ECN marks), and "
           "spread the load (NCCL_IB_QPS_PER_CONNECTION, adaptive routing, the job's placement)";
  case SLOW_EV_QUEUE:
    if (!is_ib(i)) break;
    return "check the link speeds along that path, the switch ports' queues and pause "
           "counters (ethtool -S: the rx and tx pause frames on RoCE), and any rate limit or "
           "shaping on the way (tc qdisc show on both hosts, the switches' QoS policy)";
  case SLOW_EV_PORT_RATE:
    return "check the link's speed and width on both ends (ibstat or ethtool, mlxlink), reseat "
           "or replace the cable or transceiver, and check the switch port's configured speed";
  default: break;
  }
  return is_ib(i) ? "check that path on both hosts (ibstat, the ports' hw_counters, the switch "
                    "ports' error counters)"
                  : "check that path on both hosts (ip -s link on both interfaces, ss -ti, tc "
                    "qdisc show, nft list ruleset, the switch ports' error counters)";
}

/* The counters that show it, what they mean first: a sender's
 * retransmits, losses and RTT; a receiver's out-of-order arrivals (its RTT
 * is stale: it sends nothing). */
static void counters(char *out, size_t cap, const struct slow_sample *x,
                     const struct slow_sample *sib, enum slow_evidence ev, int secs) {
  const struct run_conn_info *i = x->i;
  char sh[80];
  if (is_ib(i)) {
    port_counters(out, cap, x, sib, ev, secs);
    return;
  }
  share(sh, sizeof(sh), i->is_send ? x->d_retrans : x->d_ooo, x->segs);
  if (ev == SLOW_EV_QUEUE)
    snprintf(out, cap,
             "rtt %.1f ms against its siblings' %.1f ms, so a queue builds on this path (a "
             "shaped or congested link, or one at a lower speed), %llu retransmits in %d s",
             i->tcp.rtt_us / 1000.0, sib->rtt_us / 1000.0, (unsigned long long)x->d_retrans, secs);
  else if (i->is_send)
    snprintf(out, cap,
             "%llu retransmits in %d s%ssiblings' median %llu), %u lost now, rtt %.1f ms "
             "(siblings %.1f ms)",
             (unsigned long long)x->d_retrans, secs, sh, (unsigned long long)sib->d_retrans,
             i->tcp.lost, i->tcp.rtt_us / 1000.0, sib->rtt_us / 1000.0);
  else
    snprintf(out, cap, "%llu packets received out of order in %d s%ssiblings' median %llu)",
             (unsigned long long)x->d_ooo, secs, sh, (unsigned long long)sib->d_ooo);
}

void slow_say(const struct slow_sample *x, const struct slow_sample *sib, enum slow_evidence ev,
              double ratio, int secs) {
  const struct run_conn_info *i = x->i;
  char me[200], r[32], md[32], evw[600], rt[24];
  here(me, sizeof(me), i);
  rate_words(r, sizeof(r), x->rate);
  rate_words(md, sizeof(md), sib->rate);
  counters(evw, sizeof(evw), x, sib, ev, secs);
  WARN("slow link: %s %s pid %u from %s moves %s while busy, %sx the median %s of its %d %s "
       "%s siblings in this process, for %d s; %s: %s. Fix: %s",
       i->is_send ? "send to" : "receive from", i->peer_desc, i->peer_pid, me, r,
       ratio_format(rt, sizeof(rt), ratio), md, sib->nsiblings, i->transport,
       i->is_send ? "send" : "receive", secs,
       !is_ib(i)             ? "its sockets"
       : ev == SLOW_EV_QUEUE ? "its path"
                             : "its port",
       evw, fix_of(i, ev));
  event(i, ratio, x->rate, sib->rate, secs, x->d_retrans, x->d_ooo, is_ib(i) ? &x->port : NULL);
}

/* What the other end's evidence was, in a few words (its log has the counters). */
static const char *peer_words(int ev) {
  switch (ev) {
  case SLOW_EV_LOSS:
    return "its sockets send a share of their packets again (they are lost on the way)";
  case SLOW_EV_DISORDER:
    return "its sockets receive a share of their packets out of order (some are lost on the way)";
  case SLOW_EV_QUEUE:
    return "its messages take several times its siblings' round trip, so a queue builds on this path (a shaped or congested link, or one at a lower speed)";
  case SLOW_EV_PORT_LOSS: return "its port resends packets on this path";
  case SLOW_EV_PORT_CONGESTION: return "its port counts congestion notifications on this path";
  case SLOW_EV_PORT_RATE: return "its port's link runs at a lower rate than its siblings' ports";
  default: return "it runs well under its siblings there";
  }
}

void slow_say_peer(const struct slow_sample *x, const struct slow_sample *sib, double ratio,
                   uint16_t flags, int secs) {
  const struct run_conn_info *i = x->i;
  char me[200], r[32], md[32], mine[300], rt[24], th[24];
  int ev = (flags >> RUN_FLAG_SLOW_EV_SHIFT) & 0xf;
  double theirs = (double)((flags >> RUN_FLAG_SLOW_PCT_SHIFT) & 0x7f) / 100;
  /* the other end sends its ratio in whole percent */
  if (theirs > 0) ratio_format(th, sizeof(th), theirs);
  else snprintf(th, sizeof(th), "under 0.01");
  here(me, sizeof(me), i);
  rate_words(r, sizeof(r), x->rate);
  if (sib) {
    rate_words(md, sizeof(md), sib->rate);
    snprintf(mine, sizeof(mine), "%sx the median %s of its %d %s %s siblings in this process",
             ratio_format(rt, sizeof(rt), ratio), md, sib->nsiblings, i->transport,
             i->is_send ? "send" : "receive");
  } else {
    snprintf(mine, sizeof(mine), "%sx the median of its siblings at the other end", th);
  }
  WARN("slow link: %s %s pid %u from %s moves %s while busy, %s, for %d s; the other end names "
       "this path (%s, %sx its siblings there): %s; its log has the counters. Fix: %s",
       i->is_send ? "send to" : "receive from", i->peer_desc, i->peer_pid, me, r, mine, secs,
       flags & RUN_FLAG_SLOW_SEND ? "its send to this host" : "its receive from this host", th,
       peer_words(ev), fix_of(i, (enum slow_evidence)ev));
  event(i, sib ? ratio : theirs, x->rate, sib ? sib->rate : 0, secs, x->d_retrans, x->d_ooo, NULL);
}

void slow_say_recovered(const struct run_conn_info *i) {
  char me[200];
  here(me, sizeof(me), i);
  INFO(LOG_NET, "slow link: %s %s pid %u from %s runs as its siblings again",
       i->is_send ? "send to" : "receive from", i->peer_desc, i->peer_pid, me);
}

/* "send to b (10.0.0.2<41043>, eth0), receive from b (...)", at most 4 of total. */
static void conns_words(char *out, size_t cap, const struct slow_sample *const *on, int n,
                        int total) {
  size_t len = 0;
  out[0] = 0;
  for (int k = 0; k < n && k < 4 && len < cap; k++)
    len += (size_t)snprintf(out + len, cap - len, "%s%s %s", k ? ", " : "",
                            on[k]->i->is_send ? "send to" : "receive from", on[k]->i->peer_desc);
  if (total > 4 && len < cap) snprintf(out + len, cap - len, " and %d more", total - 4);
}

void slow_say_port(const char *dev, int port, const struct slow_port_view *v, int secs,
                   const struct slow_sample *const *on, int n, int nconns, uint64_t requests) {
  char host[64] = "", list[700];
  gethostname(host, sizeof(host) - 1);
  conns_words(list, sizeof(list), on, n, nconns);
  double per_mille = requests ? 1000.0 * (double)v->retries / (double)requests : 0;
  char share[160], whose[64];
  if (nconns == 1) snprintf(whose, sizeof(whose), "its connection");
  else snprintf(whose, sizeof(whose), "its %d connections", nconns);
  if (per_mille >= 1000)
    snprintf(share, sizeof(share), "%.1f for each of the %llu requests %s completed",
             per_mille / 1000, (unsigned long long)requests, whose);
  else
    snprintf(share, sizeof(share), "%.1f per 1000 of the %llu requests %s completed", per_mille,
             (unsigned long long)requests, whose);
  WARN("lossy port: %s port %d on %s (%s) counted %s in %d s, %s (%s)%s: packets on this port's "
       "paths are lost and sent again. Fix: on RoCE, check that NCCL_IB_TC's priority has PFC "
       "on this host, its peers and every switch between (nccl-net-diag doctor shows this "
       "host's); then this port's cable and switch port (ethtool -S or mlxlink, the switch "
       "port's error counters), and its peers' ports",
       dev, port, host, n ? on[0]->i->local : "", v->words, secs, share, list,
       nconns > 1 ? ", and they run alike, so no one path stands out" : "");
  if (!ev_enabled()) return;
  struct ev e;
  ev_begin(&e, "lossy_port");
  ev_str(&e, "device", dev);
  ev_int(&e, "port", port);
  ev_str(&e, "local", n ? on[0]->i->local : "");
  ev_int(&e, "seconds", secs);
  ev_int(&e, "port_retries", (long long)v->retries);
  ev_str(&e, "port_counters", v->words);
  ev_int(&e, "requests", (long long)requests);
  ev_int(&e, "connections", nconns);
  ev_end(&e);
}
