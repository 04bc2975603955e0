/* SPDX-License-Identifier: Apache-2.0 */
/* What a lost peer's message says: who (process, host, liveness endpoint),
 * for how long it has not answered, what the checking connection shows,
 * and the causes that fit. The kernel's view of the connection separates
 * them: checks the peer's host acknowledges but its process does not
 * answer mean a stopped or frozen process; checks nothing acknowledges
 * mean a host that is down or a network that is cut. */
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "common/events.h"
#include "common/knobs.h"
#include "common/log.h"
#include "transport/liveness_int.h"
#include "transport/sock.h"

#define CAUSE_STOPPED                                                                              \
  "its process is stopped or frozen (SIGSTOP, a debugger, a frozen container or cgroup, a "        \
  "paused VM), or hangs with its threads blocked"
#define CAUSE_CUT                                                                                  \
  "its host is down or hung, or the network between the hosts is partitioned (a link, switch or "  \
  "firewall dropping traffic)"

void liveness_describe_socket(int fd, const char *name, char *buf, size_t cap) {
  struct tcp_info ti;
  socklen_t len = sizeof(ti);
  int outq = 0, inq = 0;
  if (!cap) return;
  buf[0] = 0;
  memset(&ti, 0, sizeof(ti));
  if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len)) return;
  ioctl(fd, SIOCOUTQ, &outq);
  ioctl(fd, SIOCINQ, &inq);
  size_t o = (size_t)snprintf(buf, cap,
                              "%s: %d bytes sent and not yet acknowledged (%u segments, "
                              "%u retransmissions)",
                              name, outq, ti.tcpi_unacked, ti.tcpi_total_retrans);
  if (o < cap && ti.tcpi_probes)
    o += (size_t)snprintf(buf + o, cap - o, ", the peer's receive window closed (%u probes)",
                          ti.tcpi_probes);
  if (o < cap && inq) snprintf(buf + o, cap - o, ", %d bytes received and not yet read", inq);
}

void liveness_declare_lost(struct liveness_state *st, struct liveness_peer *p, int64_t now,
                           bool is_silent, const char *detail, const char *cause) {
  double quiet = (double)(now - atomic_load(&p->last_answer_ns)) / 1e9;
  char verdict[160];
  if (is_silent)
    snprintf(verdict, sizeof(verdict),
             "has not answered for %.0f s (NCCL_DIAG_PEER_TIMEOUT_SEC=%lld)", quiet,
             (long long)(st->timeout_ns / 1000000000LL));
  else snprintf(verdict, sizeof(verdict), "is gone");
  snprintf(p->why, sizeof(p->why),
           "the peer process (pid %u on %s, liveness checks at %s) %s: %s. Likely cause: %s",
           p->pid, p->host, p->where, verdict, detail, cause);
  struct ev e;
  ev_begin(&e, "peer_lost");
  ev_str(&e, "host", p->host);
  ev_int(&e, "pid", p->pid);
  ev_str(&e, "endpoint", p->where);
  ev_str(&e, "detail", detail);
  ev_end(&e);
  INFO(LOG_NET, "%s", p->why); /* each connection with it WARNs when it fails */
  atomic_store_explicit(&p->is_lost, true, memory_order_release);
}

/* What the checking connection shows, and the cause it points to. */
static const char *observe(const struct liveness_peer *p, int64_t interval_ns, char *detail,
                           size_t cap) {
  if (p->stage != LIVE_UP) {
    snprintf(detail, cap, "no connection to its liveness port could be made (last attempt: %s)",
             p->last_err ? strerror(p->last_err) : "still connecting");
    return p->last_err == ECONNREFUSED ? "its process no longer runs, or a firewall rejects the "
                                         "connection"
                                       : CAUSE_CUT;
  }
  struct tcp_info ti;
  socklen_t len = sizeof(ti);
  memset(&ti, 0, sizeof(ti));
  getsockopt(p->fd, IPPROTO_TCP, TCP_INFO, &ti, &len);
  /* A live kernel acknowledges each check within a round trip, stopped
   * process or not; a host that is down or cut off acknowledges nothing. */
  double acked = ti.tcpi_last_ack_recv / 1e3;
  if (acked > 3.0 * (double)interval_ns / 1e9) {
    snprintf(detail, cap,
             "nothing has come back from its host for %.0f s (%u of our checks unacknowledged, %u "
             "retransmissions)",
             acked, ti.tcpi_unacked, ti.tcpi_total_retrans);
    return CAUSE_CUT;
  }
  if (ti.tcpi_probes) {
    snprintf(detail, cap,
             "its host still acknowledges our checks but its receive window is closed (%u "
             "probes): the process does not read",
             ti.tcpi_probes);
    return CAUSE_STOPPED;
  }
  snprintf(detail, cap,
           "its host acknowledged our last check %.1f s ago, but its process has answered none of "
           "%u",
           acked, p->checks);
  return CAUSE_STOPPED;
}

/* Whether what the checks saw is evidence about the peer: a checking
 * connection its process answered on before it fell silent, or one up for
 * most of the timeout (a real peer's connection waits in a flooded accept
 * queue far less: the port takes 10,000 a second, liveness_answer.c), or a
 * port that refuses. Otherwise (no connection could be made, its port
 * closed ours before answering, ours is recent and never answered) detail
 * says why there is none. */
static bool has_evidence(const struct liveness_state *st, const struct liveness_peer *p,
                         int64_t now, char *detail, size_t cap) {
  if (p->stage == LIVE_UP &&
      (p->conn_answers || now - p->up_since_ns >= st->timeout_ns - st->timeout_ns / 4))
    return true;
  if (p->stage != LIVE_UP && p->last_err == ECONNREFUSED) return true;
  if (p->stage == LIVE_UP)
    snprintf(detail, cap,
             "our checking connection to %s, up for only %.0f s, has had no answer yet (its port "
             "may be flooded with other connections, or the process stopped before it answered)",
             p->where, (double)(now - p->up_since_ns) / 1e9);
  else if (p->turned_away && (p->last_err == EPIPE || p->last_err == ECONNRESET))
    snprintf(detail, cap,
             "its liveness port %s closed %u of our checking connections before answering (it "
             "turns away connections it cannot take, or another process has that port now)",
             p->where, p->turned_away);
  else
    snprintf(detail, cap, "no connection to its liveness port %s could be made (last attempt: %s)",
             p->where, p->last_err ? strerror(p->last_err) : "still connecting");
  return false;
}

/* No evidence: said (a WARN for the first such peer of this process, INFO
 * after), the peer not blamed, and the timeout counted again from now. */
static void say_unchecked(struct liveness_state *st, struct liveness_peer *p, int64_t now,
                          const char *detail) {
  static atomic_bool has_warned;
  char msg[900];
  const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&p->sa;
  const struct sockaddr_in *s4 = (const struct sockaddr_in *)&p->sa;
  unsigned port = ntohs(p->sa.ss_family == AF_INET ? s4->sin_port : s6->sin6_port);
  snprintf(msg, sizeof(msg),
           "cannot check whether the peer process (pid %u on %s) is alive: %s. Its connections "
           "are not failed for this; if it stops or is cut off, only its data connections show "
           "it. Fix: let this host reach port %u of that host's chosen interfaces (a firewall "
           "between the hosts may drop it)",
           p->pid, p->host, detail, port);
  if (!p->has_said_unchecked && !atomic_exchange(&has_warned, true)) WARN("%s", msg);
  else if (!p->has_said_unchecked) INFO(LOG_NET, "%s", msg);
  p->has_said_unchecked = true;
  atomic_store(&p->is_unchecked, true);
  atomic_store(&p->last_answer_ns, now);
  (void)st;
}

void liveness_check_timeout(struct liveness_state *st, struct liveness_peer *p, int64_t now) {
  int64_t quiet = now - atomic_load(&p->last_answer_ns);
  if (quiet <= st->timeout_ns) return;
  char detail[400];
  if (!has_evidence(st, p, now, detail, sizeof(detail))) {
    say_unchecked(st, p, now, detail);
    return;
  }
  const char *cause = observe(p, st->interval_ns, detail, sizeof(detail));
  liveness_declare_lost(st, p, now, true, detail, cause);
}
