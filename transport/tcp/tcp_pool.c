/* SPDX-License-Identifier: Apache-2.0 */
/* The helper threads of a device, shared by every TCP connection on it.
 *
 * A device has at most NCCL_DIAG_SOCKET_POOL helpers (default 2), started
 * with its first connection that wants helpers and stopped with its last.
 * Each helper has an epoll set holding the data sockets it serves
 * (edge-triggered and one-shot: a socket is tried when work arrives, and
 * after an EAGAIN on a stripe of its own the helper re-arms it and tries
 * again once the kernel reports it ready; a socket whose stripes the
 * caller moves stays disarmed, so its traffic does not wake the helper)
 * and an eventfd that wakes it. A driving thread hands a helper new work by pushing the socket
 * onto the helper's kick list (lock-free, many producers; the helper takes
 * the whole list at once) and writing the eventfd only if the helper
 * announced it sleeps. The helper keeps the sockets that have work in an
 * active list of its own. So an idle connection costs no thread and no
 * descriptor beyond its sockets, and a helper's wake-ups follow data, not
 * connections.
 *
 * Detaching a comm (close, or a failure the caller is told of) is a
 * command the helper runs between two rounds, under the pool lock: it
 * takes the kick list, drops the comm's sockets from its epoll set and
 * active list, and acknowledges. Nothing the helper holds then points into
 * the comm, which the caller may free. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "transport/idle.h"
#include "transport/prefs.h"
#include "transport/tcp/tcp.h"

#define POOL_MAX 16

struct tcp_worker {
  pthread_t tid;
  int epfd, efd;
  int dev, id;
  atomic_bool is_sleeping;
  _Atomic(struct tcp_sock *) kicks;
  atomic_bool has_cmd;
  /* commands, under pool_lock */
  struct tcp_comm *detach; /* the comm whose sockets it must drop */
  bool is_stopping;
  /* the helper's own */
  struct tcp_sock *active;
};

struct tcp_pool {
  int ncomms; /* attached comms */
  int nworkers;
  unsigned next; /* where the next comm's first socket goes */
  struct tcp_worker *workers[POOL_MAX];
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cmd_done = PTHREAD_COND_INITIALIZER;
static struct tcp_pool pools[TRANSPORT_MAX_DEVS];

static void wake(struct tcp_worker *w) {
  uint64_t one = 1;
  ssize_t r = write(w->efd, &one, sizeof(one));
  (void)r;
}

void tcp_pool_kick(struct tcp_sock *s) {
  struct tcp_worker *w = s->worker;
  if (atomic_exchange(&s->is_kicked, true)) return; /* already on the list */
  struct tcp_sock *old = atomic_load(&w->kicks);
  do s->next_kick = old;
  while (!atomic_compare_exchange_weak(&w->kicks, &old, s));
  /* seq_cst: either the helper sees the kick before it sleeps, or we see
   * that it sleeps */
  if (atomic_exchange(&w->is_sleeping, false)) wake(w);
}

static void activate(struct tcp_worker *w, struct tcp_sock *s) {
  if (s->is_active) return;
  s->is_active = true;
  s->next_active = w->active;
  w->active = s;
}

static void take_kicks(struct tcp_worker *w) {
  struct tcp_sock *s = atomic_exchange(&w->kicks, NULL);
  while (s) {
    struct tcp_sock *next = s->next_kick; /* before the flag: it may be pushed again at once */
    atomic_store(&s->is_kicked, false);
    s->is_ready = true; /* new work: try it, the socket may well take it */
    activate(w, s);
    s = next;
  }
}

/* The helper sleeps until a good share of what is left of a large stripe
 * has arrived, not on every segment, as a blocking MSG_WAITALL read
 * would. Never above what the stripe still lacks (those bytes are sure to
 * come), and back to 1 when the head stripe is the caller's, whose wait
 * must wake on any byte. */
#define LOWAT_MAX (256 << 10)
static void set_lowat(struct tcp_comm *c, struct tcp_sock *s) {
  unsigned head = atomic_load(&s->head);
  int want = 1;
  if (head != atomic_load(&s->tail)) {
    struct tcp_task *t = &s->tasks[head % TCP_RING];
    if (t->len > c->caller_max) {
      size_t rem = t->len - t->off;
      want = rem > LOWAT_MAX ? LOWAT_MAX : (int)rem;
    }
  }
  if (want == s->lowat) return;
  if (setsockopt(s->fd, SOL_SOCKET, SO_RCVLOWAT, &want, sizeof(want)) == 0) s->lowat = want;
}

/* The helper is to hear of the socket's next readiness once: after an
 * EAGAIN on a stripe of its own. Re-arming reports a socket that is ready
 * already, so no edge is lost. Without this every segment the caller's
 * own stripes brought woke the helper for nothing: two wake-ups per
 * message at 512 KiB over loopback (strace -c), on CPUs the caller and
 * the peer need (bench/README.md, NCCL's shape). */
static void arm(struct tcp_sock *s) {
  struct epoll_event ev = {
    .events = EPOLLET | EPOLLONESHOT | (s->comm->is_send ? EPOLLOUT : EPOLLIN), .data.ptr = s};
  epoll_ctl(s->worker->epfd, EPOLL_CTL_MOD, s->fd, &ev); /* fails only once the socket is gone */
}

/* One socket's turn: true while it stays active (work left that is the
 * helper's). */
static bool serve(struct tcp_sock *s) {
  struct tcp_comm *c = s->comm;
  size_t len = tcp_head_len(s);
  if (!len || len <= c->caller_max || tcp_is_down(c)) return false;
  int free_ = SOCK_FREE;
  /* The caller is moving it right now: it hands it back if bytes are left. */
  if (!atomic_compare_exchange_strong(&s->owner, &free_, SOCK_HELPER)) return true;
  size_t moved = 0; /* the caller counts its own progress; helpers need not */
  bool is_blocked = false;
  (void)tcp_sock_progress(c, s, SIZE_MAX, &moved, &is_blocked); /* a failure is logged */
  atomic_store(&s->owner, SOCK_FREE);
  if (!c->is_send) set_lowat(c, s);
  len = tcp_head_len(s);
  bool is_mine = len > c->caller_max && !tcp_is_down(c);
  if (is_blocked) {
    s->is_ready = false;
    if (is_mine) arm(s);
  }
  return is_mine;
}

/* Every active socket that can move, once; whether one is still ready. */
static bool run_active(struct tcp_worker *w) {
  bool is_any_ready = false;
  for (struct tcp_sock **pp = &w->active; *pp;) {
    struct tcp_sock *s = *pp;
    if (s->is_ready && !serve(s)) {
      *pp = s->next_active;
      s->is_active = false;
      continue;
    }
    is_any_ready |= s->is_ready;
    pp = &s->next_active;
  }
  return is_any_ready;
}

static void drop(struct tcp_worker *w, struct tcp_comm *c) {
  for (int i = 0; i < c->nsocks; i++) {
    struct tcp_sock *s = &c->socks[i];
    if (s->worker != w) continue;
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, s->fd, NULL); /* gone already if the socket was reset */
    for (struct tcp_sock **pp = &w->active; *pp; pp = &(*pp)->next_active)
      if (*pp == s) {
        *pp = s->next_active;
        break;
      }
    s->is_active = false;
  }
}

/* Between two rounds: a detach or a stop. True when the helper stops. */
static bool commands(struct tcp_worker *w) {
  pthread_mutex_lock(&pool_lock);
  take_kicks(w); /* a kick pushed before the detach may name the comm */
  if (w->detach) {
    drop(w, w->detach);
    w->detach = NULL;
  }
  bool is_stopping = w->is_stopping;
  atomic_store(&w->has_cmd, false);
  pthread_cond_broadcast(&cmd_done);
  pthread_mutex_unlock(&pool_lock);
  return is_stopping;
}

static void *worker_main(void *arg) {
  struct tcp_worker *w = arg;
  struct epoll_event evs[64];
  for (;;) {
    take_kicks(w);
    if (atomic_load(&w->has_cmd) && commands(w)) break;
    int timeout = run_active(w) ? 0 : -1;
    if (timeout < 0) {
      atomic_store(&w->is_sleeping, true);
      if (atomic_load(&w->kicks) || atomic_load(&w->has_cmd)) {
        atomic_store(&w->is_sleeping, false);
        continue;
      }
    }
    int n = epoll_wait(w->epfd, evs, 64, timeout);
    atomic_store(&w->is_sleeping, false);
    for (int k = 0; k < n; k++) {
      struct tcp_sock *s = evs[k].data.ptr;
      if (!s) {
        uint64_t v;
        ssize_t r = read(w->efd, &v, sizeof(v));
        (void)r;
        continue;
      }
      s->is_ready = true;
      activate(w, s);
    }
  }
  return NULL;
}

static void worker_free(struct tcp_worker *w) {
  if (w->epfd >= 0) close(w->epfd);
  if (w->efd >= 0) close(w->efd);
  free(w);
}

/* Under pool_lock: one more helper for device dev. 0 or an errno (logged). */
static int worker_start(struct tcp_pool *p, int dev, const char *devname) {
  struct tcp_worker *w = calloc(1, sizeof(*w));
  if (!w) return ENOMEM;
  w->dev = dev;
  w->id = p->nworkers;
  w->epfd = epoll_create1(EPOLL_CLOEXEC);
  w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  int err = w->epfd < 0 || w->efd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->efd, &ev) ? errno : 0;
  if (!err) err = pthread_create(&w->tid, NULL, worker_main, w);
  if (err) {
    WARN("device %s: cannot start TCP helper thread %d: %s. Raise the process's thread or "
         "descriptor limit (ulimit -u, ulimit -n), or set NCCL_SOCKET_NTHREADS=0 to move data on "
         "the caller's thread",
         devname, w->id, strerror(err));
    worker_free(w);
    return err;
  }
  char name[16];
  snprintf(name, sizeof(name), "diag-tcp%d-%d", dev, w->id);
  pthread_setname_np(w->tid, name);
  p->workers[p->nworkers++] = w;
  return 0;
}

static int pool_size(void) {
  int64_t n = transport_prefs()->socket_pool;
  return n < 1 ? 1 : n > POOL_MAX ? POOL_MAX : (int)n;
}

/* Under pool_lock: the comm's sockets into their helpers' epoll sets. */
static int place(struct tcp_pool *p, struct tcp_comm *c, int want) {
  unsigned first = p->next++;
  for (int i = 0; i < c->nsocks; i++) {
    struct tcp_sock *s = &c->socks[i];
    struct tcp_worker *w = p->workers[(first + (unsigned)(i % want)) % (unsigned)p->nworkers];
    /* disarmed until a stripe of the helper's meets EAGAIN (arm) */
    struct epoll_event ev = {.events = EPOLLET | EPOLLONESHOT, .data.ptr = s};
    s->worker = w;
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, s->fd, &ev)) {
      int err = errno;
      WARN("connection with %s on device %s: cannot watch data socket %d: %s", c->base.peer.desc,
           c->base.dev->name, i, strerror(err));
      for (int k = 0; k <= i; k++) {
        if (k < i) epoll_ctl(c->socks[k].worker->epfd, EPOLL_CTL_DEL, c->socks[k].fd, NULL);
        c->socks[k].worker = NULL;
      }
      return err;
    }
  }
  return 0;
}

int tcp_pool_attach(struct tcp_comm *c, int nthreads) {
  int want = nthreads < pool_size() ? nthreads : pool_size();
  if (want > c->nsocks) want = c->nsocks;
  c->nhelpers = 0;
  if (want <= 0) return 0; /* the caller moves everything */
  struct tcp_pool *p = &pools[c->base.dev->index];
  pthread_mutex_lock(&pool_lock);
  int err = 0;
  while (p->nworkers < want && !err) err = worker_start(p, c->base.dev->index, c->base.dev->name);
  if (p->nworkers == 0) {
    pthread_mutex_unlock(&pool_lock);
    return err;
  }
  if (want > p->nworkers) want = p->nworkers; /* fewer started: make do with them */
  err = place(p, c, want);
  if (!err) {
    p->ncomms++;
    c->is_attached = true;
    c->nhelpers = want;
  }
  pthread_mutex_unlock(&pool_lock);
  return err;
}

/* Under pool_lock: the helper runs the command and acknowledges it. */
static void command(struct tcp_worker *w, struct tcp_comm *detach, bool is_stop) {
  while (w->detach) pthread_cond_wait(&cmd_done, &pool_lock); /* another comm's detach */
  w->detach = detach;
  w->is_stopping |= is_stop;
  atomic_store(&w->has_cmd, true);
  wake(w);
  if (!is_stop)
    while (w->detach == detach) pthread_cond_wait(&cmd_done, &pool_lock);
}

void tcp_pool_detach(struct tcp_comm *c) {
  if (!c->is_attached) return;
  pthread_mutex_lock(&pool_lock);
  for (int i = 0; i < c->nsocks; i++) {
    struct tcp_worker *w = c->socks[i].worker;
    bool is_done = false;
    for (int k = 0; k < i; k++) is_done |= c->socks[k].worker == w;
    if (!is_done) command(w, c, false);
  }
  for (int i = 0; i < c->nsocks; i++) c->socks[i].worker = NULL;
  c->is_attached = false;
  pthread_mutex_unlock(&pool_lock);
}

/* Stops every helper of a pool (its last comm is gone) and waits for them:
 * joined outside the lock, which their last command takes. */
static void pool_stop(struct tcp_pool *p) {
  struct tcp_worker *ws[POOL_MAX];
  int n = p->nworkers;
  memcpy(ws, p->workers, sizeof(ws[0]) * (size_t)n);
  p->nworkers = 0;
  for (int i = 0; i < n; i++) command(ws[i], NULL, true);
  pthread_mutex_unlock(&pool_lock);
  for (int i = 0; i < n; i++) {
    pthread_join(ws[i]->tid, NULL);
    worker_free(ws[i]);
  }
  pthread_mutex_lock(&pool_lock);
}

void tcp_pool_release(struct tcp_comm *c) {
  if (!c->nhelpers) return;
  struct tcp_pool *p = &pools[c->base.dev->index];
  pthread_mutex_lock(&pool_lock);
  if (--p->ncomms == 0) pool_stop(p);
  c->nhelpers = 0;
  pthread_mutex_unlock(&pool_lock);
}

/* Comms left open when the plugin is unloaded: their helpers must not run
 * on in code that is about to be unmapped. */
__attribute__((destructor)) static void pools_stop_all(void) {
  pthread_mutex_lock(&pool_lock);
  for (int d = 0; d < TRANSPORT_MAX_DEVS; d++)
    if (pools[d].nworkers) pool_stop(&pools[d]);
  pthread_mutex_unlock(&pool_lock);
}
