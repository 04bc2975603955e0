/* SPDX-License-Identifier: Apache-2.0 */
/* Enhanced connection establishment (ECE), as NCCL negotiates it since
 * 2.19 (NCCL_IB_ECE_ENABLE since 2.23, default 1; src/transport/net_ib/
 * connect.cc at v2.30.7-1): the connector offers what its queue pairs
 * support; the acceptor gives its queue pairs that offer before RTR, asks
 * after RTS what they settled on (the set both NICs support) and returns
 * it; the connector gives its queue pairs that settled set before its own
 * RTR. Here the offer is the device's, read once at open from a probe
 * queue pair, and travels in the hello (an optional field); the settled set
 * travels in the acceptor's STATUS record, so a connector whose acceptor
 * speaks it (IBREC_F_ECE_REDUCED) runs RTR after that record. With a peer
 * of an older release both sides give their queue pairs the other's offer.
 * A library or device without ECE (EOPNOTSUPP) is silently without it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "transport/ib/dev/ib.h"
#include "transport/ib/setup/ib_wire.h"
#include "transport/prefs.h"

void ib_ece_probe(struct ib_dev *d) {
  const struct verbs_ops *v = d->v;
  if (!transport_prefs()->is_ece_enabled || !v->query_ece || !v->set_ece) return;
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

bool ib_ece_waits(const struct ib_dev *d, const struct hello *peer, const struct ibrec *peer_info) {
  return d->has_ece && peer->rdma.has_ece && (peer_info->flags & IBREC_F_ECE_REDUCED);
}

void ib_ece_apply(const struct ib_dev *d, struct ib_qp *q, const struct hello *peer,
                  const struct ibrec *settled) {
  if (!d->has_ece || !peer->rdma.has_ece) return;
  bool is_settled = settled && settled->has_ece;
  struct ibv_ece ece = {peer->rdma.ece_vendor, peer->rdma.ece_options, peer->rdma.ece_comp_mask};
  if (is_settled)
    ece = (struct ibv_ece){settled->ece_vendor, settled->ece_options, settled->ece_comp_mask};
  const char *whose = is_settled ? "options the peer's queue pairs settled on" : "peer's options";
  int err = d->v->set_ece(q->qp, &ece);
  if (err) {
    INFO(LOG_NET,
         "device %s qp 0x%x: the %s for enhanced connection establishment (vendor 0x%x, "
         "options 0x%x) are refused (%s): connecting without them",
         d->label, q->qp->qp_num, whose, ece.vendor_id, ece.options, strerror(err));
    return;
  }
  INFO(LOG_NET,
       "device %s qp 0x%x: enhanced connection establishment with the %s (vendor 0x%x, "
       "options 0x%x)",
       d->label, q->qp->qp_num, whose, ece.vendor_id, ece.options);
}

void ib_ece_settled(const struct ib_dev *d, struct ib_qp *q, const struct hello *peer,
                    struct ibrec *r) {
  r->has_ece = false;
  if (!d->has_ece || !peer->rdma.has_ece) return;
  struct ibv_ece ece;
  memset(&ece, 0, sizeof(ece));
  int err = d->v->query_ece(q->qp, &ece);
  if (err) {
    INFO(LOG_NET,
         "device %s qp 0x%x: ibv_query_ece after RTS failed (%s): the peer keeps its own "
         "options",
         d->label, q->qp->qp_num, strerror(err));
    return;
  }
  r->has_ece = true;
  r->ece_vendor = ece.vendor_id;
  r->ece_options = ece.options;
  r->ece_comp_mask = ece.comp_mask;
  INFO(LOG_NET,
       "device %s qp 0x%x: enhanced connection establishment settled on options 0x%x (vendor "
       "0x%x), returned to the peer",
       d->label, q->qp->qp_num, ece.options, ece.vendor_id);
}
