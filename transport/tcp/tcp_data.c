/* SPDX-License-Identifier: Apache-2.0 */
/* Data sockets: how a message is striped over them, their task rings, and
 * the helper threads that serve them. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "transport/idle.h"
#include "transport/sock.h"
#include "transport/tcp/tcp.h"

#define MAX_CHUNK (1ULL << 30)

size_t tcp_chunk_for(const struct tcp_comm *c, size_t size) {
  size_t per = (size + (size_t)c->nsocks - 1) / (size_t)c->nsocks;
  size_t chunk = per > c->min_chunk ? per : c->min_chunk;
  chunk = (chunk + 63) & ~(size_t)63;
  return chunk > MAX_CHUNK ? MAX_CHUNK : chunk;
}

int tcp_nstripes(size_t size, size_t chunk) { return size ? (int)((size + chunk - 1) / chunk) : 0; }

/* Stripe k of message seq: socket (seq + k) mod nsocks, so consecutive
 * messages start on different sockets and small striped messages spread. */
void tcp_stripe(size_t size, size_t chunk, int nsocks, uint32_t seq, int k, int *sock, size_t *off,
                size_t *len) {
  *off = (size_t)k * chunk;
  *len = size - *off < chunk ? size - *off : chunk;
  *sock = (int)((seq + (uint32_t)k) % (uint32_t)nsocks);
}

static void wake(struct tcp_thread *t) {
  if (atomic_exchange(&t->is_sleeping, false)) {
    uint64_t one = 1;
    ssize_t r = write(t->efd, &one, sizeof(one));
    (void)r;
  }
}

static void push_task(struct tcp_comm *c, int sock, uint8_t *buf, size_t len, struct tcp_req *r) {
  struct tcp_sock *s = &c->socks[sock];
  unsigned tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
  struct tcp_task *t = &s->tasks[tail % TCP_RING];
  t->buf = buf;
  t->len = len;
  t->off = 0;
  t->req = r;
  atomic_store(&s->tail, tail + 1); /* seq_cst: pairs with the helper's sleeping flag */
}

static bool ring_busy(struct tcp_sock *s) { return atomic_load(&s->head) != atomic_load(&s->tail); }

/* The head task, when there is one: its length. */
static size_t head_len(struct tcp_sock *s) {
  unsigned head = atomic_load(&s->head);
  return head != atomic_load(&s->tail) ? s->tasks[head % TCP_RING].len : 0;
}

/* The caller moves the small stripes at the head of a socket; a large one
 * is the helper's, which it wakes. A helper that holds the socket rechecks
 * the ring after releasing it, so no task is left behind. */
static int caller_sock(struct tcp_comm *c, struct tcp_sock *s, size_t *moved) {
  int err = 0;
  int free_ = SOCK_FREE;
  if (head_len(s) <= c->caller_max &&
      atomic_compare_exchange_strong(&s->owner, &free_, SOCK_CALLER)) {
    err = tcp_sock_progress(c, s, c->caller_max, moved);
    atomic_store(&s->owner, SOCK_FREE);
  }
  if (!err && ring_busy(s) && head_len(s) > c->caller_max) wake(&c->threads[s->thread]);
  return err;
}

/* A large head stripe is the helper's: wake it now. Small ones wait for the
 * caller's next test(): moving them inside isend/irecv as well measured
 * 0.5-0.8x of this at 256 KiB-4 MiB over loopback (bench/README.md,
 * round 3). */
static void kick(struct tcp_comm *c, int sock) {
  struct tcp_sock *s = &c->socks[sock];
  if (s->thread >= 0 && head_len(s) > c->caller_max) wake(&c->threads[s->thread]);
}

void tcp_push_message(struct tcp_comm *c, uint8_t *buf, size_t size, size_t chunk, uint32_t seq,
                      struct tcp_req *r) {
  int ns = tcp_nstripes(size, chunk), sock;
  size_t off, len;
  for (int k = 0; k < ns; k++) {
    tcp_stripe(size, chunk, c->nsocks, seq, k, &sock, &off, &len);
    push_task(c, sock, buf + off, len, r);
  }
  for (int k = 0; k < ns; k++) {
    tcp_stripe(size, chunk, c->nsocks, seq, k, &sock, &off, &len);
    kick(c, sock);
  }
}

int tcp_caller_progress(struct tcp_comm *c, size_t *moved) {
  for (int i = 0; i < c->nsocks; i++) {
    struct tcp_sock *s = &c->socks[i];
    if (!ring_busy(s)) continue;
    int err = s->thread < 0 ? tcp_sock_progress(c, s, SIZE_MAX, moved) : caller_sock(c, s, moved);
    if (err) return err;
  }
  return 0;
}

int tcp_sock_progress(struct tcp_comm *c, struct tcp_sock *s, size_t max_task, size_t *moved) {
  unsigned head = atomic_load_explicit(&s->head, memory_order_relaxed);
  while (head != atomic_load_explicit(&s->tail, memory_order_acquire)) {
    struct tcp_task *t = &s->tasks[head % TCP_RING];
    if (t->len > max_task) return 0;
    while (t->off < t->len) {
      size_t n;
      int err = c->is_send ? sock_send(s->fd, t->buf + t->off, t->len - t->off, &n)
                           : sock_recv(s->fd, t->buf + t->off, t->len - t->off, &n);
      if (err == EAGAIN) return 0;
      if (err)
        return tcp_fail(c, ECONNRESET, TCP_F_SOCKET,
                        "data socket %d %s message %u: %s after %zu of its %zu bytes of this "
                        "stripe; the peer process died, closed the connection or the network "
                        "dropped it",
                        s->index, c->is_send ? "sending" : "receiving", t->req->seq,
                        err == EPIPE ? "the peer closed the connection" : strerror(err), t->off,
                        t->len);
      t->off += n;
      *moved += n;
      if (atomic_fetch_sub(&t->req->pending, (long long)n) == (long long)n) transport_idle_wake();
    }
    head++;
    atomic_store_explicit(&s->head, head, memory_order_release);
  }
  return 0;
}

/* A helper receiving a large stripe sleeps until a good share of what is
 * left has arrived, not on every segment, as a blocking MSG_WAITALL read
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

static void *tcp_thread_main(void *arg) {
  struct tcp_thread *t = arg;
  struct tcp_comm *c = t->comm;
  struct pollfd pfd[1 + TRANSPORT_MAX_DATA_SOCKS];
  while (!atomic_load(&c->is_stopping)) {
    int n = 1;
    pfd[0].fd = t->efd;
    pfd[0].events = POLLIN;
    for (int i = t->first; i < t->first + t->count; i++) {
      struct tcp_sock *s = &c->socks[i];
      /* Small stripes at the head are the caller's (see caller_sock). */
      if (head_len(s) <= c->caller_max || atomic_load(&c->is_failed)) continue;
      int free_ = SOCK_FREE;
      /* The caller is moving it right now: it wakes us if bytes are left. */
      if (!atomic_compare_exchange_strong(&s->owner, &free_, SOCK_HELPER)) continue;
      size_t moved = 0; /* the caller counts its own progress; helpers need not */
      (void)tcp_sock_progress(c, s, SIZE_MAX, &moved); /* a failure is logged and published */
      atomic_store(&s->owner, SOCK_FREE);
      if (!c->is_send) set_lowat(c, s);
      if (head_len(s) > c->caller_max && !atomic_load(&c->is_failed)) {
        pfd[n].fd = s->fd;
        pfd[n].events = c->is_send ? POLLOUT : POLLIN;
        n++;
      }
    }
    /* Announce the sleep, then look once more so a task pushed meanwhile
     * is not missed (the pusher checks the flag after publishing). */
    atomic_store(&t->is_sleeping, true);
    int again = 0;
    for (int i = t->first; i < t->first + t->count; i++)
      if (head_len(&c->socks[i]) > c->caller_max && !atomic_load(&c->is_failed)) {
        int polled = 0;
        for (int k = 1; k < n; k++) polled |= pfd[k].fd == c->socks[i].fd;
        again |= !polled;
      }
    if (again || atomic_load(&c->is_stopping)) {
      atomic_store(&t->is_sleeping, false);
      continue;
    }
    poll(pfd, (nfds_t)n, -1);
    atomic_store(&t->is_sleeping, false);
    if (pfd[0].revents & POLLIN) {
      uint64_t v;
      ssize_t r = read(t->efd, &v, sizeof(v));
      (void)r;
    }
  }
  return NULL;
}

int tcp_threads_start(struct tcp_comm *c) {
  if (!c->nthreads) return 0;
  int per = c->nsocks / c->nthreads, extra = c->nsocks % c->nthreads, first = 0;
  for (int i = 0; i < c->nthreads; i++) {
    struct tcp_thread *t = &c->threads[i];
    t->comm = c;
    t->first = first;
    t->count = per + (i < extra ? 1 : 0);
    for (int k = first; k < first + t->count; k++) c->socks[k].thread = i;
    first += t->count;
    t->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (t->efd < 0) {
      int err = errno;
      WARN("connection with %s: cannot create an eventfd for helper thread %d: %s",
           c->base.peer.desc, i, strerror(err));
      return err;
    }
    int err = pthread_create(&t->tid, NULL, tcp_thread_main, t);
    if (err) {
      WARN("connection with %s: cannot start TCP helper thread %d of %d: %s. Lower "
           "NCCL_SOCKET_NTHREADS, or raise the process's thread limit (ulimit -u)",
           c->base.peer.desc, i, c->nthreads, strerror(err));
      close(t->efd);
      t->efd = -1;
      return err;
    }
    t->is_started = true;
    char name[16];
    snprintf(name, sizeof(name), "diag-tcp-%c%d", c->is_send ? 's' : 'r', i);
    pthread_setname_np(t->tid, name);
  }
  return 0;
}

void tcp_threads_stop(struct tcp_comm *c) {
  atomic_store(&c->is_stopping, true);
  for (int i = 0; i < c->nthreads; i++) {
    struct tcp_thread *t = &c->threads[i];
    if (!t->is_started) continue;
    uint64_t one = 1;
    ssize_t r = write(t->efd, &one, sizeof(one));
    (void)r;
    pthread_join(t->tid, NULL);
    t->is_started = false;
  }
  for (int i = 0; i < c->nthreads; i++) {
    if (c->threads[i].efd >= 0) close(c->threads[i].efd);
    c->threads[i].efd = -1;
  }
}
