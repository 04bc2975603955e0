/* SPDX-License-Identifier: Apache-2.0 */
/* See liveness.h: this process's endpoint, and the records of its peer
 * processes, one per process whatever the number of comms with it. */
#include "transport/liveness.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/knobs.h"
#include "common/log.h"
#include "common/strutil.h"
#include "transport/liveness_int.h"
#include "transport/prefs.h"
#include "transport/run/port_state.h"
#include "transport/run/stall.h"
#include "transport/sock.h"

static struct liveness_state state = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake_fd = -1};
static pthread_once_t start_once = PTHREAD_ONCE_INIT;

struct liveness_state *liveness_state(void) {
  return &state;
}

void liveness_wake(struct liveness_state *st) {
  uint64_t one = 1;
  (void)!write(st->wake_fd, &one, sizeof(one));
}

/* The thread with every signal blocked: a process-directed signal goes to
 * one of NCCL's or the application's threads, as if we had none. */
static int start_thread(struct liveness_state *st) {
  pthread_attr_t attr;
  pthread_t tid;
  sigset_t all, old;
  sigfillset(&all);
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = pthread_create(&tid, &attr, liveness_thread_main, st);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  return err;
}

static void start(void) {
  struct liveness_state *st = &state;
  int64_t sec = transport_prefs()->peer_timeout_sec;
  if (!sec) {
    INFO(LOG_INIT | LOG_NET, "peer liveness checks are off (NCCL_DIAG_PEER_TIMEOUT_SEC=0): a "
                             "stopped or unreachable peer is waited for without end");
    return;
  }
  st->timeout_ns = sec * 1000000000LL;
  /* A check every tenth of the timeout, 1 to 5 s apart: a handful of
   * unanswered ones before the verdict, a few bytes a second at most. */
  st->interval_ns = st->timeout_ns / 10;
  if (st->interval_ns < 1000000000LL) st->interval_ns = 1000000000LL;
  if (st->interval_ns > 5000000000LL) st->interval_ns = 5000000000LL;
  if (getrandom(&st->token, sizeof(st->token), GRND_NONBLOCK) != sizeof(st->token))
    st->token = (uint64_t)now_ns() ^ ((uint64_t)getpid() << 32);
  char where[300];
  int err = liveness_bind(st, where, sizeof(where));
  if (!err) {
    st->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (st->wake_fd < 0) err = errno;
  }
  if (!err) err = start_thread(st);
  if (err) {
    char advice[400];
    sock_errno_advice(err, advice, sizeof(advice));
    INFO(LOG_INIT | LOG_NET,
         "peer liveness checks cannot run in this process (%s%s%s): a stopped "
         "or unreachable peer is waited for without end",
         strerror(err), advice[0] ? "; " : "", advice);
    for (int i = 0; i < st->nlisten; i++) close(st->listen_fds[i]);
    if (st->wake_fd >= 0) close(st->wake_fd);
    st->nlisten = 0;
    st->wake_fd = -1;
    return;
  }
  st->is_on = true;
  INFO(LOG_INIT | LOG_NET,
       "peer liveness checks answer on port %u of %s, to peers with an established connection "
       "only; a peer that stops answering fails its connections after %lld s "
       "(NCCL_DIAG_PEER_TIMEOUT_SEC)",
       st->port, where, (long long)sec);
}

void liveness_local(struct hello_live *out) {
  pthread_once(&start_once, start);
  run_note_call(); /* setting up comms: the caller is active */
  memset(out, 0, sizeof(*out));
  out->is_present = state.is_on;
  out->port = state.port;
  out->token = state.token;
}

static bool endpoint(const struct liveness_who *peer, const struct sockaddr *addr, socklen_t len,
                     struct liveness_peer *p) {
  if (!addr || len > sizeof(p->sa)) return false;
  memcpy(&p->sa, addr, len);
  p->sa_len = len;
  if (addr->sa_family == AF_INET) ((struct sockaddr_in *)&p->sa)->sin_port = htons(peer->live.port);
  else if (addr->sa_family == AF_INET6)
    ((struct sockaddr_in6 *)&p->sa)->sin6_port = htons(peer->live.port);
  else return false;
  sockaddr_str((struct sockaddr *)&p->sa, p->where, sizeof(p->where));
  return true;
}

/* A new record for peer, not yet listed: NULL when its address is unusable
 * or memory is short (the comm then goes unchecked, as with an older peer). */
static struct liveness_peer *record_new(const struct liveness_who *peer,
                                        const struct sockaddr *addr, socklen_t len) {
  struct liveness_peer *p = calloc(1, sizeof(*p));
  if (!p) return NULL;
  if (!endpoint(peer, addr, len, p)) {
    free(p);
    return NULL;
  }
  p->refs = 1;
  p->token = peer->live.token;
  p->pid = peer->pid;
  scopy(p->host, sizeof(p->host), peer->host[0] ? peer->host : "an unnamed host");
  p->fd = -1;
  p->poll_index = -1;
  p->stage = LIVE_IDLE;
  atomic_store(&p->last_answer_ns, now_ns());
  atomic_store(&p->idle_s, -1);
  return p;
}

void liveness_who_from(struct liveness_who *w, const struct hello *peer) {
  scopy(w->host, sizeof(w->host), peer->host);
  w->pid = peer->pid;
  w->live = peer->live;
}

struct liveness_peer *liveness_peer_get(const struct liveness_who *peer,
                                        const struct sockaddr *addr, socklen_t len) {
  struct liveness_state *st = &state;
  pthread_once(&start_once, start);
  if (!st->is_on || !peer->live.is_present || peer->live.token == st->token) return NULL;
  pthread_mutex_lock(&st->lock);
  struct liveness_peer *p = st->peers;
  while (p && (p->token != peer->live.token || atomic_load(&p->is_lost))) p = p->next;
  bool is_new = !p;
  if (p) p->refs++;
  else if ((p = record_new(peer, addr, len))) {
    p->next = st->peers;
    st->peers = p;
  }
  pthread_mutex_unlock(&st->lock);
  if (is_new && p) liveness_wake(st);
  return p;
}

void liveness_peer_put(struct liveness_peer *p) {
  struct liveness_state *st = &state;
  if (!p) return;
  pthread_mutex_lock(&st->lock);
  bool is_last = --p->refs == 0;
  pthread_mutex_unlock(&st->lock);
  if (is_last) liveness_wake(st); /* the thread closes and frees it */
}

bool liveness_peer_lost(const struct liveness_peer *p, char *why, size_t cap) {
  if (!p || !atomic_load_explicit(&p->is_lost, memory_order_acquire)) return false;
  scopy(why, cap, p->why);
  return true;
}

void liveness_peer_notice(const struct liveness_peer *p, char *buf, size_t cap) {
  char host[64] = {0};
  gethostname(host, sizeof(host) - 1);
  snprintf(buf, cap,
           "this process (pid %u on %s) did not answer the liveness checks of %s (pid %d) for "
           "%lld s (NCCL_DIAG_PEER_TIMEOUT_SEC), which ended the connection: it was stopped or "
           "frozen, or cut off from that host",
           p->pid, p->host, host, (int)getpid(), (long long)(state.timeout_ns / 1000000000LL));
}

enum liveness_view liveness_peer_state(const struct liveness_peer *p, char *buf, size_t cap) {
  if (cap) buf[0] = 0;
  if (!p || atomic_load(&p->is_unchecked)) return LIVENESS_UNCHECKED;
  if (atomic_load_explicit(&p->is_lost, memory_order_acquire)) {
    snprintf(buf, cap, "stopped answering liveness checks");
    return LIVENESS_LOST;
  }
  double quiet = (double)(now_ns() - atomic_load(&p->last_answer_ns)) / 1e9;
  if (quiet < (double)state.interval_ns / 1e9 * 2) {
    snprintf(buf, cap, "answered a liveness check %.1f s ago", quiet < 0 ? 0 : quiet);
    return LIVENESS_ANSWERS;
  }
  snprintf(buf, cap, "has not answered liveness checks for %.0f s (its connections fail at %lld s)",
           quiet, (long long)(state.timeout_ns / 1000000000LL));
  return LIVENESS_SILENT;
}

void liveness_peer_set_waiting(struct liveness_peer *p, bool is_waiting) {
  if (p) atomic_store_explicit(&p->is_waiting, is_waiting, memory_order_relaxed);
}

int liveness_peer_idle_s(const struct liveness_peer *p) {
  return p ? atomic_load_explicit(&p->idle_s, memory_order_relaxed) : -1;
}

/* An answer's port word holds for this long: a check interval or two. */
static bool is_fresh(int64_t at, int64_t now) {
  int64_t iv = liveness_state()->interval_ns;
  return at && now - at <= 2 * iv + 1000000000LL;
}

bool liveness_peer_port_down(const struct liveness_peer *p, int64_t now, int *secs) {
  if (!p) return false;
  uint32_t word = atomic_load(&p->port_word);
  int64_t at = atomic_load(&p->port_word_ns);
  if (!is_fresh(at, now) || !run_port_word_down(word, secs)) return false;
  *secs += (int)((now - at) / 1000000000LL);
  return true;
}

bool liveness_peer_port_lately(const struct liveness_peer *p, int64_t now, int *down_s,
                               int *back_s) {
  *down_s = *back_s = -1;
  if (!p) return false;
  if (liveness_peer_port_down(p, now, down_s)) return true;
  *down_s = -1;
  int64_t at = atomic_load(&p->port_word_ns),
          last = run_port_word_last_down_ns(atomic_load(&p->port_word), at);
  if (!last) return false;
  *back_s = (int)((now - last) / 1000000000LL);
  return true;
}

int64_t liveness_token_port_last_down_ns(uint64_t token) {
  struct liveness_state *st = liveness_state();
  int64_t last = 0;
  pthread_mutex_lock(&st->lock);
  for (struct liveness_peer *p = st->peers; p; p = p->next) {
    if (p->token != token) continue;
    int64_t t =
      run_port_word_last_down_ns(atomic_load(&p->port_word), atomic_load(&p->port_word_ns));
    if (t > last) last = t;
  }
  pthread_mutex_unlock(&st->lock);
  return last;
}

int liveness_peer_root(const struct liveness_peer *p, uint32_t *pid, uint32_t *ip4) {
  int v = p ? atomic_load(&p->root_verdict) : 0;
  if (v) *pid = atomic_load(&p->root_pid), *ip4 = atomic_load(&p->root_ip4);
  return v;
}

unsigned liveness_peer_root6(const struct liveness_peer *p, uint8_t out[2][16]) {
  unsigned got = p ? atomic_load(&p->root6_got) : 0, ends = 0;
  for (int e = 0; e < 2; e++) {
    if ((got >> (2 * e) & 3) != 3) continue;
    for (int h = 0; h < 2; h++) {
      uint64_t v = atomic_load(&p->root6[e][h]);
      for (int i = 0; i < 8; i++) out[e][8 * h + i] = (uint8_t)(v >> (8 * i));
    }
    ends |= 1u << e;
  }
  return ends;
}

bool liveness_peer_root_end(const struct liveness_peer *p, uint32_t *pid, uint32_t *ip4) {
  if (!p || !atomic_load(&p->root_pid2)) return false;
  *pid = atomic_load(&p->root_pid2), *ip4 = atomic_load(&p->root_ip4b);
  return true;
}

void liveness_stall_advice(const struct liveness_peer *p, char *buf, size_t cap) {
  char live[200];
  enum liveness_view v = liveness_peer_state(p, live, sizeof(live));
  if (v == LIVENESS_UNCHECKED)
    snprintf(buf, cap,
             "The peer may not have reached the matching operation yet, or it is hung "
             "or unreachable");
  else if (v == LIVENESS_ANSWERS)
    snprintf(buf, cap,
             "The peer's process %s: it is alive and has not reached the matching operation yet "
             "(still busy, or the ranks' send and receive calls do not pair up)",
             live);
  else snprintf(buf, cap, "The peer's process %s: it may be stopped, or cut off", live);
}
