/* SPDX-License-Identifier: Apache-2.0 */
/* The liveness port's answering side (liveness_int.h): whatever strangers
 * on the network do, it costs a bounded number of descriptors, bytes and
 * CPU, tells them nothing, and never crowds out a real peer.
 *   - admission: the first frame must be a check carrying this process's
 *     token, which only a peer that completed a handshake with this process
 *     knows (the hello); anything else is closed with nothing sent back;
 *   - unadmitted connections: LIVE_ADMIT_NS to send that frame, at most
 *     LIVE_PENDING_PER_SOURCE per source address and LIVE_MAX_PENDING in
 *     all; a newcomer from another source takes the oldest one's place, so
 *     a real peer, whose first frame follows its connect, always gets in;
 *   - admitted connections: closed after LIVE_IDLE_NS without a check (a
 *     real peer checks every few seconds), at most LIVE_MAX_ADMITTED;
 *   - accepts rationed per window, frames per pass and per second.
 * A real peer's new connection waits in the kernel's accept queue behind
 * the strangers' until they are taken: accepting fast keeps that wait
 * short, and a checking connection never answered is no evidence about the
 * peer (liveness_observe.c). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/log.h"
#include "transport/liveness_int.h"
#include "transport/run/port_state.h"
#include "transport/run/slow_peer.h"
#include "transport/run/waitfor.h"
#include "transport/sock.h"

#define LIVE_ADMIT_NS 2000000000LL
#define LIVE_IDLE_NS 60000000000LL
#define LIVE_MAX_PENDING 64
#define LIVE_PENDING_PER_SOURCE 8
#define LIVE_MAX_ADMITTED 4096
#define LIVE_WINDOW_NS 100000000LL
#define LIVE_ACCEPTS_PER_WINDOW 1000 /* 10,000 a second: an accept and a close are cheap */
#define LIVE_ACCEPTS_PER_PASS 256
#define LIVE_FRAMES_PER_PASS 4
#define LIVE_FRAMES_PER_SEC 16 /* a real peer sends one every 1 to 5 s */
#define LIVE_SAY_NS 10000000000LL

struct live_answerer {
  int fd;
  bool is_admitted;
  struct ipaddr src;
  int64_t since_ns, last_frame_ns;
  int64_t rate_start_ns, muted_until;
  int frames; /* since rate_start_ns */
  uint8_t in[LIVE_FRAME_LEN];
  size_t got;
};

static bool is_local_shortage(int err) {
  return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

int live_answer_wait_ms(const struct live_answer_set *s, int64_t now, int ms) {
  if (s->pause_until > now && (s->pause_until - now) / 1000000 < ms)
    return (int)((s->pause_until - now) / 1000000) + 1;
  return ms;
}

int live_answer_nfds(const struct live_answer_set *s, const struct liveness_state *st) {
  return st->nlisten + s->n;
}

int live_answer_polls(struct live_answer_set *s, const struct liveness_state *st,
                      struct pollfd *fds, int n, int64_t now) {
  s->first_poll = n;
  for (int i = 0; i < st->nlisten; i++)
    fds[n++] = (struct pollfd){now < s->pause_until ? -1 : st->listen_fds[i], POLLIN, 0};
  for (int i = 0; i < s->n; i++) {
    const struct live_answerer *a = &s->conns[i];
    fds[n++] = (struct pollfd){now < a->muted_until ? -1 : a->fd, POLLIN, 0};
  }
  s->npolled = s->n;
  return n;
}

static void drop(struct live_answer_set *s, int i) {
  struct live_answerer *a = &s->conns[i];
  close(a->fd);
  if (a->is_admitted) s->nadmitted--;
  else s->npending--;
  /* Order kept: the oldest pending is found first, and the poll indices of
   * the connections after i shift with them (the caller walks backwards). */
  memmove(a, a + 1, (size_t)(s->n - i - 1) * sizeof(*a));
  s->n--;
  if (i < s->npolled) s->npolled--;
}

/* Strangers turned away, said at INFO at most every LIVE_SAY_NS: a port
 * scan or a flood must not flood the log. */
static void note_turned_away(struct live_answer_set *s, const struct liveness_state *st,
                             const struct ipaddr *src, const char *why, int64_t now) {
  s->turned_away++;
  if (now - s->said_ns < LIVE_SAY_NS && s->said_ns) return;
  char a[64];
  ipaddr_str(src, a, sizeof(a));
  INFO(LOG_NET,
       "liveness port %u: turned away %lu connections in all (the latest from %s: %s); only "
       "peers with an established connection are answered",
       st->port, s->turned_away, a, why);
  s->said_ns = now;
}

static bool room(struct live_answer_set *s) {
  if (s->n < s->cap) return true;
  int cap = s->cap ? s->cap * 2 : 16;
  struct live_answerer *c = realloc(s->conns, (size_t)cap * sizeof(*c));
  if (!c) return false;
  s->conns = c;
  s->cap = cap;
  return true;
}

/* Where a newcomer from src goes: false when it is turned away (its source
 * holds its share already). Drops the oldest pending one when all are
 * taken. */
static bool make_room(struct live_answer_set *s, const struct liveness_state *st,
                      const struct ipaddr *src, int64_t now) {
  int same = 0;
  for (int i = 0; i < s->n; i++)
    if (!s->conns[i].is_admitted && s->conns[i].src.family == src->family &&
        !memcmp(s->conns[i].src.bytes, src->bytes, sizeof(src->bytes)))
      same++;
  if (same >= LIVE_PENDING_PER_SOURCE) {
    note_turned_away(s, st, src, "too many connections from that address waiting to be admitted",
                     now);
    return false;
  }
  if (s->npending >= LIVE_MAX_PENDING) {
    for (int i = 0; i < s->n; i++)
      if (!s->conns[i].is_admitted) {
        note_turned_away(s, st, &s->conns[i].src, "it was the oldest waiting to be admitted", now);
        drop(s, i);
        break;
      }
  }
  return room(s);
}

static void accept_some(struct live_answer_set *s, struct liveness_state *st, int lfd,
                        int64_t now) {
  for (int k = 0; k < LIVE_ACCEPTS_PER_PASS; k++) {
    if (s->accepts >= LIVE_ACCEPTS_PER_WINDOW) {
      s->pause_until = s->window_ns + LIVE_WINDOW_NS;
      return;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (is_local_shortage(errno)) {
        s->pause_until = now + 1000000000LL;
        if (!s->has_said_shortage)
          INFO(LOG_NET, "liveness port %u: cannot take connections: %s on this host", st->port,
               strerror(errno));
        s->has_said_shortage = true;
      }
      return;
    }
    s->accepts++;
    struct ipaddr src = {0};
    ipaddr_from_sockaddr(&src, (struct sockaddr *)&ss, NULL);
    ipaddr_unmap(&src);
    src.prefix = 0;
    if (!make_room(s, st, &src, now)) {
      close(fd);
      continue;
    }
    sock_tune(fd);
    s->conns[s->n++] = (struct live_answerer){
      .fd = fd, .src = src, .since_ns = now, .last_frame_ns = now, .rate_start_ns = now};
    s->npending++;
  }
}

/* The first frame: admits the connection, or says why not (NULL: admitted). */
static const char *admit(struct live_answer_set *s, struct live_answerer *a,
                         const struct live_frame *f, bool is_check) {
  if (!is_check)
    return f->type == LIVE_PING ? "its check is not for this process (it does not know this "
                                  "process's token)"
                                : "its first bytes are not a liveness check of this plugin";
  if (s->nadmitted >= LIVE_MAX_ADMITTED) return "too many admitted connections";
  a->is_admitted = true;
  s->npending--;
  s->nadmitted++;
  return NULL;
}

/* The root's IPv6 addresses, to a checker that reads them. */
static bool send_root6(int fd, const struct run_root *root) {
  for (unsigned e = 0; e < 2; e++) {
    if (!(root->has6 >> e & 1)) continue;
    for (unsigned h = 0; h < 2; h++) {
      uint64_t v = 0;
      for (int i = 0; i < 8; i++) v |= (uint64_t)root->ip6[e][8 * h + i] << (8 * i);
      struct live_frame rf = {LIVE_ROOT6, root->verdict, e ? root->pid2 : root->pid, v, e * 2 + h};
      uint8_t out[LIVE_FRAME_LEN];
      size_t n = 0;
      live_frame_encode(&rf, out);
      if (sock_send(fd, out, sizeof(out), &n) || n != sizeof(out)) return false;
    }
  }
  return true;
}

/* Reads what arrived, within the frame ration, and answers each check:
 * false when the connection is to be closed (done, broken, or refused). */
static bool serve(struct live_answer_set *s, struct liveness_state *st, struct live_answerer *a,
                  int64_t now) {
  if (now - a->rate_start_ns >= 1000000000LL) {
    a->rate_start_ns = now;
    a->frames = 0;
  }
  for (int k = 0; k < LIVE_FRAMES_PER_PASS; k++) {
    if (a->frames >= LIVE_FRAMES_PER_SEC) { /* over its ration: not read for the rest of it */
      a->muted_until = a->rate_start_ns + 1000000000LL;
      return true;
    }
    size_t n;
    int err = sock_recv(a->fd, a->in + a->got, LIVE_FRAME_LEN - a->got, &n);
    if (err == EAGAIN) return true;
    if (err) return false;
    a->got += n;
    if (a->got < LIVE_FRAME_LEN) continue;
    a->got = 0;
    a->frames++;
    a->last_frame_ns = now;
    struct live_frame f = {0};
    bool is_check = live_frame_admits(a->in, st->token, &f);
    if (!a->is_admitted) {
      const char *why = admit(s, a, &f, is_check);
      if (why) {
        note_turned_away(s, st, &a->src, why, now);
        return false;
      }
    } else if (!is_check) {
      return false;
    }
    if (f.flags & RUN_FLAG_WAITING) {
      char from[64];
      ipaddr_str(&a->src, from, sizeof(from));
      run_waited_on(from, now);
    }
    run_slow_peer_heard(f.extra, f.flags, now); /* its side of a slow link (slow_peer.h) */
    struct live_frame reply = {LIVE_PONG, run_answer_flags(now), f.seq, st->token,
                               run_port_answer(now)};
    uint8_t out[LIVE_FRAME_LEN];
    live_frame_encode(&reply, out);
    /* 24 bytes into a socket the pinger drains: a short write means it does
     * not read, and it reconnects when we drop it. */
    if (sock_send(a->fd, out, sizeof(out), &n) || n != sizeof(out)) return false;
    struct run_root root;
    if ((f.flags & RUN_FLAG_WAITING) && run_root_get(&root)) {
      struct live_frame rf = {LIVE_ROOT, root.verdict, root.pid,
                              root.ip4 | (uint64_t)root.ip4b << 32, root.pid2};
      live_frame_encode(&rf, out);
      if (sock_send(a->fd, out, sizeof(out), &n) || n != sizeof(out)) return false;
      if ((f.flags & RUN_FLAG_ROOT6) && !send_root6(a->fd, &root)) return false;
    }
  }
  return true;
}

static bool is_expired(const struct live_answerer *a, int64_t now) {
  if (!a->is_admitted) return now - a->since_ns > LIVE_ADMIT_NS;
  return now - a->last_frame_ns > LIVE_IDLE_NS;
}

void live_answer_pass(struct live_answer_set *s, struct liveness_state *st,
                      const struct pollfd *fds, int64_t now) {
  if (now - s->window_ns >= LIVE_WINDOW_NS) {
    s->window_ns = now;
    s->accepts = 0;
  }
  /* Backwards: a dropped connection shifts only those after it. */
  for (int i = s->npolled - 1; i >= 0; i--) {
    struct live_answerer *a = &s->conns[i];
    short ev = fds[s->first_poll + st->nlisten + i].revents;
    if ((ev && !serve(s, st, a, now)) || is_expired(a, now)) drop(s, i);
  }
  for (int i = 0; i < st->nlisten; i++)
    if (fds[s->first_poll + i].revents & POLLIN) accept_some(s, st, st->listen_fds[i], now);
}
