/* SPDX-License-Identifier: Apache-2.0 */
/* See ib_prof.h. A send's data write is its event (length = its bytes); a
 * 0-byte send moves nothing but the signaled write-with-immediate, which is
 * then its event. A receive is one receive work request; each of its
 * buffers gets an event on it (as NCCL starts one per grouped receive),
 * with the bytes that buffer can take, and the opcode of the completion it
 * waits for. */
#include "transport/ib/data/ib_prof.h"

#include "transport/prof.h"

void ib_prof_send(const struct ib_comm *c, const struct ib_qp *q, const struct ib_slot *sl,
                  const struct ibv_send_wr *wrs) {
  int k = 0; /* the next data write in wrs */
  const struct ibv_send_wr *last = wrs;
  while (last->next) last = last->next;
  for (int i = 0; i < sl->n; i++) {
    struct ib_req *r = sl->reqs[i];
    if (!r || !r->base.prof) {
      if (r && r->sizes[0]) k++;
      continue;
    }
    const struct ibv_send_wr *w = last;
    if (r->sizes[0]) w = &wrs[k++];
    prof_qp_start(&r->base, 0, c->base.dev->index, w->wr_id, (int)w->opcode, q->qp->qp_num,
                  (size_t)r->sizes[0]);
  }
}

void ib_prof_recv(const struct ib_comm *c, const struct ib_qp *q, struct ib_req *r, uint64_t wr_id,
                  const size_t *sizes) {
  if (!r->base.prof) return;
  for (int i = 0; i < r->n; i++)
    prof_qp_start(&r->base, i, c->base.dev->index, wr_id, IBV_WC_RECV_RDMA_WITH_IMM, q->qp->qp_num,
                  sizes[i]);
}
