/* SPDX-License-Identifier: Apache-2.0 */
/* TCP comm lifetime, failure, the request pool and test. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "transport/abort.h"
#include "transport/idle.h"
#include "transport/prefs.h"
#include "transport/prof.h"
#include "transport/report.h"
#include "transport/sock.h"
#include "transport/tcp/tcp.h"

/* The first failure wins and is logged once; later calls only return it.
 * The WARN goes out before the failure is published, so no caller can see
 * the error code before its explanation exists. */
int tcp_fail(struct tcp_comm *c, int err, int flags, const char *fmt, ...) {
  pthread_mutex_lock(&c->err_lock);
  if (!atomic_load(&c->is_failed)) {
    char msg[2048], reason[MSG_ABORT_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if ((flags & TCP_F_SOCKET) && c->is_send) {
      if (tcp_peer_notice(c, reason, sizeof(reason))) {
        snprintf(msg, sizeof(msg), "the receiving side ended the connection: %s", reason);
        err = ECONNRESET;
      } else if (tcp_hold(c, msg, sizeof(msg), &err)) {
        pthread_mutex_unlock(&c->err_lock);
        return ECONNRESET; /* stop: later calls publish it (tcp_judge_held) */
      }
    }
    ev_count(C_DATA_ERRORS, 1);
    struct ev e;
    ev_begin(&e, "connection_failed");
    ev_str(&e, "device", c->base.dev->name);
    ev_str(&e, "peer", c->base.peer.desc);
    ev_str(&e, "direction", c->is_send ? "send" : "recv");
    ev_str(&e, "error", msg);
    ev_end(&e);
    WARN("%s connection with %s on device %s: %s", c->is_send ? "send" : "receive",
         c->base.peer.desc, c->base.dev->name, msg);
    if (flags & TCP_F_NOTIFY) tcp_abort_peer(c, msg);
    c->fail_err = err;
    atomic_store(&c->is_failed, true);
  }
  pthread_mutex_unlock(&c->err_lock);
  return c->fail_err;
}

int tcp_failed(struct tcp_comm *c) {
  if (!c->is_quiesced) {
    tcp_pool_detach(c);
    c->is_quiesced = true;
  }
  return c->fail_err;
}

/* Requests are allocated a chunk at a time as the comm needs them (an
 * idle comm holds none) and reused through a free list; a finished
 * request keeps its memory, tagged dead, so a late test() of it is named,
 * not a crash. False when all chunks are in use or memory ran out. */
static bool add_req_chunk(struct tcp_comm *c) {
  if (c->nreq_chunks == TCP_REQ_CHUNKS) return false;
  struct tcp_req *chunk = calloc(TCP_REQ_CHUNK, sizeof(*chunk));
  c->is_req_oom = !chunk;
  if (!chunk) return false;
  c->req_chunks[c->nreq_chunks++] = chunk;
  for (int i = TCP_REQ_CHUNK - 1; i >= 0; i--) {
    chunk[i].base.obj = OBJ_DEAD;
    chunk[i].next = c->free_reqs;
    c->free_reqs = &chunk[i];
  }
  return true;
}

struct tcp_req *tcp_req_get(struct tcp_comm *c) {
  if (!c->free_reqs && !add_req_chunk(c)) return NULL;
  struct tcp_req *r = c->free_reqs;
  if (!r) return NULL;
  c->free_reqs = r->next;
  memset(r, 0, offsetof(struct tcp_req, hdr));
  r->base.obj = OBJ_REQ;
  r->base.comm = &c->base;
  r->still_ns = now_ns();
  prof_req_new(&r->base); /* NCCL profiler handles armed for this call */
  return r;
}

void tcp_req_put(struct tcp_comm *c, struct tcp_req *r) {
  prof_req_done(&r->base); /* its NCCL profiler events end with it */
  r->base.obj = OBJ_DEAD;
  r->next = c->free_reqs;
  c->free_reqs = r;
}

/* Nothing moved for a while: sleep on what this comm waits for (its
 * control socket, and its data sockets when the caller moves the data),
 * on what the thread's other comms wait for, and on the helpers'
 * completions. A sender also watches its control socket for the
 * receiver's notice. */
static void idle_wait(struct tcp_comm *c) {
  struct pollfd fds[1 + TRANSPORT_MAX_DATA_SOCKS];
  int n = 0;
  short ev = c->is_send ? POLLOUT : POLLIN;
  if (c->is_send) fds[n++] = (struct pollfd){c->ctrl_fd, POLLIN | (c->out_head ? POLLOUT : 0), 0};
  else if ((c->posted_head || c->cur) && !c->is_peer_closed)
    fds[n++] = (struct pollfd){c->ctrl_fd, POLLIN, 0};
  /* The sockets whose head stripe the caller moves (all, without helpers). */
  for (int i = 0; i < c->nsocks; i++) {
    struct tcp_sock *s = &c->socks[i];
    size_t len = tcp_head_len(s);
    if (len && (!s->worker || len <= c->caller_max)) fds[n++] = (struct pollfd){s->fd, ev, 0};
  }
  transport_idle_wait(c, fds, n);
}

/* A request that made no progress in this call: is the peer still there
 * (the liveness check), then wait a little, then warn once if it has
 * stalled for long. 0 or the comm's errno. */
static int no_progress(struct tcp_comm *c, struct tcp_req *r) {
  char why[600];
  if (liveness_peer_lost(c->base.live, why, sizeof(why)))
    return tcp_fail(c, ECONNRESET, TCP_F_NOTIFY, "%s", why);
  if (transport_idle_should_wait()) idle_wait(c);
  tcp_check_stall(c, r);
  run_stall_step(&c->watch, &c->base, tcp_wait_kind(c, r), r->still_ns, atomic_load(&r->pending));
  return 0;
}

static bool req_done(struct tcp_req *r) {
  return r->is_hdr_done && atomic_load_explicit(&r->pending, memory_order_acquire) == 0;
}

/* The peer's hang-up, as far as it concerns r: the send side fails on the
 * receiver's notice, or on its close while something is still in flight;
 * the receive side once r can no longer complete. 0 or the comm's errno. */
static int check_hangup(struct tcp_comm *c, struct tcp_req *r) {
  if (!c->is_send) return req_done(r) ? 0 : tcp_recv_check_closed(c, r);
  return tcp_check_notice(c, !req_done(r) || tcp_send_in_flight(c));
}

static ncclResult_t tcp_test(void *request, int *done, int *sizes) {
  struct tcp_req *r = request;
  struct tcp_comm *c = (struct tcp_comm *)r->base.comm;
  *done = 0;
  prof_sock_start(&r->base, c->ctrl_fd, !c->is_send, r->is_send ? r->size : r->cap);
  /* A receive whose bytes are all in the caller's buffer is done, whatever
   * happened to the connection after. */
  bool is_received = !c->is_send && req_done(r);
  if (atomic_load(&c->is_held) && !atomic_load(&c->is_failed) && !tcp_judge_held(c))
    return ncclSuccess; /* a socket failed: its notice may still be on its way */
  if (atomic_load(&c->is_failed) && !is_received) return transport_result(tcp_failed(c));
  transport_idle_note(c, NULL, 0); /* still driven by this thread */
  uint64_t before = c->moved;
  int err = 0;
  if (!is_received) err = c->is_send ? tcp_send_progress(c) : tcp_recv_progress(c);
  size_t m = 0;
  if (!err && c->nsocks && !is_received) err = tcp_caller_progress(c, &m);
  c->moved += m;
  if (!err) err = check_hangup(c, r);
  if (!err && !req_done(r)) {
    if (c->moved != before) transport_idle_progress();
    else err = no_progress(c, r);
  }
  /* A helper thread may have failed the comm meanwhile. */
  if (!c->is_send && req_done(r)) err = 0;
  else if (err || atomic_load(&c->is_failed)) return transport_result(tcp_failed(c));
  if (!req_done(r)) return ncclSuccess;
  transport_idle_progress();
  if (r->is_send) ev_count(C_BYTES_SENT, (int64_t)r->size);
  else ev_count(C_BYTES_RECV, (int64_t)r->size);
  if (sizes) sizes[0] = r->size > INT_MAX ? INT_MAX : (int)r->size;
  *done = 1;
  tcp_req_put(c, r);
  if (!c->is_send) tcp_stage_trim(c);
  return ncclSuccess;
}

static void close_fds(struct tcp_comm *c) {
  if (c->ctrl_fd >= 0) close(c->ctrl_fd);
  for (int i = 0; i < c->nsocks; i++)
    if (c->socks[i].fd >= 0) close(c->socks[i].fd);
  c->ctrl_fd = -1;
}

static void comm_free(struct tcp_comm *c) {
  pthread_mutex_destroy(&c->err_lock);
  pthread_mutex_destroy(&c->notice_lock);
  free(c->notice);
  free(c->notice_in);
  free(c->held_msg);
  free(c->abort_reason);
  c->base.obj = OBJ_DEAD;
  free(c->socks);
  for (int k = 0; k < c->nreq_chunks; k++) {
    for (int i = 0; i < TCP_REQ_CHUNK; i++) prof_req_done(&c->req_chunks[k][i].base);
    free(c->req_chunks[k]);
  }
  free(c->stage);
  free(c->settings_diff);
  free(c);
}

static ncclResult_t tcp_close(struct transport_comm *xc) {
  struct tcp_comm *c = (struct tcp_comm *)xc;
  tcp_pool_detach(c);
  tcp_pool_release(c);
  if (!c->is_send && !atomic_load(&c->is_failed)) tcp_close_notice(c);
  transport_idle_forget(c); /* this thread's wait set; another's entries expire */
  close_fds(c);
  comm_free(c);
  return ncclSuccess;
}

static ncclResult_t tcp_iflush(struct transport_comm *xc, int n, void **data, int *sizes,
                               void **mhandles, void **request) {
  (void)xc, (void)n, (void)data, (void)sizes, (void)mhandles;
  *request = NULL; /* host memory: nothing to flush */
  return ncclSuccess;
}

static const struct transport_comm_ops tcp_ops = {
  .name = "tcp",
  .reg_mr = tcp_reg_mr,
  .reg_mr_dmabuf = NULL,
  .dereg_mr = tcp_dereg_mr,
  .isend = tcp_isend,
  .irecv = tcp_irecv,
  .iflush = tcp_iflush,
  .test = tcp_test,
  .close = tcp_close,
};

/* Settings fixed at creation: the inline limit, stripes, the caller's
 * share, the stall warning; and (receive side, for the truncation
 * message) the settings in which the two hosts differ, kept only when
 * they do. 0 or ENOMEM. */
static int comm_settings(struct tcp_comm *c, const struct transport_setup *s) {
  /* Same host: NCCL's 128 KiB and 512 KiB steps are cheaper whole on the
   * control socket, header and payload in one sendmsg and one socket per
   * comm as NCCL's Socket has, than striped: 0.93-1.02x NCCL's Socket
   * striped, 1.28-1.85x inline at 128 KiB (bench/README.md, NCCL's shape). */
  int64_t im = transport_prefs()->socket_inline;
  size_t inline_auto = c->is_same_host ? (512u << 10) : (64u << 10);
  c->inline_max = !c->nsocks ? SIZE_MAX : im >= 0 ? (size_t)im : inline_auto;
  c->min_chunk = (size_t)transport_prefs()->min_chunk;
  /* Same host: the kernel copies through loopback, where one thread per
   * side moves multi-MiB stripes faster than a hand-off to helpers; over a
   * real link one flow per CPU is the ceiling, so helpers take stripes
   * from 1 MiB (bench/README.md, round 3). Each side decides for itself. */
  int64_t cm = transport_prefs()->caller_max;
  c->caller_max = cm >= 0 ? (size_t)cm : c->is_same_host ? (4u << 20) : (1u << 20);
  c->stall_ns = transport_prefs()->stall_warn_sec * 1000000000LL;
  int err = 0;
  if (!c->is_send) c->settings_diff = report_settings_diff(&s->mine, &s->peer_hello, &err);
  return err;
}

static void report_created(struct tcp_comm *c, const struct transport_setup *s) {
  ev_count(C_COMMS_TCP, 1);
  struct ev e;
  ev_begin(&e, "connection");
  ev_str(&e, "transport", "tcp");
  ev_str(&e, "direction", c->is_send ? "send" : "recv");
  ev_str(&e, "device", s->dev->name);
  ev_str(&e, "peer", s->peer.desc);
  ev_int(&e, "data_sockets", c->nsocks);
  ev_int(&e, "threads", c->nhelpers);
  ev_int(&e, "same_host", c->is_same_host);
  ev_end(&e);
  INFO(LOG_NET,
       "%s connection with %s on device %s: TCP, %d data sockets, %d helper threads "
       "(stripes up to %zu bytes moved by the caller%s)",
       c->is_send ? "send" : "receive", s->peer.desc, s->dev->name, c->nsocks, c->nhelpers,
       c->caller_max, c->is_same_host ? ", peer on this host" : "");
}

int tcp_comm_create(struct transport_setup *s, struct transport_comm **out) {
  struct tcp_comm *c = calloc(1, sizeof(*c));
  if (c) {
    c->is_send = s->is_send;
    c->nsocks = s->ndata;
    c->ctrl_fd = -1;
    c->is_same_host = sock_same_host(s->ctrl_fd);
    pthread_mutex_init(&c->err_lock, NULL);
    pthread_mutex_init(&c->notice_lock, NULL);
    c->socks = c->nsocks ? calloc((size_t)c->nsocks, sizeof(*c->socks)) : NULL;
  }
  if (!c || (c->nsocks && !c->socks) || comm_settings(c, s)) {
    WARN("connection with %s on device %s: out of memory", s->peer.desc, s->dev->name);
    close(s->ctrl_fd);
    for (int i = 0; i < s->ndata; i++) close(s->data_fds[i]);
    if (c) comm_free(c);
    return ENOMEM;
  }
  c->base.obj = s->is_send ? OBJ_SEND : OBJ_RECV;
  c->base.ops = &tcp_ops;
  c->base.dev = s->dev;
  c->base.peer = s->peer;
  c->base.max_recvs = 1;
  c->ctrl_fd = s->ctrl_fd;
  c->peer_mtu = (int)s->peer_hello.if_mtu;
  for (int i = 0; i < c->nsocks; i++) {
    c->socks[i] = (struct tcp_sock){.fd = s->data_fds[i], .index = i, .comm = c, .lowat = 1};
  }
  int err = tcp_pool_attach(c, s->nthreads);
  if (err) {
    close_fds(c);
    comm_free(c);
    return err;
  }
  report_created(c, s);
  *out = &c->base;
  return 0;
}
