/* SPDX-License-Identifier: Apache-2.0 */
/* The raw TCP baseline: what this machine does with plain sockets and the
 * same pattern as the plugin run beside it (sizes, window of 8 messages in
 * flight per comm, number of comms). A comm's message is cut into stripes
 * over S sockets (the stripe of message m numbered k goes to socket
 * (m + k) mod S, stripes no smaller than min_stripe), and every socket has
 * its own thread doing blocking send/recv (or, for a "spin" shape,
 * non-blocking calls with sched_yield() between them, as a polling proxy
 * would); the caller's thread serves one of them, so with one socket
 * nothing is handed between threads. Slots are
 * reused only when the message that held them completed (window), with a
 * futex for the rare thread that runs a window ahead. TCP_NODELAY is set,
 * socket buffers are the kernel's autotuned defaults, as for the plugin.
 * The event shape (raw_event.c) serves every comm from one thread. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench/drv.h"

#define PREAMBLE_MAGIC 0x6e62726bu

struct preamble {
  uint32_t magic, rank, comm, sock;
};

static void nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int raw_listen(struct raw_driver *w, int rank, const char *addr, int ncomms, int nsocks,
               bool has_send, bool has_recv, struct bench_offer *h, char *err, size_t cap) {
  raw_close(w);
  w->has_send = has_send;
  w->has_recv = has_recv;
  w->listen_fd = -1;
  w->is_ready = true;
  w->rank = rank;
  w->ncomms = ncomms;
  w->nsocks = nsocks;
  w->send_fds = malloc(2 * (size_t)ncomms * (size_t)nsocks * sizeof(int));
  if (!w->send_fds) {
    snprintf(err, cap, "out of memory for %d comms", ncomms);
    return ENOMEM;
  }
  w->recv_fds = w->send_fds + (size_t)ncomms * (size_t)nsocks;
  for (size_t i = 0; i < 2 * (size_t)ncomms * (size_t)nsocks; i++) w->send_fds[i] = -1;
  struct sockaddr_in sa = {.sin_family = AF_INET};
  if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
    snprintf(err, cap, "baseline address %s is not an IPv4 address", addr);
    return EINVAL;
  }
  w->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t len = sizeof(sa);
  if (w->listen_fd < 0 || bind(w->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
      listen(w->listen_fd, 4096) || getsockname(w->listen_fd, (struct sockaddr *)&sa, &len)) {
    int e = errno;
    snprintf(err, cap, "baseline listen on %s: %s", addr, strerror(e));
    return e;
  }
  memcpy(&h->raw_addr, &sa, sizeof(sa));
  h->raw_len = sizeof(sa);
  return 0;
}

/* Moves all of buf (blocking), or with spin by polling with MSG_DONTWAIT
 * and sched_yield() in between, as the plugin's driving thread (and
 * NCCL's proxy) polls. Returns 0 or an errno. */
static int xfer_all(int fd, void *buf, size_t len, bool is_out, bool is_spinning) {
  uint8_t *p = buf;
  int flags = is_spinning ? MSG_DONTWAIT : is_out ? 0 : MSG_WAITALL;
  while (len) {
    ssize_t n = is_out ? send(fd, p, len, flags | MSG_NOSIGNAL) : recv(fd, p, len, flags);
    if (n < 0 && is_spinning && errno == EAGAIN) sched_yield();
    if (n < 0 && (errno == EINTR || (is_spinning && errno == EAGAIN))) continue;
    if (n <= 0) return n < 0 ? errno : EPIPE;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static int write_all(int fd, const void *buf, size_t len, bool is_spinning) {
  return xfer_all(fd, (void *)buf, len, true, is_spinning);
}

static int read_all(int fd, void *buf, size_t len, bool is_spinning) {
  return xfer_all(fd, buf, len, false, is_spinning);
}

static int accept_all(struct raw_driver *w, int want, char *err, size_t cap) {
  for (int got = 0; got < want; got++) {
    struct pollfd pf = {w->listen_fd, POLLIN, 0};
    if (poll(&pf, 1, 30000) != 1) {
      snprintf(err, cap, "baseline: only %d of %d connections arrived in 30 s", got, want);
      return ETIMEDOUT;
    }
    int fd = accept4(w->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    struct preamble pre;
    if (fd < 0 || read_all(fd, &pre, sizeof(pre), false) || pre.magic != PREAMBLE_MAGIC ||
        pre.comm >= (uint32_t)w->ncomms || pre.sock >= (uint32_t)w->nsocks ||
        w->recv_fds[pre.comm * (uint32_t)w->nsocks + pre.sock] >= 0) {
      int e = fd < 0 ? errno : EPROTO;
      snprintf(err, cap, "baseline: a bad or stray connection arrived (%s)", strerror(errno));
      if (fd >= 0) close(fd);
      return e;
    }
    nodelay(fd);
    w->recv_fds[pre.comm * (uint32_t)w->nsocks + pre.sock] = fd;
  }
  return 0;
}

/* Blocking connects complete in the peer's backlog before it accepts, so
 * both ranks connect in batches no larger than the backlog and accept the
 * peer's batch in between (a rank that only receives only accepts). */
int raw_connect(struct raw_driver *w, const struct bench_offer *peer, char *err, size_t cap) {
  int total = w->ncomms * w->nsocks, done = 0, batch = 1024;
  while (done < total) {
    int n = total - done < batch ? total - done : batch;
    for (int i = done; i < done + n && w->has_send; i++) {
      int c = i / w->nsocks, s = i % w->nsocks;
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      struct preamble pre = {PREAMBLE_MAGIC, (uint32_t)w->rank, (uint32_t)c, (uint32_t)s};
      if (fd < 0) {
        int e = errno;
        snprintf(err, cap, "baseline socket %d of %d: %s", i + 1, total, strerror(e));
        return e;
      }
      w->send_fds[i] = fd;
      nodelay(fd);
      int e = connect(fd, (const struct sockaddr *)&peer->raw_addr, peer->raw_len)
                ? errno
                : write_all(fd, &pre, sizeof(pre), false);
      if (e) {
        snprintf(err, cap, "baseline connect: %s", strerror(e));
        return e;
      }
    }
    int rc = w->has_recv ? accept_all(w, n, err, cap) : 0;
    if (rc) return rc;
    done += n;
  }
  return 0;
}

void raw_close(struct raw_driver *w) {
  if (!w->is_ready) return;
  for (size_t i = 0; w->send_fds && i < 2 * (size_t)w->ncomms * (size_t)w->nsocks; i++)
    if (w->send_fds[i] >= 0) close(w->send_fds[i]);
  free(w->send_fds);
  if (w->listen_fd >= 0) close(w->listen_fd);
  memset(w, 0, sizeof(*w));
}

/* One stream's shared state; its units are the per-socket threads. */
struct raw_queue {
  struct stream *s;
  const struct bench_cmd *c;
  const int *fds;
  int nsocks, nst;
  size_t chunk;
  uint64_t total;
  _Atomic uint32_t slot_seq[BENCH_MAX_WINDOW]; /* the message a slot waits for */
  atomic_int left[BENCH_MAX_WINDOW];           /* its stripes still moving */
  atomic_int waiters;
  atomic_bool has_failed;
  pthread_mutex_t check_lock;
};

struct unit {
  struct raw_queue *q;
  int sock;
  int err;
  pthread_t tid;
};

static void futex_op(_Atomic uint32_t *addr, int op, uint32_t val) {
  struct timespec ts = {1, 0}; /* a failed peer is noticed within a second */
  syscall(SYS_futex, (uint32_t *)addr, op, val, op == FUTEX_WAIT_PRIVATE ? &ts : NULL, NULL, 0);
}

/* Waits until slot holds message m; ECANCELED when another unit failed. */
static int wait_slot(struct raw_queue *q, int slot, uint64_t m) {
  uint32_t v;
  while ((v = atomic_load(&q->slot_seq[slot])) != (uint32_t)m) {
    if (atomic_load(&q->has_failed)) return ECANCELED;
    atomic_fetch_add(&q->waiters, 1);
    futex_op(&q->slot_seq[slot], FUTEX_WAIT_PRIVATE, v);
    atomic_fetch_sub(&q->waiters, 1);
  }
  return 0;
}

/* The last stripe of message m is in: record, check, free the slot. */
static void complete(struct raw_queue *q, int slot, uint64_t m) {
  q->s->done_ns[m] = clock_mono_ns();
  if (!q->s->is_send) {
    pthread_mutex_lock(&q->check_lock);
    stream_check(q->s, q->c, m, false);
    pthread_mutex_unlock(&q->check_lock);
  }
  atomic_store(&q->left[slot], q->nst);
  atomic_store(&q->slot_seq[slot], (uint32_t)(m + (uint64_t)q->c->window));
  if (atomic_load(&q->waiters)) futex_op(&q->slot_seq[slot], FUTEX_WAKE_PRIVATE, INT32_MAX);
}

static void *unit_main(void *arg) {
  struct unit *u = arg;
  struct raw_queue *q = u->q;
  size_t size = q->c->size;
  for (uint64_t m = 0; m < q->total && !u->err; m++)
    for (int k = 0; k < q->nst; k++) {
      if ((int)((m + (uint64_t)k) % (uint64_t)q->nsocks) != u->sock) continue;
      int slot = (int)(m % (uint64_t)q->c->window);
      if (wait_slot(q, slot, m)) return NULL;
      uint8_t *buf = q->s->pool + (size_t)slot * size;
      size_t off = (size_t)k * q->chunk, len = size - off < q->chunk ? size - off : q->chunk;
      if (q->s->is_send) {
        pattern_stamp(buf, size, q->c->run_id, m, off, len);
        u->err = write_all(q->fds[u->sock], buf + off, len, q->c->shape.is_spinning);
      } else {
        u->err = read_all(q->fds[u->sock], buf + off, len, q->c->shape.is_spinning);
      }
      if (u->err) {
        atomic_store(&q->has_failed, true);
        return NULL;
      }
      if (atomic_fetch_sub(&q->left[slot], 1) == 1) complete(q, slot, m);
    }
  return NULL;
}

static void raw_queue_init(struct raw_driver *w, struct raw_queue *q, struct stream *s,
                           const struct bench_cmd *c) {
  memset(q, 0, sizeof(*q));
  q->s = s;
  q->c = c;
  q->fds = (s->is_send ? w->send_fds : w->recv_fds) + (size_t)s->comm * (size_t)w->nsocks;
  q->nsocks = c->shape.nsocks;
  q->total = c->warm + c->iters;
  uint64_t by_size = c->size / (c->raw_min_stripe ? c->raw_min_stripe : 1);
  q->nst = by_size < 1 ? 1 : by_size < (uint64_t)q->nsocks ? (int)by_size : q->nsocks;
  q->chunk = ((c->size + (size_t)q->nst - 1) / (size_t)q->nst + 7) & ~(size_t)7;
  for (int i = 0; i < c->window; i++) {
    atomic_store(&q->slot_seq[i], (uint32_t)i);
    atomic_store(&q->left[i], q->nst);
  }
  pthread_mutex_init(&q->check_lock, NULL);
}

static int run_bw(struct raw_driver *w, struct run_ctx *r) {
  const struct bench_cmd *c = r->cmd;
  if (r->nstreams * c->shape.nsocks > RAW_MAX_THREADS) {
    snprintf(r->err, sizeof(r->err), "baseline shape of %d threads: more than %d",
             r->nstreams * c->shape.nsocks, RAW_MAX_THREADS);
    return EINVAL;
  }
  struct raw_queue qs[RAW_MAX_THREADS];
  struct unit units[RAW_MAX_THREADS];
  int nu = 0;
  for (int i = 0; i < r->nstreams; i++) {
    raw_queue_init(w, &qs[i], &r->streams[i], c);
    for (int k = 0; k < c->shape.nsocks; k++) units[nu++] = (struct unit){&qs[i], k, 0, 0};
  }
  int started = 1; /* unit 0 runs on this thread */
  for (; started < nu; started++)
    if (pthread_create(&units[started].tid, NULL, unit_main, &units[started])) break;
  if (started < nu) {
    for (int i = 0; i < r->nstreams; i++) atomic_store(&qs[i].has_failed, true);
    units[0].err = EAGAIN;
  } else {
    int64_t t = thread_cpu_ns();
    unit_main(&units[0]);
    r->cpu_drv_ns = thread_cpu_ns() - t;
  }
  int fail = 0;
  for (int i = 0; i < nu; i++) {
    if (i && i < started) pthread_join(units[i].tid, NULL);
    if (units[i].err && !fail) {
      fail = units[i].err;
      snprintf(r->err, sizeof(r->err), "baseline socket %d: %s", units[i].sock,
               strerror(units[i].err));
    }
  }
  for (int i = 0; i < r->nstreams; i++) pthread_mutex_destroy(&qs[i].check_lock);
  return fail;
}

/* Ping-pong: rank 0 times send + matching receive. The waiting side
 * sleeps in recv, or spins on it with MSG_DONTWAIT (shape.is_spinning). */
static int run_lat(struct raw_driver *w, struct run_ctx *r) {
  const struct bench_cmd *c = r->cmd;
  struct stream *tx = r->streams[0].is_send ? &r->streams[0] : &r->streams[1];
  struct stream *rx = r->streams[0].is_send ? &r->streams[1] : &r->streams[0];
  int sfd = w->send_fds[0], rfd = c->shape.is_shared ? sfd : w->recv_fds[0];
  if (w->rank == 1 && c->shape.is_shared) sfd = rfd = w->recv_fds[0];
  uint64_t total = c->warm + c->iters;
  int64_t t0 = thread_cpu_ns();
  for (uint64_t i = 0; i < total; i++) {
    int e = 0;
    int64_t t = clock_mono_ns();
    if (w->rank == 1) e = read_all(rfd, rx->pool, c->size, c->shape.is_spinning);
    if (!e) {
      if (w->rank == 1) rx->done_ns[i] = clock_mono_ns(), stream_check(rx, c, i, false);
      pattern_stamp(tx->pool, c->size, c->run_id, i, 0, c->size);
      e = write_all(sfd, tx->pool, c->size, c->shape.is_spinning);
    }
    if (!e && w->rank == 0) e = read_all(rfd, rx->pool, c->size, c->shape.is_spinning);
    if (e) {
      snprintf(r->err, sizeof(r->err), "baseline ping-pong message %llu: %s", (unsigned long long)i,
               strerror(e));
      return e;
    }
    if (w->rank == 0) {
      rx->done_ns[i] = clock_mono_ns();
      stream_check(rx, c, i, false);
      if (i >= c->warm) r->lats[r->nlat++] = rx->done_ns[i] - t;
    }
  }
  r->cpu_drv_ns = thread_cpu_ns() - t0;
  return 0;
}

int raw_run(struct raw_driver *w, struct run_ctx *r) {
  if (r->cmd->shape.nsocks < 1 || r->cmd->shape.nsocks > w->nsocks) {
    snprintf(r->err, sizeof(r->err), "baseline shape of %d sockets, %d connected",
             r->cmd->shape.nsocks, w->nsocks);
    return EINVAL;
  }
  if (r->cmd->mode == MODE_LAT) return run_lat(w, r);
  return r->cmd->shape.is_event ? raw_run_event(w, r) : run_bw(w, r);
}
