/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: completion queues.
 *
 * A CQ of n entries holds 2^k - 1 >= n, as mlx5 rounds it (mlx5_create_cq)
 * and reports in ibv_cq.cqe. A completion that finds it full overruns it:
 * the completion is lost, the CQ is in error and takes no more, and
 * IBV_EVENT_CQ_ERR is raised once; the progress thread then moves the QPs
 * that use it to ERR, as a HCA does with QPs whose CQ failed.
 *
 * Polling a completion releases its work queue's slots (mlx5's poll path
 * advances the queue's tail to the polled WQE): nothing else does. */
#include "sv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                       struct ibv_comp_channel *channel, int comp_vector) {
  if (cqe < 1 || cqe > SV_MAX_CQE || comp_vector < 0 || comp_vector >= context->num_comp_vectors) {
    errno = EINVAL;
    return NULL;
  }
  int n = 1;
  while (n < cqe + 1) n <<= 1;
  n--;
  struct sv_cq *cq = calloc(1, sizeof *cq);
  if (cq) cq->ring = calloc((size_t)n, sizeof *cq->ring);
  if (cq) cq->src = calloc((size_t)n, sizeof *cq->src);
  if (!cq || !cq->ring || !cq->src) {
    if (cq) free(cq->ring);
    free(cq);
    errno = ENOMEM;
    return NULL;
  }
  cq->cap = n;
  cq->ibcq.context = context;
  cq->ibcq.channel = channel;
  cq->ibcq.cq_context = cq_context;
  cq->ibcq.cqe = n;
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
  /* As libibverbs: wait until every event handed out for it was acknowledged. */
  uint32_t async = sv_async_forget(sv_ctx_of(ibcq->context), ibcq, &cq->async_reported);
  pthread_mutex_lock(&ibcq->mutex);
  uint32_t comp = cq->comp_reported;
  pthread_mutex_unlock(&ibcq->mutex);
  char what[64];
  snprintf(what, sizeof what, "ibv_destroy_cq(cq %p)", (void *)ibcq);
  sv_wait_acks(sv_ctx_of(ibcq->context), &ibcq->mutex, &ibcq->cond, &ibcq->async_events_completed,
               async, &ibcq->comp_events_completed, comp, what);
  if (ibcq->channel) __atomic_sub_fetch(&ibcq->channel->refcnt, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_destroy(&cq->lock);
  pthread_mutex_destroy(&ibcq->mutex);
  pthread_cond_destroy(&ibcq->cond);
  free(cq->ring);
  free(cq->src);
  free(cq);
  return 0;
}

/* The slots a polled completion frees. A send completion frees every WR up
 * to its own, so the counter only moves forward (SOFTVERBS_SQ_FREE=ack may
 * have moved it already). */
static void release(const struct sv_cqe_src *s) {
  if (!s->qp) return;
  if (!s->is_send) {
    atomic_fetch_add(&s->qp->rq_freed, 1);
    return;
  }
  unsigned cur = atomic_load(&s->qp->sq_freed);
  while ((int32_t)(s->upto - cur) > 0 &&
         !atomic_compare_exchange_weak(&s->qp->sq_freed, &cur, s->upto))
    continue;
}

int sv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc) {
  struct sv_cq *cq = (struct sv_cq *)ibcq;
  if (n < 0) return -1;
  pthread_mutex_lock(&cq->lock);
  int got = n < cq->count ? n : cq->count;
  for (int i = 0; i < got; i++) {
    wc[i] = cq->ring[cq->head];
    release(&cq->src[cq->head]);
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
void sv_cq_push(struct ibv_cq *ibcq, const struct ibv_wc *wc, bool solicited,
                const struct sv_cqe_src *src) {
  struct sv_cq *cq = (struct sv_cq *)ibcq;
  bool overrun = false, notify = false;
  pthread_mutex_lock(&cq->lock);
  if (atomic_load(&cq->overrun)) {
    /* in error: the completion is lost */
  } else if (cq->count == cq->cap) {
    overrun = true;
    atomic_store(&cq->overrun, true);
  } else {
    int at = (cq->head + cq->count) % cq->cap;
    cq->ring[at] = *wc;
    cq->src[at] = *src;
    cq->count++;
    notify = cq->armed == 1 || (cq->armed == 2 && (solicited || wc->status != IBV_WC_SUCCESS));
    if (notify) cq->armed = 0;
  }
  pthread_mutex_unlock(&cq->lock);
  if (overrun) {
    sv_log("cq %p overrun (%d entries): completion lost, the CQ is in error", (void *)ibcq,
           cq->cap);
    sv_async_raise(sv_ctx_of(ibcq->context), IBV_EVENT_CQ_ERR, ibcq);
    sv_ctx_wake(sv_ctx_of(ibcq->context)); /* its QPs enter ERR */
  }
  if (notify && ibcq->channel) sv_chan_notify(ibcq->channel, ibcq);
}

/* An error completion: only wr_id, status, qp_num and vendor_err are valid
 * (ibv_poll_cq(3)); the other fields are left zero. */
void sv_cq_push_error(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_status st,
                      const struct sv_cqe_src *src) {
  struct ibv_wc wc;
  memset(&wc, 0, sizeof wc);
  wc.wr_id = wr_id;
  wc.status = st;
  wc.qp_num = src->qp->ibqp.qp_num;
  wc.vendor_err = sv_vendor_err(st);
  sv_cq_push(cq, &wc, false, src);
}

bool sv_cq_in_error(struct ibv_cq *cq) { return atomic_load(&((struct sv_cq *)cq)->overrun); }

/* Removes qp's completions, keeping the others in order (mlx5's
 * __mlx5_cq_clean, on destroy and on RESET). */
void sv_cq_clean(struct ibv_cq *ibcq, struct sv_qp *qp) {
  struct sv_cq *cq = (struct sv_cq *)ibcq;
  pthread_mutex_lock(&cq->lock);
  int kept = 0;
  for (int i = 0; i < cq->count; i++) {
    int from = (cq->head + i) % cq->cap, to = (cq->head + kept) % cq->cap;
    if (cq->src[from].qp == qp) continue;
    cq->ring[to] = cq->ring[from];
    cq->src[to] = cq->src[from];
    kept++;
  }
  cq->count = kept;
  pthread_mutex_unlock(&cq->lock);
}
