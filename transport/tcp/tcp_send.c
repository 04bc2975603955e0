/* SPDX-License-Identifier: Apache-2.0 */
/* isend and the control-socket send queue. isend only queues: the next
 * test() (NCCL's proxy tests right after it posts) writes every queued
 * header and inline payload in one sendmsg, so a window of small messages
 * costs one syscall, not one each. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "common/log.h"
#include "transport/sock.h"
#include "transport/tcp/tcp.h"

#define MAX_IOV 64

/* The queue from its head as an iovec, at most MAX_IOV entries. */
static int gather(struct tcp_comm *c, struct iovec *iov) {
  int niov = 0;
  for (struct tcp_req *r = c->out_head; r && niov + 2 <= MAX_IOV; r = r->next) {
    size_t off = r->out_off;
    if (off < MSG_HDR_LEN) {
      iov[niov++] = (struct iovec){r->hdr + off, MSG_HDR_LEN - off};
      off = MSG_HDR_LEN;
    }
    if (r->out_total > off)
      iov[niov++] = (struct iovec){r->data + (off - MSG_HDR_LEN), r->out_total - off};
  }
  return niov;
}

/* n bytes went out: the messages they finish leave the queue. */
static void advance(struct tcp_comm *c, size_t n) {
  while (n && c->out_head) {
    struct tcp_req *r = c->out_head;
    size_t take = r->out_total - r->out_off < n ? r->out_total - r->out_off : n;
    r->out_off += take;
    n -= take;
    if (r->out_off < r->out_total) break;
    r->is_hdr_done = true;
    c->out_head = r->next;
    if (!c->out_head) c->out_tail = NULL;
  }
}

int tcp_send_progress(struct tcp_comm *c) {
  while (c->out_head) {
    struct iovec iov[MAX_IOV];
    int niov = gather(c, iov);
    size_t want = 0, n;
    for (int i = 0; i < niov; i++) want += iov[i].iov_len;
    int err = sock_sendv(c->ctrl_fd, iov, niov, &n);
    if (err == EAGAIN) return 0;
    if (err) {
      struct tcp_req *r = c->out_head;
      return tcp_fail(c, ECONNRESET, TCP_F_SOCKET,
                      "sending message %u (%zu bytes) on the control socket: %s; the peer process "
                      "died, closed the connection or the network dropped it",
                      r->seq, r->size,
                      err == EPIPE ? "the peer closed the connection" : strerror(err));
    }
    c->moved += n;
    advance(c, n);
    if (n < want) return 0; /* the socket is full: the next call would only see EAGAIN */
  }
  return 0;
}

ncclResult_t tcp_isend(struct transport_comm *xc, void *data, size_t size, int tag, void *mh,
                       void **request) {
  struct tcp_comm *c = (struct tcp_comm *)xc;
  *request = NULL;
  if (atomic_load(&c->is_held) && !atomic_load(&c->is_failed) && !tcp_judge_held(c))
    return ncclSuccess; /* no request: NCCL asks again, by then it is judged */
  if (atomic_load(&c->is_failed) || tcp_check_notice(c, true))
    return transport_result(tcp_failed(c));
  char why[200];
  if (!tcp_mr_covers(mh, data, size, why, sizeof(why))) {
    WARN("isend of %zu bytes to %s: %s", size, xc->peer.desc, why);
    return ncclInternalError;
  }
  struct tcp_req *r = tcp_req_get(c);
  if (!r) {
    if (c->is_req_oom)
      WARN("isend to %s: out of memory for the connection's requests", xc->peer.desc);
    else
      WARN("isend to %s: more than %d requests in flight on one connection (NCCL never posts that "
           "many: an API misuse)",
           xc->peer.desc, TCP_MAX_REQS);
    return ncclInternalError;
  }
  r->is_send = true;
  r->data = data;
  r->size = size;
  r->tag = tag;
  r->seq = c->next_seq++;
  bool is_inline = size <= c->inline_max;
  struct msg_hdr h = {is_inline ? MSG_F_INLINE : 0, r->seq, tag, 0, size};
  size_t chunk = 0;
  if (!is_inline) {
    chunk = tcp_chunk_for(c, size);
    h.chunk = (uint32_t)chunk;
    atomic_store(&r->pending, (long long)size);
  }
  msg_hdr_encode(&h, r->hdr);
  r->out_total = MSG_HDR_LEN + (is_inline ? size : 0);
  if (c->out_tail) c->out_tail->next = r;
  else c->out_head = r;
  c->out_tail = r;
  if (!is_inline) tcp_push_message(c, data, size, chunk, r->seq, r);
  *request = r;
  return ncclSuccess;
}
