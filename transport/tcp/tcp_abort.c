/* SPDX-License-Identifier: Apache-2.0 */
/* When one side gives up on a connection it tells the other why (an abort
 * frame on the control socket) and resets its data sockets, so the peer
 * fails at once with the real cause instead of blocking in a send whose
 * bytes will never be read, or blaming a dead process. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/abort.h"
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
  int mid_frame = c->is_send && c->noutgoing && c->outgoing[c->outgoing_head].off > 0;
  if (mid_frame) shutdown(c->ctrl_fd, SHUT_WR);
  else transport_send_abort(c->ctrl_fd, c->next_seq, reason);
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int i = 0; i < c->nsocks; i++) reset_socket(c->socks[i].fd, devnull);
  if (devnull >= 0) close(devnull);
}
