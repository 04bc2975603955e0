/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/abort.h"

#include "common/log.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "transport/ctrl.h"
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
  struct ctrl_in in; /* the control channel's one header decoder (ctrl.h) */
  ctrl_in_reset(&in);
  int64_t end = now_ns() + (int64_t)wait_ms * 1000000;
  while (now_ns() < end) {
    struct pollfd p = {ctrl_fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    size_t n;
    int err = sock_recv(ctrl_fd, ctrl_in_space(&in), ctrl_in_need(&in), &n);
    if (err == EAGAIN) continue;
    if (err) break;
    enum ctrl_read st = ctrl_in_add(&in, n);
    if (st == CTRL_R_PART) continue;
    if (st != CTRL_R_MSG || in.msg.kind != CTRL_ABORT) return false;
    /* The peer's words go into our WARN: a newline in them must not forge
     * a line, nor an escape code reach a terminal. */
    log_clean(reason, cap, (const char *)in.msg.body, in.msg.len);
    return true;
  }
  return false;
}
