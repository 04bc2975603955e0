/* SPDX-License-Identifier: Apache-2.0 */
/* The no-progress warning of a TCP request, and its cause: a message
 * whose header went through but whose payload stalls while the peer
 * answers liveness checks is a path-MTU black hole (a hop with a smaller
 * MTU than the hosts drops full-size frames and sends no word back, so
 * the header and the checks, small packets, pass); a message of which
 * nothing moved waits for its peer (liveness.h says how the peer is). */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/addr.h"
#include "common/log.h"
#include "transport/sock.h"
#include "transport/tcp/tcp.h"

bool tcp_stall_is_mtu(const struct tcp_stall *s) {
  if (!s->is_partial || s->live != LIVENESS_ANSWERS) return false;
  if (!s->is_send) return true; /* the peer is inside the send and nothing comes */
  /* The sender's own socket tells a black hole (its segments go out again
   * and again, unacknowledged, into an open window) from a receiver that
   * does not read (its window closed, probed). */
  return s->has_info && s->unacked && s->retransmits && !s->probes;
}

static int cat(char *buf, size_t cap, int o, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
static int cat(char *buf, size_t cap, int o, const char *fmt, ...) {
  if (o < 0 || (size_t)o >= cap) return o;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + o, cap - (size_t)o, fmt, ap);
  va_end(ap);
  return n < 0 ? o : o + n;
}

static void mtu_str(int mtu, char *buf, size_t cap) {
  if (mtu > 0) snprintf(buf, cap, "%d", mtu);
  else snprintf(buf, cap, "unknown");
}

/* "; data socket 2: 31 segments unacknowledged, 6 retransmissions, path
 * MTU as the kernel sees it 9000" */
static int evidence(const struct tcp_stall *s, char *buf, size_t cap, int o) {
  if (!s->has_info) return o;
  o = cat(buf, cap, o, "; %s:", s->sock_name);
  if (s->is_send)
    o = cat(buf, cap, o, " %u segments of %u bytes unacknowledged, %u retransmissions,", s->unacked,
            s->mss, s->total_retrans);
  return cat(buf, cap, o, " path MTU as the kernel sees it %u", s->pmtu);
}

void tcp_stall_mtu_text(const struct tcp_stall *s, char *buf, size_t cap) {
  char here[16], there[16];
  mtu_str(s->local_mtu, here, sizeof(here));
  mtu_str(s->peer_mtu, there, sizeof(there));
  const char *ifn = s->local_if[0] ? s->local_if : "its interface";
  bool is_differ = s->local_mtu > 0 && s->peer_mtu > 0 && s->local_mtu != s->peer_mtu;
  int o = 0;
  if (is_differ)
    o =
      cat(buf, cap, o,
          "the two ends' MTUs differ (%s on %s here, %s on %s), a path-MTU black hole is likely: ",
          here, ifn, there, s->peer_host);
  else o = cat(buf, cap, o, "path-MTU black hole suspected: ");
  o = cat(buf, cap, o,
          "%s stalls after its header while the peer answers liveness checks: %lld payload bytes "
          "stuck for %lld s",
          s->what, s->left, s->secs);
  if (!is_differ)
    o = cat(buf, cap, o, "; MTU %s on %s here, %s on %s%s", here, ifn, there, s->peer_host,
            s->peer_mtu > 0 ? "" : " (its plugin does not say)");
  o = evidence(s, buf, cap, o);
  int mtu = s->local_mtu > 0 ? s->local_mtu : s->peer_mtu;
  char size[24];
  if (mtu > 0) snprintf(size, sizeof(size), "%d", mtu - (s->is_ipv6 ? 48 : 28));
  else snprintf(size, sizeof(size), "<MTU minus %d>", s->is_ipv6 ? 48 : 28);
  cat(buf, cap, o,
      ". Fix: make the MTU equal on %severy hop (or lower the interfaces' MTU to the smallest "
      "hop's); check with ping -M do -s %s %s",
      is_differ ? "both hosts and " : "", size, s->peer_ip);
}

/* The stripe ring whose head is r's (the socket its payload waits on), or
 * the first with any; NULL without data sockets. */
static struct tcp_sock *stalled_sock(struct tcp_comm *c, const struct tcp_req *r) {
  struct tcp_sock *any = NULL;
  for (int i = 0; i < c->nsocks; i++) {
    struct tcp_sock *s = &c->socks[i];
    unsigned head = atomic_load(&s->head);
    if (head == atomic_load(&s->tail)) continue;
    if (s->tasks[head % TCP_RING].req == r) return s;
    if (!any) any = s;
  }
  return any;
}

static void read_info(int fd, struct tcp_stall *s) {
  struct tcp_info ti;
  socklen_t len = sizeof(ti);
  memset(&ti, 0, sizeof(ti));
  if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len)) return;
  s->has_info = true;
  s->unacked = ti.tcpi_unacked;
  s->retransmits = ti.tcpi_retransmits;
  s->total_retrans = ti.tcpi_total_retrans;
  s->probes = ti.tcpi_probes;
  s->pmtu = ti.tcpi_pmtu;
  s->mss = s->is_send ? ti.tcpi_snd_mss : ti.tcpi_rcv_mss;
}

/* Header through, payload bytes outstanding; left: those bytes. */
static bool is_partial(const struct tcp_comm *c, const struct tcp_req *r, long long *left) {
  long long pending = atomic_load(&r->pending);
  *left = pending;
  if (r->is_hdr_done) return pending > 0;
  if (r->is_send && r->out_off >= MSG_HDR_LEN && r->out_off < r->out_total) {
    *left = (long long)(r->out_total - r->out_off);
    return true;
  }
  if (!r->is_send && c->cur == r && r->inline_off < r->size) {
    *left = (long long)(r->size - r->inline_off);
    return true;
  }
  return false;
}

/* The facts for r's stall: its socket, both MTUs, the peer's address. */
static void gather(struct tcp_comm *c, struct tcp_req *r, struct tcp_stall *s) {
  s->is_send = r->is_send;
  s->local_mtu = sock_local_mtu(c->ctrl_fd, s->local_if, sizeof(s->local_if));
  s->peer_mtu = c->peer_mtu;
  s->peer_host = c->base.peer.host;
  int fd = c->ctrl_fd;
  snprintf(s->sock_name, sizeof(s->sock_name), "control socket");
  struct tcp_sock *sk = r->is_hdr_done ? stalled_sock(c, r) : NULL;
  if (sk) {
    fd = sk->fd;
    snprintf(s->sock_name, sizeof(s->sock_name), "data socket %d", sk->index);
  }
  read_info(fd, s);
  struct ipaddr a;
  snprintf(s->peer_ip, sizeof(s->peer_ip), "<peer address>");
  if (c->base.peer.sa_len &&
      !ipaddr_from_sockaddr(&a, (const struct sockaddr *)&c->base.peer.sa, NULL)) {
    ipaddr_unmap(&a);
    ipaddr_str(&a, s->peer_ip, sizeof(s->peer_ip));
    s->is_ipv6 = a.family == AF_INET6;
  }
}

/* A request's progress as one number that every step of it lowers: its
 * outstanding data-socket bytes, less the header and inline bytes moved. */
static uint32_t progress_mark(const struct tcp_req *r) {
  long long off = (long long)(r->is_send ? r->out_off : r->inline_off);
  return (uint32_t)(atomic_load(&r->pending) - off - (r->is_hdr_done ? (1LL << 31) : 0));
}

enum run_wait tcp_wait_kind(const struct tcp_comm *c, const struct tcp_req *r) {
  if (r->is_send) return r->out_off < r->out_total ? RUN_WAIT_DRAIN : RUN_WAIT_BYTES;
  bool is_started = r->is_hdr_done || c->cur == r || (c->posted_head == r && c->hdr_got);
  return is_started ? RUN_WAIT_BYTES : RUN_WAIT_DATA;
}

void tcp_check_stall(struct tcp_comm *c, struct tcp_req *r) {
  int64_t now = now_ns();
  uint32_t mark = progress_mark(r); /* kept also for the run-time verdict */
  if (mark != r->still_mark) {
    r->still_ns = now;
    r->still_mark = mark;
  }
  if (!c->stall_ns || r->has_warned_stall) return;
  int64_t waited = now - r->still_ns;
  if (waited < c->stall_ns) return;
  r->has_warned_stall = true;
  struct tcp_stall s = {0};
  long long secs = (long long)(waited / 1000000000LL), left;
  s.is_partial = is_partial(c, r, &left);
  char live[200];
  s.live = liveness_peer_state(c->base.live, live, sizeof(live));
  if (r->is_send || r->is_hdr_done)
    snprintf(s.what, sizeof(s.what), "%s of message %u (%zu bytes) %s %s",
             r->is_send ? "send" : "receive", r->seq, r->size, r->is_send ? "to" : "from",
             c->base.peer.desc);
  else
    snprintf(s.what, sizeof(s.what), "receive of message %u (up to %zu bytes) from %s", r->seq,
             r->cap, c->base.peer.desc);
  if (s.is_partial && s.live == LIVENESS_ANSWERS) {
    gather(c, r, &s);
    s.secs = secs;
    s.left = left;
  }
  if (tcp_stall_is_mtu(&s)) {
    char msg[1000];
    tcp_stall_mtu_text(&s, msg, sizeof(msg));
    WARN("%s", msg);
    return;
  }
  char what[96], advice[400];
  if (r->is_send || r->is_hdr_done)
    snprintf(what, sizeof(what), "%s of message %u (%zu bytes)", r->is_send ? "send" : "receive",
             r->seq, r->size);
  else snprintf(what, sizeof(what), "receive of message %u (up to %zu bytes)", r->seq, r->cap);
  liveness_stall_advice(c->base.live, advice, sizeof(advice));
  WARN("%s with %s has made no progress for %lld s (%s, %lld payload bytes outstanding). %s", what,
       c->base.peer.desc, secs, r->is_hdr_done ? "header done" : "header pending",
       (long long)atomic_load(&r->pending), advice);
}
