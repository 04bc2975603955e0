/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/abort.h"

#include "common/log.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "transport/frame.h"
#include "transport/sock.h"

void transport_send_abort(int ctrl_fd, uint32_t seq, const char *reason) {
  size_t len = strnlen(reason, MSG_ABORT_MAX);
  struct msg_hdr h = {MSG_F_ABORT, seq, 0, 0, len};
  uint8_t hdr[MSG_HDR_LEN];
  msg_hdr_encode(&h, hdr);
  struct iovec iov[2] = {{hdr, MSG_HDR_LEN}, {(void *)reason, len}};
  size_t sent;
  (void)sock_sendv(ctrl_fd, iov, 2, &sent); /* best effort: the peer may be gone */
  shutdown(ctrl_fd, SHUT_WR);
}

bool transport_read_abort(int ctrl_fd, char *reason, size_t cap, int wait_ms) {
  uint8_t buf[MSG_HDR_LEN + MSG_ABORT_MAX];
  size_t got = 0;
  int64_t end = now_ns() + (int64_t)wait_ms * 1000000;
  while (now_ns() < end) {
    struct pollfd p = {ctrl_fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    size_t n;
    int err = sock_recv(ctrl_fd, buf + got, sizeof(buf) - got, &n);
    if (err == EAGAIN) continue;
    if (err) break;
    got += n;
    struct msg_hdr h;
    char why[160];
    if (got < MSG_HDR_LEN) continue;
    if (msg_hdr_decode(buf, &h, why, sizeof(why)) || !(h.flags & MSG_F_ABORT)) return false;
    if (got < MSG_HDR_LEN + h.size) continue;
    /* The peer's words go into our WARN: a newline in them must not forge
     * a line, nor an escape code reach a terminal. */
    log_clean(reason, cap, (const char *)buf + MSG_HDR_LEN, h.size);
    return true;
  }
  return false;
}
