/* SPDX-License-Identifier: Apache-2.0 */
/* Waiting instead of spinning. NCCL's proxy thread calls test() in a loop
 * and only yields when a pass makes no progress; on a machine with few
 * cores that spin takes the CPU the data movers need. After a short spin
 * with no progress on this thread, test() waits (bounded) on the sockets of
 * every comm this thread recently waited for (NCCL's proxy thread drives
 * many comms: data for one must end another's wait) and on a process-wide
 * wake-up that helper threads signal when a request completes, so the
 * thread sleeps through long transfers and still wakes at once for new
 * work. NCCL_DIAG_IDLE_WAIT_US=0 restores pure
 * spinning. */
#ifndef DIAG_TRANSPORT_IDLE_H
#define DIAG_TRANSPORT_IDLE_H

#include <poll.h>
#include <stdbool.h>

/* This thread made progress (a request completed, bytes moved). */
void transport_idle_progress(void);
/* Whether this thread has spun long enough without progress to wait. */
bool transport_idle_should_wait(void);
/* Makes fds owner's entries in this thread's wait set, then waits until
 * a socket of the set is ready, a helper signals a completion, or the
 * bound passes. */
void transport_idle_wait(const void *owner, const struct pollfd *fds, int n);
/* owner (a comm) has work this thread drives: keeps its entries in the
 * thread's wait set and adds fds (a receive posted: its control socket). */
void transport_idle_note(const void *owner, const struct pollfd *fds, int n);
/* owner's sockets are closing: out of this thread's wait set. */
void transport_idle_forget(const void *owner);
/* Helper threads: a request completed; wakes waiting threads, if any. */
void transport_idle_wake(void);

#endif
