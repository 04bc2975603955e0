/* SPDX-License-Identifier: Apache-2.0 */
/* Run-time stall diagnosis, transport-generic: when a connection has
 * requests pending and nothing moved for NCCL_DIAG_STALL_SEC, say once on
 * that rank whom it waits for, and how that process is (it answers but its
 * caller posted nothing, it does not answer, or both ends post and no byte
 * moves). The data paths call in from their test() no-progress step, which
 * only reads clocks and atomics: nothing here blocks the proxy thread.
 *
 * The peer's caller state travels on the liveness channel (liveness.h):
 * a check carries "the checker waits on you", the answer "my caller has
 * posted nothing for N s" (waitfor.c). */
#ifndef DIAG_TRANSPORT_RUN_STALL_H
#define DIAG_TRANSPORT_RUN_STALL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct transport_comm;

/* What a stalled request waits for. */
enum run_wait {
  RUN_WAIT_DATA,  /* a posted receive: no byte of its message came */
  RUN_WAIT_BYTES, /* a message under way (either side): its bytes stopped */
  RUN_WAIT_DRAIN, /* a send: the peer does not take its bytes */
  RUN_WAIT_CTS,   /* a send: no clear-to-send, the peer posted no receive */
};

/* One per comm: the stall episode it warned about. */
struct run_watch {
  int64_t since_ns;  /* the comm's last progress: the latest of its requests' */
  int64_t warned_ns; /* when it warned; progress after that is a new episode */
  bool has_warned;
};

struct run_prefs {
  int64_t stall_ns; /* 0: never */
};
/* NCCL_DIAG_STALL_SEC, read once. */
const struct run_prefs *run_prefs_read(void);

/* The caller's activity, process-wide: every post and test notes it; a
 * process whose caller stopped notes nothing. A call only raises a flag
 * (read first, so the line stays shared while it is up): the liveness
 * thread's pass turns it into a time, so the data path reads no clock. */
extern atomic_bool run_called;
static inline void run_note_call(void) {
  if (!atomic_load_explicit(&run_called, memory_order_relaxed))
    atomic_store_explicit(&run_called, true, memory_order_relaxed);
}
/* From each pass of the liveness thread (which polls at most loop_ns): a
 * pass much later than that means the whole process was stopped, which is
 * not its caller's idleness. */
void run_loop_tick(int64_t now, int64_t loop_ns);
/* Nanoseconds since the caller last posted or tested, to within one
 * liveness pass; 0 before any. */
int64_t run_caller_idle_ns(int64_t now);

/* From a request's no-progress step: the request last moved at since_ns;
 * pending is its outstanding byte count. Warns once per stall episode. */
void run_stall_step(struct run_watch *w, struct transport_comm *c, enum run_wait kind,
                    int64_t since_ns, long long pending);

/* root.c: a judged root (waitfor.h's verdicts: of c's peer, or with
 * is_here of this process, RUN_ROOT_PORT only) becomes this process's,
 * told to whoever waits on it; a busy peer's told root is taken and
 * warned, root first: true then. */
void run_stall_root(struct transport_comm *c, int verdict, bool is_here);
bool run_stall_adopt(struct transport_comm *c, const char *what, long long secs);

#endif
