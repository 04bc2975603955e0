/* SPDX-License-Identifier: Apache-2.0 */
/* The slow link's WARN and event (slow_say.h). */
#include "transport/run/slow_say.h"

#include <stdio.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"

/* "1.5 MiB/s"-style, for a line people read. */
static void rate_words(char *out, size_t cap, double v) {
  const char *p[] = {"", "Ki", "Mi", "Gi", "Ti"};
  int k = 0;
  while (v >= 1024 && k < 4) v /= 1024, k++;
  snprintf(out, cap, "%.1f %sB/s", v, p[k]);
}

/* This end: "host-a (10.0.0.6<39312>, eth0)". */
static void here(char *out, size_t cap, const struct run_conn_info *i) {
  char host[64] = "";
  gethostname(host, sizeof(host) - 1);
  snprintf(out, cap, "%s (%s%s%s)", host, i->tcp.local[0] ? i->tcp.local : "this host",
           i->dev[0] ? ", " : "", i->dev);
}

static void event(const struct run_conn_info *i, double ratio, double rate, double med, int secs,
                  uint64_t retrans, uint64_t ooo) {
  if (!ev_enabled()) return;
  struct ev e;
  ev_begin(&e, "slow_link");
  ev_str(&e, "direction", i->is_send ? "send" : "recv");
  ev_str(&e, "transport", i->transport);
  ev_str(&e, "device", i->dev);
  ev_str(&e, "local", i->tcp.local);
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
  ev_end(&e);
}

/* " (2.4 % of its 81234 data segments; " or " (" for a kernel without counts. */
static void share(char *out, size_t cap, uint64_t n, uint64_t segs) {
  if (segs)
    snprintf(out, cap, " (%.1f %% of its %llu data segments; ", 100.0 * (double)n / (double)segs,
             (unsigned long long)segs);
  else snprintf(out, cap, " (");
}

/* The counters that show it, what they mean first: a sender's
 * retransmits, losses and RTT; a receiver's out-of-order arrivals (its RTT
 * is stale: it sends nothing). */
static void counters(char *out, size_t cap, const struct slow_sample *x,
                     const struct slow_sample *sib, enum slow_evidence ev, int secs) {
  const struct run_conn_info *i = x->i;
  char sh[80];
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
  char me[200], r[32], md[32], evw[300];
  here(me, sizeof(me), i);
  rate_words(r, sizeof(r), x->rate);
  rate_words(md, sizeof(md), sib->rate);
  counters(evw, sizeof(evw), x, sib, ev, secs);
  WARN("slow link: %s %s pid %u from %s moves %s while busy, %.2fx the median %s of its %d %s "
       "%s siblings in this process, for %d s; its sockets: %s. Fix: check that path on both "
       "hosts (ip -s link on both interfaces, ss -ti, tc qdisc show, nft list ruleset, the "
       "switch ports' error counters)",
       i->is_send ? "send to" : "receive from", i->peer_desc, i->peer_pid, me, r, ratio, md,
       sib->nsiblings, i->transport, i->is_send ? "send" : "receive", secs, evw);
  event(i, ratio, x->rate, sib->rate, secs, x->d_retrans, x->d_ooo);
}

void slow_say_recovered(const struct run_conn_info *i) {
  char me[200];
  here(me, sizeof(me), i);
  INFO(LOG_NET, "slow link: %s %s pid %u from %s runs as its siblings again",
       i->is_send ? "send to" : "receive from", i->peer_desc, i->peer_pid, me);
}
