/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs QP state machine: the RC transitions and attribute masks of
 * ibv_modify_qp(3), posting in each state, the modify_qp fault hook, and
 * the object rules (EBUSY, EINVAL) around QPs. */
#include "svt.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define M(x) IBV_QP_##x
static const int init_mask = M(STATE) | M(PKEY_INDEX) | M(PORT) | M(ACCESS_FLAGS);
static const int rtr_mask = M(STATE) | M(AV) | M(PATH_MTU) | M(DEST_QPN) | M(RQ_PSN) |
                            M(MAX_DEST_RD_ATOMIC) | M(MIN_RNR_TIMER);
static const int rts_mask =
  M(STATE) | M(TIMEOUT) | M(RETRY_CNT) | M(RNR_RETRY) | M(SQ_PSN) | M(MAX_QP_RD_ATOMIC);

static struct svt_ep ep, peer;
static struct svt_info peer_info;

static struct ibv_qp_attr init_attr(void) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                          .port_num = 1,
                          .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE};
  return a;
}

static struct ibv_qp_attr rtr_attr(void) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
                          .path_mtu = IBV_MTU_4096,
                          .dest_qp_num = peer_info.qpn,
                          .max_dest_rd_atomic = 1,
                          .min_rnr_timer = 12};
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = peer_info.gid;
  a.ah_attr.grh.sgid_index = 3;
  a.ah_attr.port_num = 1;
  return a;
}

static struct ibv_qp_attr rts_attr(void) {
  struct ibv_qp_attr a = {
    .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1};
  return a;
}

static int modify(struct ibv_qp_attr a, int mask) { return ibv_modify_qp(ep.qp, &a, mask); }

static enum ibv_qp_state state(void) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  ibv_query_qp(ep.qp, &a, M(STATE), &ia);
  return a.qp_state;
}

static int post_send(void) {
  return svt_post(ep.qp, IBV_WR_RDMA_WRITE, ep.buf, 8, ep.mr->lkey, peer_info.addr, peer_info.rkey,
                  0, 0, 1);
}

static void case_reset_to_init(void) {
  struct ibv_qp_attr a = init_attr();
  CHECK(state() == IBV_QPS_RESET && ep.qp->state == IBV_QPS_RESET, "a new QP is in RESET");
  CHECK(modify(rtr_attr(), rtr_mask) == EINVAL, "RESET -> RTR");
  CHECK(modify(a, init_mask & ~M(PORT)) == EINVAL, "INIT without PORT");
  CHECK(modify(a, init_mask | M(AV)) == EINVAL, "INIT with AV, not allowed there");
  a.port_num = 2;
  CHECK(modify(a, init_mask) == EINVAL, "port 2 of a one-port device");
  a = init_attr();
  a.pkey_index = 9;
  CHECK(modify(a, init_mask) == EINVAL, "pkey index beyond the table");
  a = init_attr();
  a.qp_access_flags = IBV_ACCESS_MW_BIND << 4;
  CHECK(modify(a, init_mask) == EINVAL, "unknown access flag");
  CHECK(svt_post_recv(ep.qp, ep.buf, 8, ep.mr->lkey, 1) == EINVAL, "post_recv in RESET");
  CHECK(modify(init_attr(), init_mask) == 0 && state() == IBV_QPS_INIT, "RESET -> INIT");
  CHECK(ep.qp->state == IBV_QPS_INIT, "ibv_qp.state follows modify_qp");
}

static void case_init(void) {
  struct ibv_qp_attr a = init_attr();
  a.qp_access_flags |= IBV_ACCESS_REMOTE_READ;
  CHECK(modify(a, M(ACCESS_FLAGS)) == 0, "INIT -> INIT, new access flags");
  CHECK(modify(a, M(ACCESS_FLAGS) | M(TIMEOUT)) == EINVAL, "INIT -> INIT with TIMEOUT");
  CHECK(modify(rts_attr(), rts_mask) == EINVAL, "INIT -> RTS");
  CHECK(post_send() == EINVAL, "post_send in INIT");
  CHECK(svt_post_recv(ep.qp, ep.buf, 8, ep.mr->lkey, 1) == 0, "post_recv in INIT is allowed");
}

static void case_init_to_rtr(void) {
  struct ibv_qp_attr a = rtr_attr();
  CHECK(modify(a, rtr_mask & ~M(MIN_RNR_TIMER)) == EINVAL, "RTR without MIN_RNR_TIMER");
  CHECK(modify(a, rtr_mask | M(TIMEOUT)) == EINVAL, "RTR with TIMEOUT (an RTS attribute)");
  a.ah_attr.is_global = 0;
  CHECK(modify(a, rtr_mask) == EINVAL, "RoCE without a GRH");
  a = rtr_attr();
  a.ah_attr.grh.sgid_index = 5;
  CHECK(modify(a, rtr_mask) == EINVAL, "an empty source GID");
  a = rtr_attr();
  a.path_mtu = 6;
  CHECK(modify(a, rtr_mask) == EINVAL, "path_mtu 6");
  a = rtr_attr();
  a.max_dest_rd_atomic = 17;
  CHECK(modify(a, rtr_mask) == EINVAL, "max_dest_rd_atomic 17");
  CHECK(state() == IBV_QPS_INIT, "failed modifies leave INIT");
  CHECK(modify(rtr_attr(), rtr_mask | M(PKEY_INDEX)) == 0 && state() == IBV_QPS_RTR, "INIT -> RTR");
  CHECK(post_send() == EINVAL, "post_send in RTR");
}

static void case_rtr_to_rts(void) {
  struct ibv_qp_attr a = rts_attr();
  CHECK(modify(a, rts_mask & ~M(RETRY_CNT)) == EINVAL, "RTS without RETRY_CNT");
  a.timeout = 32;
  CHECK(modify(a, rts_mask) == EINVAL, "timeout 32");
  a = rts_attr();
  a.retry_cnt = 8;
  CHECK(modify(a, rts_mask) == EINVAL, "retry_cnt 8");
  a = rts_attr();
  a.cur_qp_state = IBV_QPS_INIT;
  CHECK(modify(a, rts_mask | M(CUR_STATE)) == EINVAL, "CUR_STATE that is not the current state");
  CHECK(modify(rts_attr(), rts_mask) == 0 && state() == IBV_QPS_RTS, "RTR -> RTS");
  struct ibv_qp_attr q;
  struct ibv_qp_init_attr qi;
  ibv_query_qp(ep.qp, &q, rts_mask | rtr_mask, &qi);
  CHECK(q.timeout == 14 && q.retry_cnt == 7 && q.dest_qp_num == peer_info.qpn &&
          q.path_mtu == IBV_MTU_4096 && q.port_num == 1 && q.ah_attr.grh.sgid_index == 3,
        "query_qp returns what was set");
  /* 256 WRs of 4 SGEs or 64 bytes inline: 320-byte WQEs, the queue rounded
   * up to 128 KiB, as mlx5 sizes it: 409 WRs, 124 bytes inline. */
  CHECK(qi.send_cq == ep.cq && qi.cap.max_send_wr == 409 && qi.cap.max_inline_data == 124 &&
          qi.qp_type == IBV_QPT_RC,
        "init attributes: max_send_wr %u max_inline_data %u", qi.cap.max_send_wr,
        qi.cap.max_inline_data);
  a = rts_attr();
  a.min_rnr_timer = 3;
  CHECK(modify(a, M(MIN_RNR_TIMER)) == 0, "RTS -> RTS, MIN_RNR_TIMER");
  CHECK(modify(a, M(PATH_MTU)) == EINVAL, "RTS -> RTS, PATH_MTU");
  CHECK(modify(init_attr(), M(STATE)) == EINVAL, "RTS -> INIT");
}

static void case_err_and_reset(void) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
  struct ibv_wc wc;
  CHECK(modify(a, M(STATE) | M(TIMEOUT)) == EINVAL, "ERR takes STATE only");
  CHECK(modify(a, M(STATE)) == 0 && state() == IBV_QPS_ERR, "RTS -> ERR");
  CHECK(svt_wait(ep.cq, &wc, 2000) == 1 && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 1,
        "the receive posted in INIT is flushed");
  CHECK(post_send() == 0, "post_send in ERR is accepted");
  CHECK(svt_wait(ep.cq, &wc, 2000) == 1 && wc.status == IBV_WC_WR_FLUSH_ERR, "and flushed");
  CHECK(modify(rts_attr(), M(STATE)) == EINVAL, "ERR -> RTS");
  a.qp_state = IBV_QPS_RESET;
  CHECK(modify(a, M(STATE)) == 0 && state() == IBV_QPS_RESET, "ERR -> RESET");
  CHECK(modify(init_attr(), init_mask) == 0, "RESET -> INIT again");
}

/* SOFTVERBS_FAIL_MODIFY=RTR:ETIMEDOUT:*:2 fails the next two RTRs only. */
static void case_fail_modify_hook(void) {
  setenv("SOFTVERBS_FAIL_MODIFY", "INIT:EPERM:mlx5_3,RTR:ETIMEDOUT:*:2", 1);
  CHECK(modify(rtr_attr(), rtr_mask) == ETIMEDOUT && errno == ETIMEDOUT, "first RTR");
  CHECK(state() == IBV_QPS_INIT, "state after a failed RTR");
  CHECK(modify(rtr_attr(), rtr_mask) == ETIMEDOUT, "second RTR");
  CHECK(modify(rtr_attr(), rtr_mask) == 0, "third RTR");
  unsetenv("SOFTVERBS_FAIL_MODIFY");
}

static void case_objects(void) {
  struct ibv_qp_init_attr ia = {
    .send_cq = ep.cq,
    .recv_cq = ep.cq,
    .qp_type = IBV_QPT_UD,
    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
  CHECK(!ibv_create_qp(ep.pd, &ia) && errno == EOPNOTSUPP, "UD QP");
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_sge = 31;
  CHECK(!ibv_create_qp(ep.pd, &ia) && errno == EINVAL, "max_send_sge 31");
  CHECK(ibv_destroy_cq(ep.cq) == EBUSY, "destroying a CQ a QP uses");
  CHECK(ibv_dealloc_pd(ep.pd) == EBUSY, "deallocating a PD with an MR");
  CHECK(!ibv_reg_mr(ep.pd, ep.buf, 64, IBV_ACCESS_REMOTE_WRITE) && errno == EINVAL,
        "remote write needs local write");
  CHECK(!ibv_create_cq(ep.ctx, 0, NULL, NULL, 0) && errno == EINVAL, "a CQ of 0 entries");
  /* More QPs than one listener has slots: numbers stay unique and 24-bit. */
  struct ibv_qp_init_attr small = {
    .send_cq = ep.cq, .recv_cq = ep.cq, .qp_type = IBV_QPT_RC, .cap = {.max_send_wr = 1}};
  static struct ibv_qp *qps[300];
  int n = 0;
  for (int i = 0; i < 300; i++) {
    qps[i] = ibv_create_qp(ep.pd, &small);
    bool fresh = qps[i] && qps[i]->qp_num && qps[i]->qp_num <= 0xffffff;
    for (int j = 0; fresh && j < i; j++) fresh = !qps[j] || qps[j]->qp_num != qps[i]->qp_num;
    n += fresh;
  }
  for (int i = 0; i < 300; i++)
    if (qps[i]) ibv_destroy_qp(qps[i]);
  CHECK(n == 300, "%d of 300 QPs created", n);
}

int main(void) {
  svt_use_host("roce-story5");
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  if (svt_open(&ep, "mlx5_2", 3, 4096, access) || svt_open(&peer, "mlx5_3", 3, 4096, access)) {
    tap_begin();
    CHECK(0, "cannot open mlx5_2 and mlx5_3 of the roce-story5 fixture");
    tap_end("setup");
    return tap_done();
  }
  svt_info(&peer, &peer_info);
  TAP_CASE("RESET -> INIT: required and allowed attributes", case_reset_to_init);
  TAP_CASE("INIT: INIT -> INIT, no RTS, no sends", case_init);
  TAP_CASE("INIT -> RTR: masks, address vector, values", case_init_to_rtr);
  TAP_CASE("RTR -> RTS and RTS -> RTS", case_rtr_to_rts);
  TAP_CASE("ERR flushes, RESET starts over", case_err_and_reset);
  TAP_CASE("fault hook SOFTVERBS_FAIL_MODIFY", case_fail_modify_hook);
  TAP_CASE("objects: QP types and caps, EBUSY, MR and CQ rules, QP numbers", case_objects);
  svt_close(&ep);
  svt_close(&peer);
  return tap_done();
}
