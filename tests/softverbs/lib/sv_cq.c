/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: completion queues.
 *
 * A CQ holds exactly the cqe entries asked for. A completion that finds it
 * full is lost and the CQ is marked overrun, reported once as
 * IBV_EVENT_CQ_ERR, as a HCA reports a CQ overrun. */
#include "sv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

SV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                       struct ibv_comp_channel *channel, int comp_vector) {
  if (cqe < 1 || cqe > SV_MAX_CQE || comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
    errno = EINVAL;
    return NULL;
  }
  struct sv_cq *cq = calloc(1, sizeof *cq);
  if (cq) cq->ring = calloc((size_t)cqe, sizeof *cq->ring);
  if (!cq || !cq->ring) {
    free(cq);
    errno = ENOMEM;
    return NULL;
  }
  cq->cap = cqe;
  cq->ibcq.context = context;
  cq->ibcq.channel = channel;
  cq->ibcq.cq_context = cq_context;
  cq->ibcq.cqe = cqe;
  pthread_mutex_init(&cq->ibcq.mutex, NULL);
  pthread_cond_init(&cq->ibcq.cond, NULL);
  pthread_mutex_init(&cq->lock, NULL);
  atomic_init(&cq->refs, 0);
  if (channel) __atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_SEQ_CST);
  return &cq->ibcq;
}

SV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq) {
  struct sv_cq *cq = (struct sv_cq *)ibcq;
  if (atomic_load(&cq->refs)) return EBUSY;
  if (ibcq->channel) __atomic_sub_fetch(&ibcq->channel->refcnt, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_destroy(&cq->lock);
  pthread_mutex_destroy(&ibcq->mutex);
  pthread_cond_destroy(&ibcq->cond);
  free(cq->ring);
  free(cq);
  return 0;
}

int sv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc) {
  struct sv_cq *cq = (struct sv_cq *)ibcq;
  if (n < 0) return -1;
  pthread_mutex_lock(&cq->lock);
  int got = n < cq->count ? n : cq->count;
  for (int i = 0; i < got; i++) {
    wc[i] = cq->ring[cq->head];
    cq->head = (cq->head + 1) % cq->cap;
  }
  cq->count -= got;
  pthread_mutex_unlock(&cq->lock);
  return got;
}

int sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only) {
  struct sv_cq *cq = (struct sv_cq *)ibcq;
  pthread_mutex_lock(&cq->lock);
  /* An earlier request for any completion stays stronger. */
  if (cq->armed != 1) cq->armed = solicited_only ? 2 : 1;
  pthread_mutex_unlock(&cq->lock);
  return 0;
}

/* Adds a completion; wakes the channel if the CQ is armed for it (any
 * completion, or a solicited or failed one after a solicited-only arm). */
void sv_cq_push(struct ibv_cq *ibcq, const struct ibv_wc *wc, bool solicited) {
  struct sv_cq *cq = (struct sv_cq *)ibcq;
  bool overrun = false, notify = false;
  pthread_mutex_lock(&cq->lock);
  if (cq->count == cq->cap) {
    overrun = !cq->overrun;
    cq->overrun = true;
  } else {
    cq->ring[(cq->head + cq->count) % cq->cap] = *wc;
    cq->count++;
    notify = cq->armed == 1 || (cq->armed == 2 && (solicited || wc->status != IBV_WC_SUCCESS));
    if (notify) cq->armed = 0;
  }
  pthread_mutex_unlock(&cq->lock);
  if (overrun) {
    sv_log("cq %p overrun (%d entries): completion lost", (void *)ibcq, cq->cap);
    sv_async_raise(sv_ctx_of(ibcq->context), IBV_EVENT_CQ_ERR, ibcq);
  }
  if (notify && ibcq->channel) sv_chan_notify(ibcq->channel, ibcq);
}

/* An error completion: only wr_id, status, qp_num and vendor_err are valid
 * (ibv_poll_cq(3)); the other fields are left zero. */
void sv_cq_push_error(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st, uint32_t qp_num) {
  struct ibv_wc wc;
  memset(&wc, 0, sizeof wc);
  wc.wr_id = wr_id;
  wc.status = st;
  wc.qp_num = qp_num;
  wc.vendor_err = sv_vendor_err(st);
  sv_cq_push(cq, &wc, false);
}
