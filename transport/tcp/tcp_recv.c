/* SPDX-License-Identifier: Apache-2.0 */
/* irecv and the control-socket receive side: one recv brings whatever has
 * arrived into a staging buffer, whose headers are matched to posted
 * receives in posting order (NCCL's rule) and checked (sequence, size
 * against capacity); a payload is copied in from the staging buffer, read
 * straight into the receive's buffer when it is large, or handed to the
 * data sockets as stripes. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "transport/idle.h"
#include "transport/report.h"
#include "transport/sock.h"
#include "transport/tcp/tcp.h"

/* One progress call's view of the socket: once a recv came back short the
 * socket is empty, and another recv in the same call would only cost a
 * syscall to learn EAGAIN. */
struct rx {
  bool is_drained;
};

static int ctrl_failed(struct tcp_comm *c, int err) {
  return tcp_fail(c, ECONNRESET, TCP_F_SOCKET,
                  "receiving on the control socket (message %u): %s; the peer process died, "
                  "closed the connection or the network dropped it",
                  c->next_seq, strerror(err));
}

/* Bytes from the control socket into dst: the staged ones first, then the
 * socket (straight into dst for a large rest, else through the staging
 * buffer so one recv can bring several messages). *got: bytes copied (may
 * be 0). Returns 0, or the errno that failed the comm (logged). */
static int ctrl_bytes(struct tcp_comm *c, struct rx *x, uint8_t *dst, size_t want, bool direct_ok,
                      size_t *got) {
  *got = 0;
  if (c->stage_off < c->stage_len) {
    size_t have = c->stage_len - c->stage_off;
    *got = have < want ? have : want;
    memcpy(dst, c->stage + c->stage_off, *got);
    c->stage_off += *got;
    if (*got == want) return 0;
  }
  if (x->is_drained) return 0;
  size_t n = 0, ask;
  int err;
  if (direct_ok && want - *got >= 4096) {
    ask = want - *got;
    err = sock_recv(c->ctrl_fd, dst + *got, ask, &n);
    *got += n;
  } else {
    if (!c->stage && !(c->stage = malloc(TCP_STAGE)))
      return tcp_fail(c, ENOMEM, 0, "out of memory for the control socket's staging buffer");
    ask = TCP_STAGE;
    err = sock_recv(c->ctrl_fd, c->stage, ask, &n);
    c->stage_off = 0;
    c->stage_len = n;
    size_t more = n < want - *got ? n : want - *got;
    memcpy(dst + *got, c->stage, more);
    c->stage_off = more;
    *got += more;
  }
  c->moved += n;
  x->is_drained = err == EAGAIN || n < ask;
  if (err == EPIPE) { /* the sender closed: what arrived before still completes */
    c->is_peer_closed = true;
    return 0;
  }
  return !err || err == EAGAIN ? 0 : ctrl_failed(c, err);
}

int tcp_recv_check_closed(struct tcp_comm *c, const struct tcp_req *r) {
  if (!c->is_peer_closed || r->is_hdr_done || c->stage_off < c->stage_len) return 0;
  return tcp_fail(c, ECONNRESET, TCP_F_SOCKET,
                  "receiving on the control socket (message %u): the peer closed the connection "
                  "before %s arrived; the peer process died, closed the connection or the network "
                  "dropped it",
                  r->seq, c->cur == r ? "all of the message" : "its header");
}

void tcp_stage_trim(struct tcp_comm *c) {
  if (c->stage && c->stage_off == c->stage_len && !c->posted_head && !c->cur) {
    free(c->stage);
    c->stage = NULL;
    c->stage_off = c->stage_len = 0;
  }
}

static int truncated(struct tcp_comm *c, const struct msg_hdr *h, struct tcp_req *r) {
  char cause[1600];
  report_size_mismatch(c->settings_diff, c->base.peer.host, cause, sizeof(cause));
  return tcp_fail(c, EMSGSIZE, TCP_F_NOTIFY,
                  "message %u from %s is %llu bytes but the posted receive holds %zu bytes: %s",
                  h->seq, c->base.peer.desc, (unsigned long long)h->size, r->cap, cause);
}

static int start_message(struct tcp_comm *c, const struct msg_hdr *h) {
  struct tcp_req *r = c->posted_head;
  c->posted_head = r->next;
  if (!c->posted_head) c->posted_tail = NULL;
  r->next = NULL;
  c->next_seq++;
  if (h->size > r->cap) return truncated(c, h, r);
  r->size = (size_t)h->size;
  r->seq = h->seq;
  if (h->tag != r->tag && !c->has_warned_tag) {
    c->has_warned_tag = true;
    WARN("receive connection with %s: message %u carries tag %d but the posted receive expects "
         "tag %d; the data is delivered in posting order, but the ranks' send/receive calls may "
         "not pair up",
         c->base.peer.desc, h->seq, h->tag, r->tag);
  }
  if (h->flags & MSG_F_INLINE) {
    r->inline_off = 0;
    if (r->size == 0) r->is_hdr_done = true;
    else c->cur = r;
    return 0;
  }
  int ns = tcp_nstripes(r->size, h->chunk);
  if (c->nsocks == 0 || ns > c->nsocks) {
    return tcp_fail(c, EPROTO, TCP_F_NOTIFY,
                    "message %u: the peer striped %llu bytes into %d pieces of %u bytes for %d "
                    "data sockets; the byte stream is corrupt or the peer is not a compatible "
                    "libnccl-net-diag",
                    h->seq, (unsigned long long)h->size, ns, h->chunk, c->nsocks);
  }
  atomic_store(&r->pending, (long long)r->size);
  r->is_hdr_done = true; /* before the push: a stripe moved at once may complete it */
  tcp_push_message(c, r->data, r->size, h->chunk, h->seq, r);
  return 0;
}

/* The sender ended the connection and said why; its reason follows the
 * header and is read as it arrives, by this and later calls (nothing
 * waits): the comm fails once all of it came, the sender closed, or it
 * stood still for ABORT_WAIT_NS. */
#define ABORT_WAIT_NS 300000000LL
static int read_abort(struct tcp_comm *c, struct rx *x) {
  while (c->abort_got < c->abort_len && !c->is_peer_closed) {
    size_t n;
    int err = ctrl_bytes(c, x, (uint8_t *)c->abort_reason + c->abort_got,
                         c->abort_len - c->abort_got, false, &n);
    if (err) return err;
    c->abort_got += n;
    if (!n) break;
  }
  if (c->abort_got < c->abort_len && !c->is_peer_closed &&
      now_ns() - c->abort_since < ABORT_WAIT_NS)
    return 0;
  char reason[MSG_ABORT_MAX + 1];
  log_clean(reason, sizeof(reason), c->abort_reason, c->abort_got);
  return tcp_fail(c, ECONNRESET, 0, "the sending side ended the connection: %s",
                  c->abort_got ? reason : "(no reason received)");
}

static int peer_aborted(struct tcp_comm *c, struct rx *x, const struct msg_hdr *h) {
  c->abort_len = h->size < MSG_ABORT_MAX ? (size_t)h->size : MSG_ABORT_MAX;
  c->abort_got = 0;
  c->abort_since = now_ns();
  c->abort_reason = malloc(c->abort_len + 1);
  if (!c->abort_reason) return tcp_fail(c, ECONNRESET, 0, "the sending side ended the connection");
  return read_abort(c, x);
}

/* A whole header is in hdr_buf: check it and start its message. */
static int header(struct tcp_comm *c, struct rx *x) {
  struct msg_hdr h;
  char why[200] = "";
  int err = msg_hdr_decode(c->hdr_buf, &h, why, sizeof(why));
  if (!err && (h.flags & MSG_F_ABORT)) return peer_aborted(c, x, &h);
  if (!err && h.seq != c->next_seq) {
    snprintf(why, sizeof(why), "expected message %u, the header says %u", c->next_seq, h.seq);
    err = EPROTO;
  }
  if (err) {
    return tcp_fail(c, EPROTO, TCP_F_NOTIFY,
                    "corrupt message header on the control socket: %s. The byte stream is out "
                    "of step (another process writing to this socket, or memory corruption); "
                    "the connection cannot continue",
                    why);
  }
  return start_message(c, &h);
}

/* staged_only: match what is staged, without reading the socket. */
static int recv_progress(struct tcp_comm *c, bool staged_only) {
  struct rx x = {staged_only};
  for (;;) {
    if (atomic_load(&c->is_failed)) return c->fail_err;
    if (c->abort_reason) return read_abort(c, &x);
    if (c->cur) {
      struct tcp_req *r = c->cur;
      size_t n;
      int err = ctrl_bytes(c, &x, r->data + r->inline_off, r->size - r->inline_off, true, &n);
      if (err) return err;
      r->inline_off += n;
      if (r->inline_off < r->size) return 0;
      r->is_hdr_done = true;
      c->cur = NULL;
    }
    if (!c->posted_head) return 0;
    size_t n;
    int err = ctrl_bytes(c, &x, c->hdr_buf + c->hdr_got, MSG_HDR_LEN - c->hdr_got, false, &n);
    if (err) return err;
    c->hdr_got += n;
    if (c->hdr_got < MSG_HDR_LEN) return 0;
    c->hdr_got = 0;
    if ((err = header(c, &x))) return err;
  }
}

int tcp_recv_progress(struct tcp_comm *c) { return recv_progress(c, false); }

ncclResult_t tcp_irecv(struct transport_comm *xc, int n, void **data, size_t *sizes, int *tags,
                       void **mhandles, void **request) {
  struct tcp_comm *c = (struct tcp_comm *)xc;
  *request = NULL;
  if (atomic_load(&c->is_failed)) return transport_result(tcp_failed(c));
  if (n != 1) {
    WARN("irecv from %s with %d grouped receives: this TCP device reports maxRecvs=1 (an API "
         "misuse)",
         xc->peer.desc, n);
    return ncclInternalError;
  }
  char why[200];
  if (!tcp_mr_covers(mhandles ? mhandles[0] : NULL, data[0], sizes[0], why, sizeof(why))) {
    WARN("irecv of %zu bytes from %s: %s", sizes[0], xc->peer.desc, why);
    return ncclInternalError;
  }
  struct tcp_req *r = tcp_req_get(c);
  if (!r) {
    if (c->is_req_oom)
      WARN("irecv from %s: out of memory for the connection's requests", xc->peer.desc);
    else
      WARN("irecv from %s: more than %d requests in flight on one connection (NCCL never posts "
           "that many: an API misuse)",
           xc->peer.desc, TCP_MAX_REQS);
    return ncclInternalError;
  }
  r->is_send = false;
  r->data = data[0];
  r->cap = sizes[0];
  r->tag = tags ? tags[0] : 0;
  r->seq = c->next_post_seq++; /* the message it will take, for the stall warning */
  if (c->posted_tail) c->posted_tail->next = r;
  else c->posted_head = r;
  c->posted_tail = r;
  transport_idle_note(c, &(struct pollfd){c->ctrl_fd, POLLIN, 0}, 1);
  *request = r;
  /* Headers already staged are matched now; the socket waits for test(). */
  if (c->stage_off < c->stage_len && recv_progress(c, true)) return transport_result(tcp_failed(c));
  return ncclSuccess;
}
