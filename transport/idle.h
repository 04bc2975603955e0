/* Waiting instead of spinning. NCCL's proxy thread calls test() in a loop
 * and only yields when a pass makes no progress; on a machine with few
 * cores that spin takes the CPU the data movers need. After a short spin
 * with no progress on this thread, test() waits (bounded) on the comm's own
 * sockets and on a process-wide wake-up that helper threads signal when a
 * request completes, so the thread sleeps through long transfers and still
 * wakes at once for new work. NCCL_DIAG_IDLE_WAIT_US=0 restores pure
 * spinning. */
#ifndef DIAG_TRANSPORT_IDLE_H
#define DIAG_TRANSPORT_IDLE_H

#include <poll.h>

/* This thread made progress (a request completed, bytes moved). */
void xp_idle_progress(void);
/* Whether this thread has spun long enough without progress to wait. */
int xp_idle_should_wait(void);
/* Waits until one of fds is ready, a helper signals a completion, or the
 * bound passes. */
void xp_idle_wait(struct pollfd *fds, int n);
/* Helper threads: a request completed; wakes waiting threads, if any. */
void xp_idle_wake(void);

#endif
