/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/abort.h"

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
