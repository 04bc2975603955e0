/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA post sites' profiler events (transport/prof.h): one per work
 * request per queue pair, as NCCL's IB transport reports them. */
#ifndef DIAG_TRANSPORT_IB_PROF_H
#define DIAG_TRANSPORT_IB_PROF_H

#include "transport/ib/data/ib_comm.h"

/* Before the slot's writes are posted on q: wrs as ib_post_slot built them. */
void ib_prof_send(const struct ib_comm *c, const struct ib_qp *q, const struct ib_slot *sl,
                  const struct ibv_send_wr *wrs);
/* After a receive of r was posted on q under wr_id. */
void ib_prof_recv(const struct ib_comm *c, const struct ib_qp *q, struct ib_req *r, uint64_t wr_id,
                  const size_t *sizes);

#endif
