/* SPDX-License-Identifier: Apache-2.0 */
/* Abort notices on a connection's control socket: the side that gives up on
 * a connection says why, so the other side reports the real cause instead
 * of a dead peer or a timeout. Shared by the TCP and RDMA transports; each
 * reads the notice without waiting (ctrl.h's decoder). */
#ifndef DIAG_TRANSPORT_ABORT_H
#define DIAG_TRANSPORT_ABORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Best effort: one non-blocking write of the frame; then no more writes. */
void transport_send_abort(int ctrl_fd, uint32_t seq, const char *reason);

#endif
