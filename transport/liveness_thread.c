/* SPDX-License-Identifier: Apache-2.0 */
/* The liveness thread (liveness.h): one per process. Each pass it
 *   - answers every check that reached this process's port (the answerer
 *     side: connections the peers opened), whatever NCCL's threads do;
 *   - for each peer process with comms here, keeps one checking connection
 *     (not connected -> connecting -> up), sends a check every interval
 *     and notes each answer;
 *   - declares a peer lost when it has not answered for the timeout
 *     (liveness_observe.c words it), or at once when its process is known
 *     to be gone (its port refuses us after it had answered, or another
 *     process answers there);
 *   - closes and frees the records no comm holds any more.
 * The answering side, with its bounds, is liveness_answer.c.
 * It polls at most LOOP_NS at a time; a pass that comes much later than
 * that means this process itself did not run (stopped, or the host
 * stalled), and the gap is not counted against the peers. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "transport/liveness_int.h"
#include "transport/run/slow_peer.h"
#include "transport/run/stall.h"
#include "transport/run/waitfor.h"
#include "transport/sock.h"

#define LOOP_NS 250000000LL
/* While a request waits on a peer, check it this often: each answer may
 * bring the root of its stall, one hop of the chain, and a ring of a
 * large job is a chain of as many hops as ranks. */
#define LIVE_WAIT_CHECK_NS 100000000LL

struct loop {
  struct liveness_state *st;
  struct live_answer_set answer;
  int64_t last_ns;
  int64_t next_check_ns; /* the earliest check due: the poll wakes for it */
  struct pollfd *fds;
  struct liveness_peer **fd_peers; /* the peer polled at each index, NULL for others */
  int cap_fds;
};

static bool is_local_shortage(int err) {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

static void close_conn(struct liveness_peer *p) {
  if (p->fd >= 0) close(p->fd);
  p->fd = -1;
  p->got = 0;
  p->stage = LIVE_IDLE;
}

/* ---- the checking side ---- */

static void connect_failed(struct liveness_state *st, struct liveness_peer *p, int err,
                           int64_t now) {
  close_conn(p);
  p->last_err = err;
  int64_t retry = st->interval_ns < 1000000000LL ? st->interval_ns : 1000000000LL;
  p->next_try_ns = now + retry;
  if (is_local_shortage(err)) {
    /* Our own limit, not the peer's silence: not held against it. */
    atomic_store(&p->last_answer_ns, now);
    if (!p->has_said_local)
      INFO(LOG_NET,
           "cannot check whether the process on %s (pid %u) is alive: %s on this host; "
           "not held against it",
           p->host, p->pid, strerror(err));
    p->has_said_local = true;
    return;
  }
  if (err == ECONNREFUSED && p->answers) {
    char detail[200];
    snprintf(detail, sizeof(detail),
             "its liveness port %s, which answered before, now refuses "
             "connections",
             p->where);
    liveness_declare_lost(st, p, now, false, detail,
                          "its process no longer runs (it exited, crashed or was killed)");
  }
}

static void now_up(struct liveness_state *st, struct liveness_peer *p, int64_t now) {
  p->stage = LIVE_UP;
  p->next_check_ns = now;
  p->up_since_ns = now;
  p->conn_answers = 0;
  p->got = 0;
  /* Checks unacknowledged well past the timeout end the connection in the
   * kernel (no retransmitting for the 15 minutes of tcp_retries2); the
   * verdict is ours, from the answers, while the connection still shows
   * what happened. */
  unsigned ms = (unsigned)(st->timeout_ns / 1000000 * 3 / 2);
  setsockopt(p->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
}

static void connect_start(struct liveness_state *st, struct liveness_peer *p, int64_t now) {
  p->attempt_ns = now;
  int err = sock_connect_start((struct sockaddr *)&p->sa, p->sa_len, &p->fd);
  if (err == 0) now_up(st, p, now);
  else if (err == EINPROGRESS) p->stage = LIVE_CONNECTING;
  else connect_failed(st, p, err, now);
}

static void connect_step(struct liveness_state *st, struct liveness_peer *p, short revents,
                         int64_t now) {
  int64_t limit = 2 * st->interval_ns > 3000000000LL ? 2 * st->interval_ns : 3000000000LL;
  int err = revents ? sock_connect_done(p->fd) : EINPROGRESS;
  if (err == 0) now_up(st, p, now);
  else if (err != EINPROGRESS) connect_failed(st, p, err, now);
  else if (now - p->attempt_ns > limit) connect_failed(st, p, ETIMEDOUT, now);
}

/* An answer came: PONG from the process we check, or NOT_ME. */
static void answered(struct liveness_state *st, struct liveness_peer *p, int64_t now) {
  struct live_frame f;
  if (!live_frame_decode(p->in, &f) && f.type == LIVE_ROOT) { /* after a PONG: its stall's root */
    atomic_store(&p->root_pid, f.seq);
    atomic_store(&p->root_ip4, (uint32_t)f.token);
    atomic_store(&p->root_ip4b, (uint32_t)(f.token >> 32));
    atomic_store(&p->root_pid2, f.extra);
    atomic_store(&p->root6_got, 0); /* its IPv6 halves, if any, follow */
    atomic_store(&p->root_verdict, f.flags);
    return;
  }
  if (!live_frame_decode(p->in, &f) && f.type == LIVE_ROOT6) {
    unsigned at = f.extra & 3;
    atomic_store(&p->root6[at >> 1][at & 1], f.token);
    atomic_fetch_or(&p->root6_got, 1u << at);
    return;
  }
  if (live_frame_decode(p->in, &f) || (f.type != LIVE_PONG && f.type != LIVE_NOT_ME)) {
    close_conn(p); /* not our peer's frames: start over */
    p->next_try_ns = now;
    return;
  }
  if (f.type == LIVE_PONG && f.token == p->token) {
    atomic_store(&p->last_answer_ns, now);
    atomic_store(&p->idle_s, run_idle_from_flags(f.flags));
    atomic_store(&p->port_word, f.extra);
    atomic_store(&p->port_word_ns, now);
    atomic_store(&p->is_unchecked, false);
    p->answers++;
    p->conn_answers++;
    return;
  }
  char detail[200];
  snprintf(detail, sizeof(detail), "another process now answers at its liveness port %s", p->where);
  liveness_declare_lost(st, p, now, false, detail,
                        "its process no longer runs (it exited, crashed or was killed, and "
                        "another took its port)");
}

static void up_step(struct liveness_state *st, struct liveness_peer *p, short revents,
                    int64_t now) {
  while (revents && p->stage == LIVE_UP && !atomic_load(&p->is_lost)) {
    size_t n;
    int err = sock_recv(p->fd, p->in + p->got, LIVE_FRAME_LEN - p->got, &n);
    if (err == EAGAIN) break;
    if (err) { /* closed or broken: reconnect at once; a refusal then says gone */
      bool is_turned_away = p->conn_answers == 0;
      close_conn(p);
      p->next_try_ns = now;
      if (is_turned_away) {
        /* Closed before any answer: its port turns us away (or another
         * process has it). Not evidence about the peer; retried calmly. */
        p->turned_away++;
        p->last_err = err;
        p->next_try_ns = now + (st->interval_ns < 1000000000LL ? st->interval_ns : 1000000000LL);
      }
      return;
    }
    p->got += n;
    if (p->got == LIVE_FRAME_LEN) {
      p->got = 0;
      answered(st, p, now);
    }
  }
  if (p->stage != LIVE_UP || now < p->next_check_ns) return;
  uint16_t flags = RUN_FLAG_ROOT6 | (atomic_load(&p->is_waiting) ? RUN_FLAG_WAITING : 0) |
                   run_slow_peer_flags(p->token);
  /* extra: who checks, for the slow-link bits (older answerers ignore it) */
  struct live_frame f = {LIVE_PING, flags, ++p->seq, p->token, (uint32_t)st->token};
  uint8_t out[LIVE_FRAME_LEN];
  size_t n;
  live_frame_encode(&f, out);
  int err = sock_send(p->fd, out, sizeof(out), &n);
  if (err == EAGAIN || (!err && n == sizeof(out))) {
    /* Sent, or the socket is full: the peer does not read; TCP_INFO shows it. */
    p->checks += !err;
    /* While a request of ours waits on it, check every LIVE_WAIT_CHECK_NS. */
    bool is_fast = atomic_load(&p->is_waiting) && st->interval_ns > LIVE_WAIT_CHECK_NS;
    p->next_check_ns = now + (is_fast ? LIVE_WAIT_CHECK_NS : st->interval_ns);
  } else {
    close_conn(p); /* broken, or a partial frame: start over */
    p->next_try_ns = now;
  }
}

static void peer_step(struct liveness_state *st, struct liveness_peer *p, short revents,
                      int64_t now) {
  if (atomic_load(&p->is_lost)) {
    if (p->fd >= 0) close_conn(p);
    return;
  }
  if (p->stage == LIVE_IDLE && now >= p->next_try_ns) connect_start(st, p, now);
  else if (p->stage == LIVE_CONNECTING) connect_step(st, p, revents, now);
  else if (p->stage == LIVE_UP) up_step(st, p, revents, now);
  if (!atomic_load(&p->is_lost)) liveness_check_timeout(st, p, now);
  live_path_sample(p, now, st->interval_ns);
}

/* ---- the loop ---- */

static bool room_for(struct loop *L, int n) {
  if (n <= L->cap_fds) return true;
  int cap = n * 2;
  struct pollfd *f = realloc(L->fds, cap * sizeof(*f));
  if (f) L->fds = f;
  struct liveness_peer **pp = realloc(L->fd_peers, cap * sizeof(*pp));
  if (pp) L->fd_peers = pp;
  if (!f || !pp) return false;
  L->cap_fds = cap;
  return true;
}

/* wake, the answering side (listening sockets and connections), then the
 * checking connections. */
static int build_polls(struct loop *L, int64_t now) {
  struct liveness_state *st = L->st;
  int npeers = 0;
  for (struct liveness_peer *p = st->peers; p; p = p->next) npeers++;
  if (!room_for(L, 1 + live_answer_nfds(&L->answer, st) + npeers)) return 0;
  int n = 0;
  L->fds[n] = (struct pollfd){st->wake_fd, POLLIN, 0};
  n = live_answer_polls(&L->answer, st, L->fds, n + 1, now);
  for (int i = 0; i < n; i++) L->fd_peers[i] = NULL;
  L->next_check_ns = INT64_MAX;
  for (struct liveness_peer *p = st->peers; p; p = p->next) {
    p->poll_index = -1;
    if (p->fd < 0) continue;
    if (p->stage == LIVE_UP && p->next_check_ns < L->next_check_ns)
      L->next_check_ns = p->next_check_ns;
    p->poll_index = n;
    L->fds[n] = (struct pollfd){p->fd, p->stage == LIVE_CONNECTING ? POLLOUT : POLLIN, 0};
    L->fd_peers[n++] = p;
  }
  return n;
}

/* This process did not run for a while: its peers' silence then is not
 * theirs. */
static void forgive_own_gap(struct loop *L, int64_t now) {
  int64_t gap = now - L->last_ns;
  L->last_ns = now;
  if (gap < LOOP_NS + 1500000000LL) return;
  for (struct liveness_peer *p = L->st->peers; p; p = p->next)
    atomic_fetch_add(&p->last_answer_ns, gap - LOOP_NS);
}

static void step_peers(struct loop *L, int nfds, int64_t now) {
  struct liveness_state *st = L->st;
  for (struct liveness_peer **pp = &st->peers; *pp;) {
    struct liveness_peer *p = *pp;
    if (p->refs == 0) {
      *pp = p->next;
      if (p->fd >= 0) close(p->fd);
      free(p);
      continue;
    }
    int i = p->poll_index;
    bool is_polled = i >= 0 && i < nfds && L->fd_peers[i] == p && L->fds[i].fd == p->fd;
    peer_step(st, p, is_polled ? L->fds[i].revents : 0, now);
    pp = &p->next;
  }
}

void *liveness_thread_main(void *arg) {
  struct loop L = {.st = arg, .last_ns = now_ns()};
  struct liveness_state *st = L.st;
  for (;;) {
    pthread_mutex_lock(&st->lock);
    int nfds = build_polls(&L, now_ns());
    pthread_mutex_unlock(&st->lock);
    int64_t t = now_ns();
    int wait_ms = live_answer_wait_ms(&L.answer, t, (int)(LOOP_NS / 1000000));
    if (L.next_check_ns - t < (int64_t)wait_ms * 1000000)
      wait_ms = L.next_check_ns > t ? (int)((L.next_check_ns - t) / 1000000) + 1 : 0;
    if (poll(L.fds, (nfds_t)nfds, wait_ms) < 0 && errno != EINTR) usleep(LOOP_NS / 1000);
    int64_t now = now_ns();
    if (nfds > 0 && (L.fds[0].revents & POLLIN)) {
      uint64_t v;
      (void)!read(st->wake_fd, &v, sizeof(v));
    }
    run_loop_tick(now, LOOP_NS); /* before answering: a stop of ours is no idle caller */
    if (nfds > 0) live_answer_pass(&L.answer, st, L.fds, now);
    pthread_mutex_lock(&st->lock);
    forgive_own_gap(&L, now);
    step_peers(&L, nfds, now);
    pthread_mutex_unlock(&st->lock);
  }
  return NULL;
}
