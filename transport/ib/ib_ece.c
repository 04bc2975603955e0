/* SPDX-License-Identifier: Apache-2.0 */
/* Enhanced connection establishment (ECE), as NCCL negotiates it since
 * 2.19 (NCCL_IB_ECE_ENABLE since 2.23, default 1): each side announces
 * the options its device's queue pairs offer, and each queue pair is given
 * the peer's before RTR, so the two NICs settle on what both support.
 * NCCL carries the options per queue pair in its connection metadata; here
 * the device's options travel in the hello (an optional field, skipped by
 * peers that do not know it), read once at open from a probe queue pair.
 * A library or device without ECE (EOPNOTSUPP) is silently without it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/knobs.h"
#include "common/log.h"
#include "transport/ib/ib.h"

void ib_ece_probe(struct ib_dev *d) {
  const struct verbs_ops *v = d->v;
  if (!knob_int(K_IB_ECE_ENABLE) || !v->query_ece || !v->set_ece) return;
  struct ibv_cq *cq = v->create_cq(d->ctx, 1, NULL, NULL, 0);
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof(a));
  a.qp_type = IBV_QPT_RC;
  a.send_cq = a.recv_cq = cq;
  a.cap.max_send_wr = a.cap.max_recv_wr = 1;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  struct ibv_qp *qp = cq ? v->create_qp(d->pd, &a) : NULL;
  struct ibv_ece ece;
  memset(&ece, 0, sizeof(ece));
  int err = qp ? v->query_ece(qp, &ece) : 0;
  if (qp && !err) {
    d->has_ece = true;
    d->ece_vendor = ece.vendor_id;
    d->ece_options = ece.options;
    d->ece_comp_mask = ece.comp_mask;
    INFO(LOG_INIT,
         "device %s: enhanced connection establishment offered (vendor 0x%x, options "
         "0x%x)",
         d->label, ece.vendor_id, ece.options);
  } else if (qp && err != EOPNOTSUPP) {
    INFO(LOG_INIT,
         "device %s: ibv_query_ece failed (%s): connecting without enhanced connection "
         "establishment",
         d->label, strerror(err));
  }
  if (qp) v->destroy_qp(qp);
  if (cq) v->destroy_cq(cq);
}

void ib_ece_fill_hello(const struct ib_dev *d, struct hello_rdma *r) {
  r->has_ece = d->has_ece;
  r->ece_vendor = d->ece_vendor;
  r->ece_options = d->ece_options;
  r->ece_comp_mask = d->ece_comp_mask;
}

void ib_ece_apply(const struct ib_dev *d, struct ib_qp *q, const struct hello *peer) {
  if (!d->has_ece || !peer->rdma.has_ece) return;
  struct ibv_ece ece = {peer->rdma.ece_vendor, peer->rdma.ece_options, peer->rdma.ece_comp_mask};
  int err = d->v->set_ece(q->qp, &ece);
  if (err) {
    INFO(LOG_NET,
         "device %s qp 0x%x: the peer's enhanced connection establishment options "
         "(vendor 0x%x, options 0x%x) are refused (%s): connecting without them",
         d->label, q->qp->qp_num, peer->rdma.ece_vendor, peer->rdma.ece_options, strerror(err));
    return;
  }
  INFO(LOG_NET,
       "device %s qp 0x%x: enhanced connection establishment with the peer's options "
       "(vendor 0x%x, options 0x%x)",
       d->label, q->qp->qp_num, peer->rdma.ece_vendor, peer->rdma.ece_options);
}
