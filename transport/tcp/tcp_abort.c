/* When one side gives up on a connection it tells the other why (an abort
 * frame on the control socket) and resets its data sockets, so the peer
 * fails at once with the real cause instead of blocking in a send whose
 * bytes will never be read, or blaming a dead process. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "transport/sock.h"
#include "transport/tcp/tcp.h"

/* Replaces a socket with /dev/null under the same descriptor number (so a
 * helper thread polling it sees an event, not a recycled descriptor), and
 * closes the socket with a reset. */
static void reset_socket(int fd, int devnull) {
  struct linger lg = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  if (devnull >= 0) dup2(devnull, fd);
}

void tcp_abort_peer(struct tcp_comm *c, const char *reason) {
  /* A frame cannot be slipped into the middle of one already going out. */
  int mid_frame = c->send && c->out_count && c->out[c->out_head].off > 0;
  if (!mid_frame) {
    size_t len = strnlen(reason, MSG_ABORT_MAX);
    struct msg_hdr h = {MSG_F_ABORT, c->next_seq, 0, 0, len};
    uint8_t hdr[MSG_HDR_LEN];
    msg_hdr_encode(&h, hdr);
    struct iovec iov[2] = {{hdr, MSG_HDR_LEN}, {(void *)reason, len}};
    sock_sendv(c->ctrl_fd, iov, 2); /* best effort */
  }
  shutdown(c->ctrl_fd, SHUT_WR);
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int i = 0; i < c->nsocks; i++) reset_socket(c->socks[i].fd, devnull);
  if (devnull >= 0) close(devnull);
}

/* The send side never reads its control socket, except here: after a
 * socket error, to learn whether the receiver ended the connection on
 * purpose and why. Waits up to wait_ms for the notice. */
int tcp_read_abort(struct tcp_comm *c, char *reason, size_t cap, int wait_ms) {
  uint8_t buf[MSG_HDR_LEN + MSG_ABORT_MAX];
  size_t got = 0;
  int64_t end = now_ns() + (int64_t)wait_ms * 1000000;
  while (now_ns() < end) {
    struct pollfd p = {c->ctrl_fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    ssize_t n = sock_recv(c->ctrl_fd, buf + got, sizeof(buf) - got);
    if (n == -EAGAIN) continue;
    if (n < 0) break;
    got += (size_t)n;
    struct msg_hdr h;
    char why[160];
    if (got < MSG_HDR_LEN) continue;
    if (msg_hdr_decode(buf, &h, why, sizeof(why)) || !(h.flags & MSG_F_ABORT)) return 0;
    if (got < MSG_HDR_LEN + h.size) continue;
    size_t len = h.size < cap - 1 ? h.size : cap - 1;
    memcpy(reason, buf + MSG_HDR_LEN, len);
    reason[len] = 0;
    return 1;
  }
  return 0;
}
