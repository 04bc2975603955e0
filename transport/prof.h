/* SPDX-License-Identifier: Apache-2.0 */
/* Network events for NCCL's profiler (plugin/abi/net_profiler.h), as
 * NCCL's own transports report them: the IB transport one event per work
 * request per queue pair (device, wr_id, opcode, qp number, length), the
 * socket transport one event per request on its socket (fd, op, length).
 * The plugin arms the handles NCCL passed to isend/irecv on the calling
 * thread; the request the transport allocates during that call takes them;
 * the post sites start events; they stop when the transport retires the
 * request (test() reporting it done, a failed post, or the comm's close).
 * Without a callback from init, every call here returns at once. */
#ifndef DIAG_TRANSPORT_PROF_H
#define DIAG_TRANSPORT_PROF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

void prof_set_callback(ncclProfilerCallback_t fn);
/* Whether init gave a callback: the data path asks this before anything
 * else, so a job without a profiler pays one load per call. */
extern atomic_bool prof_is_on;
static inline bool prof_on(void) { return atomic_load_explicit(&prof_is_on, memory_order_relaxed); }

/* Around one isend (n = 1) or irecv (n buffers) on this thread. */
void prof_arm(int n, void **phandles);
void prof_disarm(void);

/* Where a transport allocates a request. */
void prof_req_take(struct transport_req *r);
static inline void prof_req_new(struct transport_req *r) {
  r->prof = NULL;
  if (prof_on()) prof_req_take(r);
}

/* One posted work request for buffer sub of the request. */
void prof_qp_start(struct transport_req *r, int sub, int dev, uint64_t wr_id, int opcode,
                   uint32_t qpn, size_t length);
/* The request's transfer on socket fd starts moving (once per request). */
void prof_sock_start(struct transport_req *r, int fd, int is_recv, size_t length);
/* The request is retired (done, or abandoned): stops what was started.
 * Idempotent: a retired request has no state left. */
void prof_req_stop(struct transport_req *r);
static inline void prof_req_done(struct transport_req *r) {
  if (r->prof) prof_req_stop(r);
}

#endif
