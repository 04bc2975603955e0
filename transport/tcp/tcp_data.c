/* SPDX-License-Identifier: Apache-2.0 */
/* Data sockets: how a message is striped over them, their stripe rings,
 * and the caller's share of the moving (the helpers' is tcp_pool.c). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

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

static void push_task(struct tcp_comm *c, int sock, uint8_t *buf, size_t len, struct tcp_req *r) {
  struct tcp_sock *s = &c->socks[sock];
  unsigned tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
  s->tasks[tail % TCP_RING] = (struct tcp_task){buf, (uint32_t)len, 0, r};
  atomic_store(&s->tail, tail + 1); /* seq_cst: pairs with the helper's sleeping flag */
}

size_t tcp_head_len(struct tcp_sock *s) {
  unsigned head = atomic_load(&s->head);
  return head != atomic_load(&s->tail) ? s->tasks[head % TCP_RING].len : 0;
}

/* A stripe at the head that is larger than the caller's share is the
 * helper's. */
static bool is_helpers(const struct tcp_comm *c, const struct tcp_sock *s, size_t head_len) {
  return s->worker && head_len > c->caller_max;
}

/* The caller moves the small stripes at the head of a socket; a large one
 * is the helper's, which it hands over. A helper that holds the socket
 * rechecks the ring after releasing it, so no stripe is left behind. */
static int caller_sock(struct tcp_comm *c, struct tcp_sock *s, size_t *moved) {
  int err = 0;
  int free_ = SOCK_FREE;
  size_t len = tcp_head_len(s);
  if (!len) return 0;
  if (!is_helpers(c, s, len) && atomic_compare_exchange_strong(&s->owner, &free_, SOCK_CALLER)) {
    bool is_blocked;
    err = tcp_sock_progress(c, s, s->worker ? c->caller_max : SIZE_MAX, moved, &is_blocked);
    atomic_store(&s->owner, SOCK_FREE);
    len = tcp_head_len(s);
  }
  if (!err && is_helpers(c, s, len)) tcp_pool_kick(s);
  return err;
}

/* A large head stripe is the helper's: hand it over now. Small ones wait
 * for the caller's next test(): moving them inside isend/irecv as well
 * measured 0.5-0.8x of this at 256 KiB-4 MiB over loopback
 * (bench/README.md, round 3). */
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
    struct tcp_sock *s = &c->socks[sock];
    if (is_helpers(c, s, tcp_head_len(s))) tcp_pool_kick(s);
  }
}

int tcp_caller_progress(struct tcp_comm *c, size_t *moved) {
  for (int i = 0; i < c->nsocks; i++) {
    int err = caller_sock(c, &c->socks[i], moved);
    if (err) return err;
  }
  return 0;
}

static int sock_failed(struct tcp_comm *c, struct tcp_sock *s, const struct tcp_task *t, int err) {
  return tcp_fail(c, ECONNRESET, TCP_F_SOCKET,
                  "data socket %d %s message %u: %s after %u of its %u bytes of this stripe; the "
                  "peer process died, closed the connection or the network dropped it",
                  s->index, c->is_send ? "sending" : "receiving", t->req->seq,
                  err == EPIPE ? "the peer closed the connection" : strerror(err), t->off, t->len);
}

int tcp_sock_progress(struct tcp_comm *c, struct tcp_sock *s, size_t max_task, size_t *moved,
                      bool *is_blocked) {
  *is_blocked = false;
  unsigned head = atomic_load_explicit(&s->head, memory_order_relaxed);
  while (head != atomic_load_explicit(&s->tail, memory_order_acquire)) {
    struct tcp_task *t = &s->tasks[head % TCP_RING];
    if (t->len > max_task) return 0;
    while (t->off < t->len) {
      if (tcp_is_down(c)) return c->fail_err ? c->fail_err : ECONNRESET;
      size_t n;
      int err = c->is_send ? sock_send(s->fd, t->buf + t->off, t->len - t->off, &n)
                           : sock_recv(s->fd, t->buf + t->off, t->len - t->off, &n);
      if (err == EAGAIN) {
        *is_blocked = true;
        return 0;
      }
      if (err) return sock_failed(c, s, t, err);
      t->off += (uint32_t)n;
      *moved += n;
      if (atomic_fetch_sub(&t->req->pending, (long long)n) == (long long)n) transport_idle_wake();
    }
    head++;
    atomic_store_explicit(&s->head, head, memory_order_release);
  }
  return 0;
}
