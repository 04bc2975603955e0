/* SPDX-License-Identifier: Apache-2.0 */
/* The control connection of an RDMA connection after setup carries only
 * whole framed messages (a fail-over message, an abort notice), and NCCL's
 * proxy thread, which every connection of the process shares, must never
 * wait for one. So a message is read only once all of it is on the
 * socket (looked at with MSG_PEEK until then), and a message to send goes
 * into a queue that later calls flush when the socket is full. A message
 * that stays cut short, or a queue that does not drain, fails the
 * connection after the time the blocking reads and writes used to allow. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "transport/ib/ib_comm.h"
#include "transport/sock.h"
#include "transport/wire.h"

#define CTRL_SEND_NS 2000000000LL /* the peer reads nothing for this long: it is stuck */
#define CTRL_PART_NS 1000000000LL /* a message cut short for this long: the peer is stuck */

const char *ib_ctrl_stage_name(enum ib_ctrl_stage stage) {
  switch (stage) {
  case IB_CTRL_QUIET: return "nothing under way";
  case IB_CTRL_SENDING: return "a message to the peer still going out";
  case IB_CTRL_PARTIAL: return "part of a message from the peer read";
  }
  return "unknown";
}

enum ib_ctrl_kind ib_ctrl_peek(struct ib_comm *c, uint8_t *buf, size_t cap, size_t *len) {
  *len = 0;
  ssize_t n = recv(c->ctrl_fd, buf, cap, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
    return IB_CTRL_CLOSED;
  if (n < 0) return IB_CTRL_NONE;
  *len = (size_t)n;
  c->ctrl.in_got = (size_t)n;
  c->ctrl.in_want = MSG_HDR_LEN;
  if (n < MSG_HDR_LEN) return IB_CTRL_CUT;
  struct rbuf r = {buf, MSG_HDR_LEN, 0, false};
  uint16_t mark = r_u16(&r);
  uint8_t flags = r_u8(&r), pad = r_u8(&r);
  r_take(&r, 12); /* sequence, tag, stripe: unused here */
  uint64_t size = r_u64(&r);
  enum ib_ctrl_kind kind = IB_CTRL_OTHER;
  if (mark == MSG_MARK && !pad && flags == MSG_F_FAILOVER && size <= MSG_FAILOVER_MAX)
    kind = IB_CTRL_FAILOVER;
  else if (mark == MSG_MARK && !pad && (flags & MSG_F_ABORT) && size <= MSG_ABORT_MAX)
    kind = IB_CTRL_ABORT;
  if (kind == IB_CTRL_OTHER) return kind;
  c->ctrl.in_want = MSG_HDR_LEN + (size_t)size;
  if (c->ctrl.in_want > cap) return IB_CTRL_OTHER;
  if ((size_t)n < c->ctrl.in_want) return IB_CTRL_CUT;
  *len = c->ctrl.in_want;
  return kind;
}

int ib_ctrl_take(struct ib_comm *c, uint8_t *buf, size_t len) {
  size_t got;
  c->ctrl.in_since = 0;
  c->ctrl.in_got = c->ctrl.in_want = 0;
  if (c->ctrl.stage == IB_CTRL_PARTIAL)
    c->ctrl.stage = c->ctrl.out_len ? IB_CTRL_SENDING : IB_CTRL_QUIET;
  /* The bytes are queued on the socket already: one read takes them all. */
  int err = sock_recv(c->ctrl_fd, buf, len, &got);
  return err ? err : got == len ? 0 : EPROTO;
}

int ib_ctrl_cut(struct ib_comm *c, int64_t now) {
  if (c->is_failed) return c->fail_err;
  if (!c->ctrl.in_since) {
    c->ctrl.in_since = now;
    c->ctrl.stage = IB_CTRL_PARTIAL;
    return 0;
  }
  if (now - c->ctrl.in_since < CTRL_PART_NS) return 0;
  return ib_fail(c, EPROTO, true,
                 "a message from the peer on the control connection stopped after %zu of %zu "
                 "bytes for 1 s: its process is stuck or the connection between the hosts stalls",
                 c->ctrl.in_got, c->ctrl.in_want);
}

int ib_ctrl_flush(struct ib_comm *c) {
  struct ib_ctrl_io *q = &c->ctrl;
  while (q->out_off < q->out_len) {
    size_t n;
    int err = sock_send(c->ctrl_fd, q->out + q->out_off, q->out_len - q->out_off, &n);
    if (err && err != EAGAIN) return err;
    if (err) {
      int64_t now = now_ns();
      if (!q->out_since) q->out_since = now;
      q->stage = IB_CTRL_SENDING;
      return now - q->out_since > CTRL_SEND_NS ? ETIMEDOUT : 0;
    }
    q->out_off += n;
  }
  q->out_len = q->out_off = 0;
  q->out_since = 0;
  if (q->stage == IB_CTRL_SENDING) q->stage = q->in_since ? IB_CTRL_PARTIAL : IB_CTRL_QUIET;
  return 0;
}

int ib_ctrl_send(struct ib_comm *c, uint8_t flags, const uint8_t *body, size_t len) {
  struct ib_ctrl_io *q = &c->ctrl;
  if (q->out_off == q->out_len) q->out_len = q->out_off = 0;
  if (MSG_HDR_LEN + len > sizeof(q->out) - q->out_len) return ENOBUFS;
  struct msg_hdr h = {flags, 0, 0, 0, len};
  msg_hdr_encode(&h, q->out + q->out_len);
  memcpy(q->out + q->out_len + MSG_HDR_LEN, body, len);
  q->out_len += MSG_HDR_LEN + len;
  return ib_ctrl_flush(c);
}
