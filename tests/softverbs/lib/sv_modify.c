/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: ibv_modify_qp, the RC state machine.
 *
 * Transitions and attribute masks follow the RC table of ibv_modify_qp(3):
 * every required attribute must be in the mask and nothing beyond the
 * required and optional ones may be; anything else is EINVAL and leaves the
 * QP as it was. INIT->RTR resolves the path (sv_route.c) and may fail with
 * the errno the kernel's RoCE address resolution gives. */
#include "sv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define Q(x) IBV_QP_##x

static const struct rule {
  enum ibv_qp_state from, to;
  int req, opt;
} rules[] = {
  {IBV_QPS_RESET, IBV_QPS_INIT, Q(STATE) | Q(PKEY_INDEX) | Q(PORT) | Q(ACCESS_FLAGS), 0},
  {IBV_QPS_INIT, IBV_QPS_INIT, 0, Q(PKEY_INDEX) | Q(PORT) | Q(ACCESS_FLAGS)},
  {IBV_QPS_INIT, IBV_QPS_RTR,
   Q(STATE) | Q(AV) | Q(PATH_MTU) | Q(DEST_QPN) | Q(RQ_PSN) | Q(MAX_DEST_RD_ATOMIC) |
     Q(MIN_RNR_TIMER),
   Q(ALT_PATH) | Q(ACCESS_FLAGS) | Q(PKEY_INDEX)},
  {IBV_QPS_RTR, IBV_QPS_RTS,
   Q(STATE) | Q(SQ_PSN) | Q(TIMEOUT) | Q(RETRY_CNT) | Q(RNR_RETRY) | Q(MAX_QP_RD_ATOMIC),
   Q(CUR_STATE) | Q(ALT_PATH) | Q(ACCESS_FLAGS) | Q(MIN_RNR_TIMER) | Q(PATH_MIG_STATE)},
  {IBV_QPS_RTS, IBV_QPS_RTS, 0,
   Q(CUR_STATE) | Q(ACCESS_FLAGS) | Q(ALT_PATH) | Q(PATH_MIG_STATE) | Q(MIN_RNR_TIMER)},
};

static int check_mask(enum ibv_qp_state cur, enum ibv_qp_state to, int mask) {
  if ((mask & Q(STATE)) && (to == IBV_QPS_RESET || to == IBV_QPS_ERR))
    return mask & ~(Q(STATE) | Q(CUR_STATE)) ? EINVAL : 0;
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
    const struct rule *r = &rules[i];
    if (r->from != cur || r->to != to) continue;
    if ((mask & r->req) != r->req || (mask & ~(r->req | r->opt | Q(STATE)))) return EINVAL;
    return 0;
  }
  return mask ? EINVAL : 0; /* an empty mask changes nothing */
}

static bool gid_usable(const struct sv_port *p, int index) {
  return index < p->ngids && !p->gids[index].gid_unreadable &&
         !sv_gid_is_zero(&p->gids[index].gid) && p->gids[index].type >= 0;
}

static int check_av(const struct sv_port *p, const struct ibv_ah_attr *ah) {
  if (p->link_layer == IBV_LINK_LAYER_ETHERNET && !ah->is_global) return EINVAL;
  if (ah->is_global && !gid_usable(p, ah->grh.sgid_index)) return EINVAL;
  if (p->link_layer == IBV_LINK_LAYER_INFINIBAND && !ah->dlid) return EINVAL;
  return 0;
}

static int check_values(struct sv_qp *qp, const struct ibv_qp_attr *a, int mask) {
  struct sv_device *d = qp->ctx->dev;
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                     IBV_ACCESS_REMOTE_ATOMIC;
  struct sv_port *p = sv_device_port(d, mask & Q(PORT) ? a->port_num : qp->attr.port_num);
  if ((mask & Q(PORT)) && !p) return EINVAL;
  if ((mask & Q(PKEY_INDEX)) && (!p || a->pkey_index >= p->npkeys)) return EINVAL;
  if ((mask & Q(ACCESS_FLAGS)) && (a->qp_access_flags & ~(unsigned)access)) return EINVAL;
  if ((mask & Q(PATH_MTU)) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
    return EINVAL;
  if ((mask & Q(DEST_QPN)) && a->dest_qp_num > 0xffffff) return EINVAL;
  if ((mask & Q(MAX_DEST_RD_ATOMIC)) && a->max_dest_rd_atomic > SV_MAX_RD_ATOM) return EINVAL;
  if ((mask & Q(MAX_QP_RD_ATOMIC)) && a->max_rd_atomic > SV_MAX_RD_ATOM) return EINVAL;
  if ((mask & Q(MIN_RNR_TIMER)) && a->min_rnr_timer > 31) return EINVAL;
  if ((mask & Q(TIMEOUT)) && a->timeout > 31) return EINVAL;
  if ((mask & Q(RETRY_CNT)) && a->retry_cnt > 7) return EINVAL;
  if ((mask & Q(RNR_RETRY)) && a->rnr_retry > 7) return EINVAL;
  if ((mask & Q(CUR_STATE)) && a->cur_qp_state != qp->state) return EINVAL;
  if ((mask & Q(AV)) && (!p || check_av(p, &a->ah_attr))) return EINVAL;
  return 0;
}

/* Copies the attributes named in the mask. */
static void apply(struct sv_qp *qp, const struct ibv_qp_attr *a, int mask) {
  struct ibv_qp_attr *q = &qp->attr;
  if (mask & Q(PKEY_INDEX)) q->pkey_index = a->pkey_index;
  if (mask & Q(PORT)) q->port_num = a->port_num;
  if (mask & Q(ACCESS_FLAGS)) q->qp_access_flags = a->qp_access_flags;
  if (mask & Q(AV)) q->ah_attr = a->ah_attr;
  if (mask & Q(PATH_MTU)) q->path_mtu = a->path_mtu;
  if (mask & Q(DEST_QPN)) q->dest_qp_num = a->dest_qp_num;
  if (mask & Q(RQ_PSN)) q->rq_psn = a->rq_psn & 0xffffff;
  if (mask & Q(SQ_PSN)) q->sq_psn = a->sq_psn & 0xffffff;
  if (mask & Q(MAX_DEST_RD_ATOMIC)) q->max_dest_rd_atomic = a->max_dest_rd_atomic;
  if (mask & Q(MAX_QP_RD_ATOMIC)) q->max_rd_atomic = a->max_rd_atomic;
  if (mask & Q(MIN_RNR_TIMER)) q->min_rnr_timer = a->min_rnr_timer;
  if (mask & Q(TIMEOUT)) q->timeout = a->timeout;
  if (mask & Q(RETRY_CNT)) q->retry_cnt = a->retry_cnt;
  if (mask & Q(RNR_RETRY)) q->rnr_retry = a->rnr_retry;
  if (mask & Q(ALT_PATH)) q->alt_ah_attr = a->alt_ah_attr;
  if (mask & Q(PATH_MIG_STATE)) q->path_mig_state = a->path_mig_state;
}

/* The first thing on the requester's connection: who it wants to reach. */
static struct sv_out *hello_for(struct sv_qp *qp, const struct ibv_qp_attr *a) {
  struct sv_port *p = sv_qp_port(qp);
  struct sv_hello h;
  memset(&h, 0, sizeof h);
  h.src_qpn = qp->ibqp.qp_num;
  h.dst_qpn = a->dest_qp_num;
  h.dlid = a->ah_attr.dlid;
  h.slid = p->lid;
  if (a->ah_attr.is_global) {
    h.dgid = a->ah_attr.grh.dgid;
    h.sgid = p->gids[a->ah_attr.grh.sgid_index].gid;
  }
  struct sv_out *o = sv_out_new(NULL, false);
  if (o) {
    sv_hello_encode(&h, o->hdr);
    o->iov[0].iov_len = SV_HELLO_LEN;
  }
  return o;
}

static int to_rtr(struct sv_qp *qp, const struct ibv_qp_attr *a, int mask) {
  struct sv_path path;
  int err = sv_route_resolve(qp, a, &path);
  if (err) return err;
  struct sv_conn *c = path.fd >= 0 ? sv_conn_new(qp->ctx, path.fd, true) : NULL;
  struct sv_out *hello = c ? hello_for(qp, a) : NULL;
  if (path.fd >= 0 && (!c || !hello)) {
    if (c) sv_conn_free(c);
    else close(path.fd);
    return ENOMEM;
  }
  pthread_mutex_lock(&qp->lock);
  if (qp->state != IBV_QPS_INIT) { /* went to ERR meanwhile */
    pthread_mutex_unlock(&qp->lock);
    if (c) sv_conn_free(c);
    free(hello);
    return EINVAL;
  }
  apply(qp, a, mask);
  qp->epsn = qp->attr.rq_psn;
  qp->state = IBV_QPS_RTR;
  if (qp->has_ece_set) sv_ece_settle(qp);
  if (c) {
    c->qp = qp;
    c->state = path.connecting ? SV_CONNECTING : SV_UP;
    sv_conn_queue(c, hello);
    qp->out = c;
    if (sv_conn_watch(c)) sv_conn_kill(c);
  }
  pthread_mutex_unlock(&qp->lock);
  return 0;
}

static int to_rts(struct sv_qp *qp, const struct ibv_qp_attr *a, int mask) {
  pthread_mutex_lock(&qp->lock);
  if (qp->state != IBV_QPS_RTR) {
    pthread_mutex_unlock(&qp->lock);
    return EINVAL;
  }
  apply(qp, a, mask);
  qp->next_psn = qp->attr.sq_psn;
  qp->retries_left = qp->attr.retry_cnt;
  qp->rnr_left = qp->attr.rnr_retry;
  qp->ack_ns = sv_qp_ack_timeout_ns(qp);
  qp->state = IBV_QPS_RTS;
  pthread_mutex_unlock(&qp->lock);
  return 0;
}

static int transition(struct sv_qp *qp, enum ibv_qp_state cur, enum ibv_qp_state to,
                      const struct ibv_qp_attr *a, int mask) {
  if (to == IBV_QPS_RTR && cur == IBV_QPS_INIT) return to_rtr(qp, a, mask);
  if (to == IBV_QPS_RTS && cur == IBV_QPS_RTR) return to_rts(qp, a, mask);
  int err = 0;
  pthread_mutex_lock(&qp->lock);
  if (to == IBV_QPS_RESET) {
    sv_qp_reset(qp);
  } else if (to == IBV_QPS_ERR) {
    sv_qp_error(qp, -1);
  } else if (qp->state != cur) {
    err = EINVAL; /* went to ERR meanwhile */
  } else {
    apply(qp, a, mask);
    qp->state = to;
  }
  pthread_mutex_unlock(&qp->lock);
  return err;
}

SV_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask) {
  struct sv_qp *qp = (struct sv_qp *)ibqp;
  pthread_mutex_lock(&qp->modify_lock);
  pthread_mutex_lock(&qp->lock);
  enum ibv_qp_state cur = qp->state;
  enum ibv_qp_state to = attr_mask & Q(STATE) ? attr->qp_state : cur;
  int err = check_mask(cur, to, attr_mask);
  if (!err) err = check_values(qp, attr, attr_mask);
  pthread_mutex_unlock(&qp->lock);
  if (!err && (attr_mask & Q(STATE))) err = sv_fault_modify(qp->ctx->dev->ibdev.name, to);
  if (!err) err = transition(qp, cur, to, attr, attr_mask);
  if (!err && (attr_mask & Q(STATE))) ibqp->state = to;
  sv_log("qp 0x%x modify %s -> %s: %s", ibqp->qp_num, sv_qp_state_name(cur), sv_qp_state_name(to),
         err ? strerror(err) : "ok");
  pthread_mutex_unlock(&qp->modify_lock);
  if (err) errno = err;
  return err;
}
