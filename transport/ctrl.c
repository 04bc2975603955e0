/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/ctrl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/sock.h"
#include "transport/wire.h"

#define CTRL_SEND_NS 2000000000LL /* the peer reads nothing for this long: it is stuck */
#define CTRL_PART_NS 1000000000LL /* a message cut short for this long: the peer is stuck */

void ctrl_init(struct ctrl_chan *ch, int fd) {
  memset(ch, 0, sizeof(*ch));
  ch->fd = fd;
  ctrl_in_reset(&ch->in);
}

enum ctrl_read ctrl_read(struct ctrl_chan *ch) {
  struct ctrl_in *in = &ch->in;
  if (in->msg.body) return CTRL_R_MSG; /* held: its row was busy */
  for (;;) {
    size_t n;
    int err = sock_recv(ch->fd, ctrl_in_space(in), ctrl_in_need(in), &n);
    if (err == EAGAIN) return in->got ? CTRL_R_PART : CTRL_R_NONE;
    if (err) {
      ch->closed_err = err == EPIPE ? 0 : err;
      return CTRL_R_CLOSED;
    }
    enum ctrl_read st = ctrl_in_add(in, n);
    if (st != CTRL_R_PART || ctrl_in_need(in) == 0) return st;
  }
}

void ctrl_done(struct ctrl_chan *ch) {
  ctrl_in_reset(&ch->in);
  ch->in_since = 0;
}

int ctrl_in_stalled(struct ctrl_chan *ch, int64_t now) {
  if (!ch->in.got || ch->in.msg.body) {
    ch->in_since = 0;
    return 0;
  }
  if (!ch->in_since) ch->in_since = now;
  return now - ch->in_since >= CTRL_PART_NS ? ETIMEDOUT : 0;
}

int ctrl_flush(struct ctrl_chan *ch) {
  while (ch->out_off < ch->out_len) {
    size_t n;
    int err = sock_send(ch->fd, ch->out + ch->out_off, ch->out_len - ch->out_off, &n);
    if (err && err != EAGAIN) return err;
    if (err) {
      int64_t now = now_ns();
      if (!ch->out_since) ch->out_since = now;
      return now - ch->out_since > CTRL_SEND_NS ? ETIMEDOUT : 0;
    }
    ch->out_off += n;
  }
  ch->out_len = ch->out_off = 0;
  ch->out_since = 0;
  if (ch->is_ending && !ch->is_shut) {
    ch->is_shut = true;
    shutdown(ch->fd, SHUT_WR); /* the notice was the last word */
  }
  return 0;
}

static int queue(struct ctrl_chan *ch, uint8_t flags, uint32_t seq, const void *body, size_t len) {
  if (ch->out_off == ch->out_len) ch->out_len = ch->out_off = 0;
  if (MSG_HDR_LEN + len > sizeof(ch->out) - ch->out_len) return ENOBUFS;
  struct msg_hdr h = {flags, seq, 0, 0, len};
  msg_hdr_encode(&h, ch->out + ch->out_len);
  memcpy(ch->out + ch->out_len + MSG_HDR_LEN, body, len);
  ch->out_len += MSG_HDR_LEN + len;
  return 0;
}

int ctrl_send(struct ctrl_chan *ch, uint8_t flags, uint32_t seq, const uint8_t *body, size_t len) {
  if (ch->is_ending) return EPIPE;
  if (ch->out_off == ch->out_len) ch->out_len = ch->out_off = 0;
  /* Room for an abort notice stays free: it can always follow. */
  if (ch->out_len + 2 * MSG_HDR_LEN + len + MSG_ABORT_MAX > sizeof(ch->out)) return ENOBUFS;
  int err = queue(ch, flags, seq, body, len);
  return err ? err : ctrl_flush(ch);
}

void ctrl_send_abort(struct ctrl_chan *ch, uint32_t seq, const char *reason) {
  if (ch->is_ending) return;
  size_t len = strnlen(reason, MSG_ABORT_MAX);
  /* After what is queued (a message cut in its middle would garble the
   * notice); ctrl_send keeps room for it. */
  (void)queue(ch, MSG_F_ABORT, seq, reason, len);
  ch->is_ending = true;
  (void)ctrl_flush(ch); /* best effort: the peer may be gone; close flushes again */
}

enum ctrl_read ctrl_step(struct ctrl_chan *ch, const ctrl_handler rows[CTRL_KINDS], void *owner) {
  enum ctrl_read st = ctrl_read(ch);
  if (st != CTRL_R_MSG) return st;
  if (!rows[ch->in.msg.kind]) {
    snprintf(ch->in.why, sizeof(ch->in.why), "a message of a kind this side does not take (%d)",
             (int)ch->in.msg.kind);
    return CTRL_R_BAD;
  }
  if (!rows[ch->in.msg.kind](owner, &ch->in.msg)) return CTRL_R_PART; /* held for later */
  ctrl_done(ch);
  return CTRL_R_MSG;
}
