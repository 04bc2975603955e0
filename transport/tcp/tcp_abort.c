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

#include "transport/abort.h"
#include "transport/sock.h"
#include "transport/tcp/tcp.h"

#define NOTICE_EVERY_NS 1000000LL

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

bool tcp_peer_notice(struct tcp_comm *c, char *reason, size_t cap, int wait_ms) {
  pthread_mutex_lock(&c->notice_lock);
  if (!c->notice) {
    char buf[MSG_ABORT_MAX + 1];
    if (transport_read_abort(c->ctrl_fd, buf, sizeof(buf), wait_ms)) c->notice = strdup(buf);
  }
  bool has_notice = c->notice != NULL;
  if (has_notice) snprintf(reason, cap, "%s", c->notice);
  pthread_mutex_unlock(&c->notice_lock);
  return has_notice;
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
  char b;
  ssize_t n = recv(c->ctrl_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
  /* The end of the stream and no notice: the receiver closed after taking
   * all it was sent (with anything unread it tells us, or its kernel
   * resets the connection). */
  if (n == 0 && !is_close_fatal) return 0;
  char reason[MSG_ABORT_MAX + 1];
  if (n > 0 && tcp_peer_notice(c, reason, sizeof(reason), 300))
    return tcp_fail(c, ECONNRESET, 0, "the receiving side ended the connection: %s", reason);
  int err = n < 0 ? errno : 0;
  return tcp_fail(c, ECONNRESET, 0,
                  "the receiving side closed the connection without a notice%s%s: the peer "
                  "process died, or closed its receive",
                  n > 0 ? " (it sent bytes that are not one)"
                  : err ? ", "
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
