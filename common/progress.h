/* SPDX-License-Identifier: Apache-2.0 */
/* What one non-blocking step of a state machine returns. A machine with
 * more outcomes (RDMA setup: up, or fall back to TCP) has its own enum that
 * keeps these three meanings. */
#ifndef DIAG_COMMON_PROGRESS_H
#define DIAG_COMMON_PROGRESS_H

enum progress {
  PROGRESS_PENDING, /* call again: waiting for the peer or the socket */
  PROGRESS_DONE,
  PROGRESS_FAILED, /* the detecting function has logged why */
};

#endif
