/* SPDX-License-Identifier: Apache-2.0 */
/* The API's calls that carry NCCL's profiler (v10+): init's callback and
 * the per-request handles of isend/irecv. The transports report the events
 * (transport/prof.h); these only hand the handles over. */
#include "plugin/api.h"
#include "transport/prof.h"

void diag_set_profiler(ncclProfilerCallback_t fn) { prof_set_callback(fn); }

ncclResult_t diag_isend_prof(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                             void *phandle, void **request) {
  if (!prof_on()) return diag_isend(send_comm, data, size, tag, mhandle, request);
  prof_arm(1, &phandle);
  ncclResult_t r = diag_isend(send_comm, data, size, tag, mhandle, request);
  prof_disarm();
  return r;
}

ncclResult_t diag_irecv_prof(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                             void **mhandles, void **phandles, void **request) {
  if (!prof_on()) return diag_irecv(recv_comm, n, data, sizes, tags, mhandles, request);
  prof_arm(n, phandles);
  ncclResult_t r = diag_irecv(recv_comm, n, data, sizes, tags, mhandles, request);
  prof_disarm();
  return r;
}
