/* SPDX-License-Identifier: Apache-2.0 */
/* When one side gives up on a connection it tells the other why (an abort
 * frame on the control socket) and resets its data sockets, so the peer
 * fails at once with the real cause instead of blocking in a send whose
 * bytes will never be read, or blaming a dead process.
 *
 * A sender's isend completes once the kernel has its bytes, so a receiver
 * that refuses a message (larger than its receive) or closes with data in
 * flight would leave the sender believing all went well. The receiver
 * therefore says so on the control socket, where it never sends anything
 * else, and the sender looks there: at once when a request makes no
 * progress, else at most every millisecond from isend and test (one
 * non-blocking peek), so its pending request, or at latest its next call
 * on the connection a millisecond after the notice arrived, fails with the
 * receiver's words. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "transport/abort.h"
#include "transport/ctrl.h"
#include "transport/sock.h"
#include "transport/tcp/tcp.h"

#define NOTICE_EVERY_NS 1000000LL
/* The control channel's bound for a message cut short (ctrl.h). */
#define NOTICE_PART_NS 1000000000LL
/* A send-side socket failure waits this long, in later calls, for the
 * receiver's notice that explains it. */
#define HOLD_NS 300000000LL

/* Replaces a socket with /dev/null under the same descriptor number (so
 * nothing polling it sees a recycled descriptor), and closes the socket
 * with a reset. */
static void reset_socket(int fd, int devnull) {
  struct linger lg = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  if (devnull >= 0) dup2(devnull, fd);
}

void tcp_abort_peer(struct tcp_comm *c, const char *reason) {
  /* A frame cannot be slipped into the middle of one already going out. */
  bool is_mid_frame = c->is_send && c->out_head && c->out_head->out_off > 0;
  if (is_mid_frame) shutdown(c->ctrl_fd, SHUT_WR);
  else transport_send_abort(c->ctrl_fd, c->next_seq, reason);
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int i = 0; i < c->nsocks; i++) reset_socket(c->socks[i].fd, devnull);
  if (devnull >= 0) close(devnull);
}

/* Under notice_lock: one non-blocking read into the notice decoder, which
 * is allocated at the first byte (thousands of comms keep a pointer). */
static int notice_recv(struct tcp_comm *c, size_t *n) {
  if (c->notice_in)
    return sock_recv(c->ctrl_fd, ctrl_in_space(c->notice_in), ctrl_in_need(c->notice_in), n);
  uint8_t first[MSG_HDR_LEN];
  int err = sock_recv(c->ctrl_fd, first, sizeof(first), n);
  if (err) return err;
  if (!(c->notice_in = malloc(sizeof(*c->notice_in)))) return ENOMEM;
  ctrl_in_reset(c->notice_in);
  memcpy(ctrl_in_space(c->notice_in), first, *n);
  return 0;
}

/* Under notice_lock: what the control socket has, read without waiting.
 * The receiver sends nothing but its notice. */
static enum ctrl_read notice_read(struct tcp_comm *c) {
  if (c->notice) return CTRL_R_MSG;
  if (c->notice_st == CTRL_R_CLOSED || c->notice_st == CTRL_R_BAD) return c->notice_st;
  for (;;) {
    size_t n = 0;
    int err = notice_recv(c, &n);
    if (err == EAGAIN)
      return c->notice_st = c->notice_in && c->notice_in->got ? CTRL_R_PART : CTRL_R_NONE;
    if (err) {
      c->notice_err = err == EPIPE ? 0 : err;
      return c->notice_st = CTRL_R_CLOSED;
    }
    enum ctrl_read st = ctrl_in_add(c->notice_in, n);
    if (st == CTRL_R_PART) continue;
    if (st != CTRL_R_MSG || c->notice_in->msg.kind != CTRL_ABORT) return c->notice_st = CTRL_R_BAD;
    /* The peer's words go into our WARN: a newline in them must not forge
     * a line, nor an escape code reach a terminal. */
    char buf[MSG_ABORT_MAX + 1];
    log_clean(buf, sizeof(buf), (const char *)c->notice_in->msg.body, c->notice_in->msg.len);
    c->notice = strdup(buf);
    return c->notice ? CTRL_R_MSG : (c->notice_st = CTRL_R_BAD);
  }
}

/* No notice can come any more: the receiver closed, or sent other bytes. */
static bool notice_is_final(struct tcp_comm *c) {
  pthread_mutex_lock(&c->notice_lock);
  bool is_final = c->notice_st == CTRL_R_CLOSED || c->notice_st == CTRL_R_BAD;
  pthread_mutex_unlock(&c->notice_lock);
  return is_final;
}

bool tcp_peer_notice(struct tcp_comm *c, char *reason, size_t cap) {
  pthread_mutex_lock(&c->notice_lock);
  bool has_notice = notice_read(c) == CTRL_R_MSG;
  if (has_notice) snprintf(reason, cap, "%s", c->notice);
  pthread_mutex_unlock(&c->notice_lock);
  return has_notice;
}

bool tcp_hold(struct tcp_comm *c, char *msg, size_t cap, int *err) {
  int64_t now = now_ns();
  if (!atomic_load(&c->is_held)) {
    c->held_msg = strdup(msg);
    if (!c->held_msg) return false; /* no memory to hold it: published as it is */
    c->held_err = *err;
    c->held_since = now;
    atomic_store(&c->is_held, true);
    return true;
  }
  /* The first socket failure is the one told, whichever thread ends it. */
  if (now - c->held_since < HOLD_NS && !notice_is_final(c)) return true;
  snprintf(msg, cap, "%s", c->held_msg);
  *err = c->held_err;
  return false;
}

int tcp_judge_held(struct tcp_comm *c) {
  char reason[MSG_ABORT_MAX + 1];
  if (!tcp_peer_notice(c, reason, sizeof(reason)) && now_ns() - c->held_since < HOLD_NS &&
      !notice_is_final(c))
    return 0;
  /* The notice when it came (tcp_fail looks first), else the held failure. */
  return tcp_fail(c, ECONNRESET, TCP_F_SOCKET, "%s", c->held_msg);
}

bool tcp_send_in_flight(struct tcp_comm *c) {
  if (c->out_head) return true;
  for (int i = 0; i < c->nsocks; i++)
    if (tcp_head_len(&c->socks[i])) return true;
  return false;
}

int tcp_check_notice(struct tcp_comm *c, bool is_close_fatal) {
  int64_t now = now_ns();
  if (now < c->next_notice_ns) return 0;
  c->next_notice_ns = now + NOTICE_EVERY_NS;
  char reason[MSG_ABORT_MAX + 1];
  if (tcp_peer_notice(c, reason, sizeof(reason)))
    return tcp_fail(c, ECONNRESET, 0, "the receiving side ended the connection: %s", reason);
  pthread_mutex_lock(&c->notice_lock);
  enum ctrl_read st = c->notice_st;
  int err = c->notice_err;
  pthread_mutex_unlock(&c->notice_lock);
  if (st == CTRL_R_NONE) return 0;
  if (st == CTRL_R_PART) {
    if (!c->notice_since) c->notice_since = now;
    if (now - c->notice_since < NOTICE_PART_NS) return 0;
    return tcp_fail(c, ECONNRESET, 0,
                    "the receiving side began a notice on the control socket and sent no more "
                    "of it for %lld ms: the peer process is stuck, or the network stopped "
                    "carrying its bytes",
                    NOTICE_PART_NS / 1000000);
  }
  /* The end of the stream and no notice: the receiver closed after taking
   * all it was sent (with anything unread it tells us, or its kernel
   * resets the connection). */
  if (st == CTRL_R_CLOSED && !err && !is_close_fatal) return 0;
  return tcp_fail(c, ECONNRESET, 0,
                  "the receiving side closed the connection without a notice%s%s: the peer "
                  "process died, or closed its receive",
                  st == CTRL_R_BAD ? " (it sent bytes that are not one)"
                  : err            ? ", "
                                   : "",
                  err ? strerror(err) : "");
}

/* Bytes that arrived and that no receive took. */
static int unread(int fd) {
  int n = 0;
  return ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

void tcp_close_notice(struct tcp_comm *c) {
  const struct tcp_req *r = c->cur ? c->cur : c->posted_head;
  size_t left = c->stage_len - c->stage_off + (size_t)unread(c->ctrl_fd);
  for (int i = 0; i < c->nsocks; i++)
    left += (size_t)unread(c->socks[i].fd) + tcp_head_len(&c->socks[i]);
  if (!r && !left && !c->hdr_got) return; /* nothing in flight: a plain close */
  char reason[300];
  if (r)
    snprintf(reason, sizeof(reason),
             "the receiver closed its connection while message %u was in flight (its receive of "
             "up to %zu bytes was posted and not complete); the sender's messages from %u on "
             "were not delivered",
             r->seq, r->cap, r->seq);
  else
    snprintf(reason, sizeof(reason),
             "the receiver closed its connection with %zu bytes of message %u onwards arrived "
             "and not received (no receive was posted for them); they were not delivered",
             left, c->next_seq);
  tcp_abort_peer(c, reason);
}
