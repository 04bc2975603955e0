/* SPDX-License-Identifier: Apache-2.0 */
/* isend and the control-socket send queue. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "common/log.h"
#include "transport/sock.h"
#include "transport/tcp/tcp.h"

#define MAX_IOV 64

/* Writes as much of the queue as the socket takes, in one sendmsg for many
 * small messages. */
int tcp_send_progress(struct tcp_comm *c) {
  while (c->noutgoing) {
    struct iovec iov[MAX_IOV];
    int niov = 0;
    for (int i = 0; i < c->noutgoing && niov + 2 <= MAX_IOV; i++) {
      struct tcp_out *o = &c->outgoing[(c->outgoing_head + i) % TCP_MAX_REQS];
      size_t off = o->off;
      if (off < MSG_HDR_LEN) {
        iov[niov].iov_base = o->hdr + off;
        iov[niov++].iov_len = MSG_HDR_LEN - off;
        off = MSG_HDR_LEN;
      }
      if (o->total > MSG_HDR_LEN) {
        iov[niov].iov_base = o->req->data + (off - MSG_HDR_LEN);
        iov[niov++].iov_len = o->total - off;
      }
    }
    size_t n;
    int err = sock_sendv(c->ctrl_fd, iov, niov, &n);
    if (err == EAGAIN) return 0;
    if (err) {
      struct tcp_out *o = &c->outgoing[c->outgoing_head];
      return tcp_fail(c, ECONNRESET, TCP_F_SOCKET,
                      "sending message %u (%zu bytes) on the control socket: %s; the peer process "
                      "died, closed the connection or the network dropped it",
                      o->req->seq, o->req->size,
                      err == EPIPE ? "the peer closed the connection" : strerror(err));
    }
    c->moved += n;
    size_t left = n;
    while (left && c->noutgoing) {
      struct tcp_out *o = &c->outgoing[c->outgoing_head];
      size_t take = o->total - o->off < left ? o->total - o->off : left;
      o->off += take;
      left -= take;
      if (o->off == o->total) {
        o->req->is_hdr_done = true;
        c->outgoing_head = (c->outgoing_head + 1) % TCP_MAX_REQS;
        c->noutgoing--;
      }
    }
  }
  return 0;
}

ncclResult_t tcp_isend(struct transport_comm *xc, void *data, size_t size, int tag, void *mh,
                       void **request) {
  struct tcp_comm *c = (struct tcp_comm *)xc;
  *request = NULL;
  if (atomic_load(&c->is_failed)) return transport_result(tcp_failed(c));
  char why[200];
  if (!tcp_mr_covers(mh, data, size, why, sizeof(why))) {
    WARN("isend of %zu bytes to %s: %s", size, xc->peer.desc, why);
    return ncclInternalError;
  }
  struct tcp_req *r = tcp_req_get(c);
  if (!r) {
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
  int is_inline = size <= c->inline_max;
  struct msg_hdr h = {is_inline ? MSG_F_INLINE : 0, r->seq, tag, 0, size};
  size_t chunk = 0;
  if (!is_inline) {
    chunk = tcp_chunk_for(c, size);
    h.chunk = (uint32_t)chunk;
    atomic_store(&r->pending, (long long)size);
  }
  struct tcp_out *o = &c->outgoing[(c->outgoing_head + c->noutgoing) % TCP_MAX_REQS];
  msg_hdr_encode(&h, o->hdr);
  o->req = r;
  o->off = 0;
  o->total = MSG_HDR_LEN + (is_inline ? size : 0);
  c->noutgoing++;
  if (!is_inline) tcp_push_message(c, data, size, chunk, r->seq, r);
  *request = r;
  return tcp_send_progress(c) ? transport_result(tcp_failed(c)) : ncclSuccess;
}
