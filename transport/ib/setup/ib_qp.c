/* SPDX-License-Identifier: Apache-2.0 */
/* RC queue pairs: creation and every state transition, each one logged with
 * its attributes, its duration and its result (INFO and an event). A
 * failure comes back as an errno with its cause and fix in the why-buffer;
 * the caller reports it once (RDMA setup in both sides' verdict, the flush
 * queue pair in its own WARN). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/events.h"
#include "common/knobs.h"
#include "common/log.h"
#include "transport/ib/dev/ib.h"
#include "transport/sock.h"

int ib_qp_create(struct ib_qp *q, struct ib_dev *d, struct ibv_cq *cq, int send_wr, int recv_wr,
                 const char *peer, char *why, size_t cap) {
  memset(q, 0, sizeof(*q));
  q->dev = d;
  snprintf(q->peer, sizeof(q->peer), "%s", peer);
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof(a));
  a.send_cq = a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = (uint32_t)send_wr;
  a.cap.max_recv_wr = (uint32_t)recv_wr;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  q->qp = d->v->create_qp(d->pd, &a);
  if (!q->qp) {
    int err = errno ? errno : EIO;
    snprintf(why, cap,
             "device %s: creating an RC queue pair for the connection with %s failed: %s%s",
             d->label, peer, strerror(err),
             err == ENOMEM ? ". The locked-memory limit is too low: 'ulimit -l unlimited' "
                             "(containers: --ulimit memlock=-1)"
                           : "");
    return err;
  }
  q->state = IBV_QPS_RESET;
  return 0;
}

static void gid_str(const uint8_t *g, char *buf, size_t cap) {
  char t[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, g, t, sizeof(t));
  snprintf(buf, cap, "%s", t);
}

/* One modify with its log line and event. */
static int transition(struct ib_qp *q, struct ibv_qp_attr *attr, int mask, const char *attrs) {
  enum ibv_qp_state from = q->state, to = attr->qp_state;
  int64_t t0 = now_ns();
  int err = q->dev->v->modify_qp(q->qp, attr, mask);
  long long us = (long long)((now_ns() - t0) / 1000);
  if (err < 0) err = errno ? errno : EINVAL; /* some providers return -1 with errno */
  if (!err) q->state = to;
  INFO(LOG_NET, "device %s qp 0x%x: %s -> %s (%s) in %lld us: %s%s%s", q->dev->label, q->qp->qp_num,
       verbs_qp_state_str(from), verbs_qp_state_str(to), attrs, us, err ? strerror(err) : "ok",
       err ? " " : "", err ? errno_name(err) : "");
  struct ev e;
  ev_begin(&e, "qp_transition");
  ev_str(&e, "device", q->dev->td->name);
  ev_int(&e, "port", q->dev->td->ib_port);
  ev_int(&e, "qp", q->qp->qp_num);
  ev_str(&e, "peer", q->peer);
  ev_str(&e, "from", verbs_qp_state_str(from));
  ev_str(&e, "to", verbs_qp_state_str(to));
  ev_str(&e, "attrs", attrs);
  ev_int(&e, "us", us);
  ev_int(&e, "errno", err);
  ev_str(&e, "result", err ? errno_name(err) : "ok");
  ev_end(&e);
  return err;
}

int ib_qp_init(struct ib_qp *q, int access, char *why, size_t cap) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = (uint16_t)transport_prefs()->ib_pkey;
  a.port_num = (uint8_t)q->dev->td->ib_port;
  a.qp_access_flags = (unsigned)access;
  char attrs[160];
  snprintf(attrs, sizeof(attrs), "port %d, pkey_index %u, access 0x%x", a.port_num, a.pkey_index,
           access);
  int err =
    transition(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, attrs);
  if (err)
    snprintf(why, cap, "device %s qp 0x%x: RESET -> INIT failed: %s (%s)%s", q->dev->label,
             q->qp->qp_num, strerror(err), errno_name(err),
             err == EINVAL ? ". NCCL_IB_PKEY is an index into the port's P_Key table (RoCE uses "
                             "0), not a P_Key value"
                           : "");
  return err;
}

int ib_qp_rtr(struct ib_qp *q, const struct ib_path *p, const struct hello *peer, char *why,
              size_t cap) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = verbs_mtu_enum(p->mtu);
  a.dest_qp_num = p->qpn;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = (uint8_t)q->dev->td->ib_port;
  a.ah_attr.sl = (uint8_t)p->sl;
  a.ah_attr.dlid = (uint16_t)p->dlid;
  char attrs[320], g[64];
  if (p->is_global) {
    a.ah_attr.is_global = 1;
    memcpy(a.ah_attr.grh.dgid.raw, p->dgid, 16);
    a.ah_attr.grh.sgid_index = (uint8_t)p->sgid_index;
    a.ah_attr.grh.hop_limit = 255;
    a.ah_attr.grh.traffic_class = (uint8_t)p->tc;
    gid_str(p->dgid, g, sizeof(g));
    snprintf(attrs, sizeof(attrs),
             "path_mtu %d, dest_qp 0x%x, rq_psn 0, dgid %s, sgid_index %d, hop_limit 255, "
             "traffic_class %d, sl %d, min_rnr_timer 12",
             p->mtu, p->qpn, g, p->sgid_index, p->tc, p->sl);
  } else {
    snprintf(attrs, sizeof(attrs),
             "path_mtu %d, dest_qp 0x%x, rq_psn 0, dlid %d, sl %d, "
             "min_rnr_timer 12",
             p->mtu, p->qpn, p->dlid, p->sl);
  }
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  /* One attempt: the RDMA setup retries a timeout within its budget (ib_setup_res.c). */
  int err = transition(q, &a, mask, attrs);
  if (err) ib_hooks()->rtr_why(q->dev, peer, err, why, cap);
  return err;
}

int ib_qp_rts(struct ib_qp *q, char *why, size_t cap) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTS;
  a.timeout = (uint8_t)transport_prefs()->ib_timeout;
  a.retry_cnt = (uint8_t)transport_prefs()->ib_retry_cnt;
  a.rnr_retry = 7;
  a.sq_psn = 0;
  a.max_rd_atomic = 1;
  char attrs[160];
  snprintf(attrs, sizeof(attrs), "timeout %u (%.3f s per try), retry_cnt %u, rnr_retry 7, sq_psn 0",
           a.timeout, 4.096e-6 * (double)(1ULL << a.timeout), a.retry_cnt);
  int err = transition(q, &a,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                       attrs);
  if (err)
    snprintf(why, cap, "device %s qp 0x%x: RTR -> RTS failed: %s (%s)", q->dev->label,
             q->qp->qp_num, strerror(err), errno_name(err));
  return err;
}

void ib_qp_destroy(struct ib_qp *q) {
  if (q->qp) q->dev->v->destroy_qp(q->qp);
  q->qp = NULL;
}
