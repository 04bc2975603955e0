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

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

void prof_set_callback(ncclProfilerCallback_t fn);

/* Around one isend (n = 1) or irecv (n buffers) on this thread. */
void prof_arm(int n, void **phandles);
void prof_disarm(void);

/* Where a transport allocates a request. */
void prof_req_new(struct transport_req *r);

/* One posted work request for buffer sub of the request. */
void prof_qp_start(struct transport_req *r, int sub, int dev, uint64_t wr_id, int opcode,
                   uint32_t qpn, size_t length);
/* The request's transfer on socket fd starts moving (once per request). */
void prof_sock_start(struct transport_req *r, int fd, int is_recv, size_t length);
/* The request is retired (done, or abandoned): stops what was started.
 * Idempotent: a retired request has no state left. */
void prof_req_done(struct transport_req *r);

#endif
