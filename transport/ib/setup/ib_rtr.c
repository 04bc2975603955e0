/* SPDX-License-Identifier: Apache-2.0 */
/* Connecting a connection's queue pairs (RTR, then RTS) with NCCL's retry
 * policy (2.24+): an RTR that times out (ETIMEDOUT: the peer's address
 * did not resolve, often only at first, while neighbour tables and
 * switches learn) is tried again NCCL_IB_MQP_RETRY_CNT times (34), the
 * k-th after k x NCCL_IB_MQP_RETRY_SLEEP_MSEC (100 ms): about a minute in
 * all; NCCL_IB_MQP_RETRY_ALL=1 retries any error. Unlike NCCL, the wait
 * does not block: the setup answers "pending" until the next attempt is
 * due. The first failure is said at once with its diagnosis, so a user
 * sees the cause within a second; the verdict (TCP, or failure) comes when
 * the budget is spent. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "transport/ib/setup/ib_setup.h"
#include "transport/prefs.h"
#include "transport/report.h"
#include "transport/sock.h"

/* What an RTR attempt may take at most (the kernel's resolve timeout is
 * 1 s), for the budget both sides allow. */
#define RTR_ATTEMPT_NS 1500000000LL

static int64_t budget_ns(int64_t cnt, int64_t step_ms) {
  return step_ms * 1000000LL * cnt * (cnt + 1) / 2 + cnt * RTR_ATTEMPT_NS;
}

/* This side's budget, or NCCL's default one if larger: a peer left at
 * the defaults may retry that long while this side waits for its result. */
int64_t ib_rtr_budget_ns(void) {
  int64_t own =
    budget_ns(transport_prefs()->ib_mqp_retry_cnt, transport_prefs()->ib_mqp_retry_sleep_msec);
  int64_t def = budget_ns(34, 100);
  return own > def ? own : def;
}

static bool is_retryable(int err) {
  return err == ETIMEDOUT || transport_prefs()->is_mqp_retry_all;
}

enum ib_grh ib_rtr_path(const struct ib_dev *d, bool is_send, const uint8_t local_gid[16],
                        int local_gid_index, const struct hello *peer, int sl, int tc,
                        struct ib_path *p) {
  const struct topo_dev *t = d->td;
  memset(p, 0, sizeof(*p));
  struct ib_path_ends e = {.is_roce = t->ll != TOPO_LL_IB,
                           .local_mtu = d->mtu,
                           .remote_mtu = peer->ib.mtu,
                           .local_gid = local_gid,
                           .remote_gid = peer->ib.gid,
                           .local_gid_index = local_gid_index, /* repaired or not */
                           .remote_lid = peer->ib.lid,
                           .is_grh_required = d->is_grh_required,
                           .sl = sl,
                           .tc = tc};
  /* NCCL 2.22+: the receiver's queue pairs carry the small clear-to-send
   * writes, which NCCL_IB_FIFO_TC may put in a class of their own. */
  int fifo_tc = (int)transport_prefs()->ib_fifo_tc;
  if (!is_send && fifo_tc >= 0) e.tc = fifo_tc;
  return ib_path_address(&e, p);
}

static void path_of(struct ib_setup *s, struct ib_path *p) {
  /* the local GID as our hello announced it (repaired or not) */
  if (ib_rtr_path(s->dev, s->is_send, s->mine.ib.gid, s->mine.ib.gid_index, &s->peer, s->sl, s->tc,
                  p) == IB_GRH_OTHER_SUBNET_NO_FLID &&
      !s->rtr_qp && !s->rtr_total)
    WARN("connection with %s: %s is on another InfiniBand subnet than %s, but its GID carries no "
         "FLID to route by: trying its LID %d, which only a router that maps it reaches. "
         "Configure FLIDs on the routers (or keep the job within one subnet)",
         s->peer_desc, s->peer.ib.dev, s->dev->label, s->peer.ib.lid);
}

/* A failed RTR of queue pair i: EINPROGRESS with the next attempt
 * scheduled, or err when the budget is spent (why says after how long). */
static int retry_later(struct ib_setup *s, int i, int err, char *why, size_t cap) {
  int64_t now = now_ns();
  int cnt = (int)transport_prefs()->ib_mqp_retry_cnt;
  if (!s->rtr_total) s->rtr_first_ns = now;
  if (!is_retryable(err) || s->rtr_retries >= cnt) {
    if (s->rtr_total) {
      size_t o = strlen(why);
      snprintf(why + o, cap - o, " (after %d retries over %.1f s: NCCL_IB_MQP_RETRY_CNT=%d)",
               s->rtr_total, (double)(now - s->rtr_first_ns) / 1e9, cnt);
    }
    return err;
  }
  if (!s->rtr_total) {
    char key[400];
    snprintf(key, sizeof(key), "rtrretry|%s|%s", s->peer.host, s->dev->td->name);
    if (report_first(key))
      WARN("connection from %s to %s: RTR of qp 0x%x failed: %s. Retrying for up to %lld s as "
           "NCCL does (NCCL_IB_MQP_RETRY_CNT=%d; NCCL_IB_MQP_RETRY_CNT=0 decides at once)",
           s->dev->label, s->peer_desc, s->qps[i].qp->qp_num, why,
           (long long)(budget_ns(cnt, transport_prefs()->ib_mqp_retry_sleep_msec) / 1000000000LL),
           cnt);
  }
  s->rtr_retries++;
  s->rtr_total++;
  int64_t wait = transport_prefs()->ib_mqp_retry_sleep_msec * 1000000LL * s->rtr_retries;
  s->rtr_retry_at = now + wait;
  INFO(LOG_NET, "connection from %s to %s: RTR of qp 0x%x: %s; retry %d of %d in %lld ms",
       s->dev->label, s->peer_desc, s->qps[i].qp->qp_num, strerror(err), s->rtr_retries, cnt,
       (long long)(wait / 1000000));
  return EINPROGRESS;
}

int ib_res_connect(struct ib_setup *s, char *why, size_t cap) {
  if (s->rtr_retry_at && now_ns() < s->rtr_retry_at) return EINPROGRESS;
  s->rtr_retry_at = 0;
  struct ib_path p;
  path_of(s, &p);
  for (; s->rtr_qp < s->nqps; s->rtr_qp++) {
    int i = s->rtr_qp;
    struct hello port_peer; /* striped: the peer's port of this queue pair */
    if (s->ndevs > 1) ib_stripe_path(s, i, &port_peer, &p);
    const struct hello *peer = s->ndevs > 1 ? &port_peer : &s->peer;
    p.qpn = s->peer_info.qpns[i];
    if (!s->rtr_retries)
      ib_ece_apply(s->dev, &s->qps[i], &s->peer, s->is_ece_waiting ? &s->peer_status : NULL);
    int err = ib_qp_rtr(&s->qps[i], &p, peer, why, cap);
    if (err) return retry_later(s, i, err, why, cap);
    err = ib_qp_rts(&s->qps[i], why, cap);
    if (err) return err;
    s->rtr_retries = 0;
  }
  if (s->rtr_total)
    INFO(LOG_NET, "connection from %s to %s: RTR succeeded after %d retr%s over %.1f s",
         s->dev->label, s->peer_desc, s->rtr_total, s->rtr_total == 1 ? "y" : "ies",
         (double)(now_ns() - s->rtr_first_ns) / 1e9);
  ib_compat_rtr_ok(s->dev, &s->peer, s->peer_desc);
  return 0;
}
