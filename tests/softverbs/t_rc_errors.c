/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs RC error paths in one process (mlx5_2 <-> mlx5_3 of roce-story5,
 * loopback wire): remote access and invalid request NAKs, RNR, local
 * protection and length errors, flushes, CQ overrun, lost peers, PSNs and
 * the completion-error hook. */
#include "svt.h"
#include "tap.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>

static const int access_all =
  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

static bool open_with(struct svt_pair *p, int mr_access, const struct svt_qp_opts *oa,
                      const struct svt_qp_opts *ob) {
  int err = svt_pair_open(p, "mlx5_2", "mlx5_3", 3, 1 << 20, mr_access, oa, ob);
  CHECK(err == 0, "opening and connecting mlx5_2 <-> mlx5_3: %d", err);
  return err == 0;
}

static bool open_pair(struct svt_pair *p) {
  struct svt_qp_opts o = svt_defaults();
  return open_with(p, access_all, &o, &o);
}

static enum ibv_wc_status next_status(struct ibv_cq *cq, struct ibv_wc *wc) {
  return svt_wait(cq, wc, 5000) == 1 ? wc->status : (enum ibv_wc_status) - 1;
}

static enum ibv_qp_state state_of(struct ibv_qp *qp) {
  struct ibv_qp_attr a;
  struct ibv_qp_init_attr ia;
  ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
  return a.qp_state;
}

/* An async event within 5 s (ibv_get_async_event itself blocks). */
static bool async_event(struct ibv_context *ctx, struct ibv_async_event *ev) {
  struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
  return poll(&pfd, 1, 5000) == 1 && !ibv_get_async_event(ctx, ev);
}

/* Only wr_id, status, qp_num and vendor_err are valid on error: the rest is left zero. */
static void check_error_wc(const struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_status want,
                           struct ibv_qp *qp) {
  CHECK(wc->status == want, "status %s, want %s", ibv_wc_status_str(wc->status),
        ibv_wc_status_str(want));
  CHECK(wc->wr_id == wr_id && wc->qp_num == qp->qp_num, "wr_id %llu qp_num 0x%x",
        (unsigned long long)wc->wr_id, wc->qp_num);
  CHECK(wc->opcode == 0 && wc->byte_len == 0 && wc->wc_flags == 0,
        "fields beyond the valid ones are set");
}

/* A write with an rkey the responder does not know: REM_ACCESS_ERR; the
 * next WR is flushed; the responder QP enters ERR with an async event. */
static void case_bad_rkey(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  if (!open_pair(&p)) goto out;
  svt_post_recv(p.b.qp, p.b.buf, 64, p.b.mr->lkey, 5);
  CHECK(!svt_post(p.a.qp, IBV_WR_RDMA_WRITE, p.a.buf, 4096, p.a.mr->lkey, p.ib.addr,
                  p.ib.rkey ^ 0x100, 0, IBV_SEND_SIGNALED, 1),
        "post bad write");
  CHECK(
    !svt_post(p.a.qp, IBV_WR_RDMA_WRITE, p.a.buf, 64, p.a.mr->lkey, p.ib.addr, p.ib.rkey, 0, 0, 2),
    "post");
  next_status(p.a.cq, &wc);
  check_error_wc(&wc, 1, IBV_WC_REM_ACCESS_ERR, p.a.qp);
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 2,
        "unsignaled WR after it: %s", ibv_wc_status_str(wc.status));
  CHECK(state_of(p.a.qp) == IBV_QPS_ERR, "requester qp not in ERR");
  struct ibv_async_event ev;
  CHECK(async_event(p.b.ctx, &ev), "async event");
  CHECK(ev.event_type == IBV_EVENT_QP_ACCESS_ERR && ev.element.qp == p.b.qp, "event %s",
        ibv_event_type_str(ev.event_type));
  ibv_ack_async_event(&ev);
  CHECK(next_status(p.b.cq, &wc) == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 5, "responder's receive: %s",
        ibv_wc_status_str(wc.status));
  CHECK(state_of(p.b.qp) == IBV_QPS_ERR, "responder qp not in ERR");
out:
  svt_pair_close(&p);
}

static void case_out_of_bounds(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  if (!open_pair(&p)) goto out;
  svt_post(p.a.qp, IBV_WR_RDMA_WRITE, p.a.buf, 4096, p.a.mr->lkey, p.ib.addr + (1 << 20) - 100,
           p.ib.rkey, 0, IBV_SEND_SIGNALED, 1);
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_REM_ACCESS_ERR, "write past the MR: %s",
        ibv_wc_status_str(wc.status));
out:
  svt_pair_close(&p);
}

static void case_read_not_allowed(void) {
  struct svt_pair p;
  struct svt_qp_opts o = svt_defaults();
  struct ibv_wc wc;
  if (!open_with(&p, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &o, &o)) goto out;
  svt_post(p.a.qp, IBV_WR_RDMA_READ, p.a.buf, 64, p.a.mr->lkey, p.ib.addr, p.ib.rkey, 0,
           IBV_SEND_SIGNALED, 1);
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_REM_ACCESS_ERR, "read of an MR without remote read: %s",
        ibv_wc_status_str(wc.status));
out:
  svt_pair_close(&p);
}

static void case_qp_access(void) {
  struct svt_pair p;
  struct svt_qp_opts oa = svt_defaults(), ob = oa;
  struct ibv_wc wc;
  ob.access = IBV_ACCESS_LOCAL_WRITE; /* b's QP takes no remote writes */
  if (!open_with(&p, access_all, &oa, &ob)) goto out;
  svt_post(p.a.qp, IBV_WR_RDMA_WRITE, p.a.buf, 64, p.a.mr->lkey, p.ib.addr, p.ib.rkey, 0,
           IBV_SEND_SIGNALED, 1);
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_REM_INV_REQ_ERR,
        "write to a qp without remote write: %s", ibv_wc_status_str(wc.status));
out:
  svt_pair_close(&p);
}

/* No receive posted: RNR NAKs until one is (rnr_retry 7 waits forever). */
static void case_rnr_then_ok(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  if (!open_pair(&p)) goto out;
  svt_post(p.a.qp, IBV_WR_SEND, p.a.buf, 64, p.a.mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED, 1);
  CHECK(svt_wait(p.a.cq, &wc, 50) == 0, "completed without a receive");
  svt_post_recv(p.b.qp, p.b.buf, 64, p.b.mr->lkey, 9);
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_SUCCESS, "send after RNR: %s",
        ibv_wc_status_str(wc.status));
  CHECK(next_status(p.b.cq, &wc) == IBV_WC_SUCCESS && wc.wr_id == 9, "receive");
out:
  svt_pair_close(&p);
}

static void case_rnr_exceeded(void) {
  struct svt_pair p;
  struct svt_qp_opts oa = svt_defaults(), ob = oa;
  struct ibv_wc wc;
  oa.rnr_retry = 2;
  ob.min_rnr_timer = 1; /* 10 us */
  if (!open_with(&p, access_all, &oa, &ob)) goto out;
  double t0 = svt_now();
  svt_post(p.a.qp, IBV_WR_RDMA_WRITE_WITH_IMM, NULL, 0, 0, p.ib.addr, p.ib.rkey, 1,
           IBV_SEND_SIGNALED, 1);
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_RNR_RETRY_EXC_ERR, "write-with-imm, no receive: %s",
        ibv_wc_status_str(wc.status));
  CHECK(svt_now() - t0 < 1.0, "took %.3f s", svt_now() - t0);
out:
  svt_pair_close(&p);
}

static void case_recv_too_small(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  if (!open_pair(&p)) goto out;
  svt_post_recv(p.b.qp, p.b.buf, 100, p.b.mr->lkey, 4);
  svt_post(p.a.qp, IBV_WR_SEND, p.a.buf, 200, p.a.mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED, 1);
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_REM_INV_REQ_ERR, "requester: %s",
        ibv_wc_status_str(wc.status));
  next_status(p.b.cq, &wc);
  check_error_wc(&wc, 4, IBV_WC_LOC_LEN_ERR, p.b.qp);
out:
  svt_pair_close(&p);
}

static void case_bad_lkey(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  if (!open_pair(&p)) goto out;
  svt_post(p.a.qp, IBV_WR_RDMA_WRITE, p.a.buf, 64, p.a.mr->lkey + 0x100, p.ib.addr, p.ib.rkey, 0, 0,
           1);
  next_status(p.a.cq, &wc);
  check_error_wc(&wc, 1, IBV_WC_LOC_PROT_ERR, p.a.qp);
  CHECK(wc.vendor_err == 0x51, "vendor_err 0x%x", wc.vendor_err);
  CHECK(!svt_post(p.a.qp, IBV_WR_SEND, p.a.buf, 8, p.a.mr->lkey, 0, 0, 0, 0, 2),
        "posting in ERR is allowed");
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 2 && wc.vendor_err == 0xf9,
        "WR posted in ERR: %s", ibv_wc_status_str(wc.status));
out:
  svt_pair_close(&p);
}

/* A CQ of 4 holds 7 (mlx5 rounds to 2^k - 1); the 8th completion overruns
 * it: CQ_ERR, the CQ keeps its 7 entries and takes no more, and the QP that
 * uses it enters ERR. */
static void case_cq_overrun(void) {
  struct svt_pair p;
  struct ibv_wc wc[10];
  if (!open_pair(&p)) goto out;
  struct ibv_cq *small = ibv_create_cq(p.a.ctx, 4, NULL, NULL, 0);
  CHECK(small && small->cqe == 7, "cqe %d, want 7", small ? small->cqe : -1);
  struct ibv_qp_init_attr ia = {
    .send_cq = small,
    .recv_cq = small,
    .qp_type = IBV_QPT_RC,
    .cap = {.max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
  struct svt_ep ea = p.a;
  struct svt_qp_opts o = svt_defaults();
  struct svt_info ia_new;
  ea.qp = ibv_create_qp(p.a.pd, &ia);
  svt_info(&ea, &ia_new);
  ibv_destroy_qp(p.b.qp);
  p.b.qp = NULL;
  ia.send_cq = ia.recv_cq = p.b.cq;
  p.b.qp = ibv_create_qp(p.b.pd, &ia);
  svt_info(&p.b, &p.ib);
  CHECK(!svt_connect(&ea, &p.ib, &o) && !svt_connect(&p.b, &ia_new, &o), "connect");
  for (int i = 0; i < 8; i++)
    svt_post(ea.qp, IBV_WR_RDMA_WRITE, p.a.buf, 8, p.a.mr->lkey, p.ib.addr, p.ib.rkey, 0,
             IBV_SEND_SIGNALED, 1);
  struct ibv_async_event ev;
  CHECK(async_event(p.a.ctx, &ev) && ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == small,
        "CQ_ERR event");
  ibv_ack_async_event(&ev);
  double t0 = svt_now();
  while (state_of(ea.qp) != IBV_QPS_ERR && svt_now() - t0 < 5) continue;
  CHECK(state_of(ea.qp) == IBV_QPS_ERR, "the QP on the overrun CQ is %d, not ERR", state_of(ea.qp));
  svt_post(ea.qp, IBV_WR_RDMA_WRITE, p.a.buf, 8, p.a.mr->lkey, p.ib.addr, p.ib.rkey, 0,
           IBV_SEND_SIGNALED, 9);
  CHECK(ibv_poll_cq(small, 10, wc) == 7, "the CQ holds its 7 entries, and nothing after");
  CHECK(ibv_destroy_cq(small) == EBUSY, "a CQ in use must not be destroyed");
  ibv_destroy_qp(ea.qp);
  CHECK(!ibv_destroy_cq(small), "destroy cq");
out:
  svt_pair_close(&p);
}

/* The peer QP is gone: nothing answers, RETRY_EXC_ERR after (7+1) x 4 ms. */
static void case_peer_qp_destroyed(void) {
  struct svt_pair p;
  struct svt_qp_opts o = svt_defaults();
  struct ibv_wc wc;
  o.timeout = 10;
  if (!open_with(&p, access_all, &o, &o)) goto out;
  ibv_destroy_qp(p.b.qp);
  p.b.qp = NULL;
  double t0 = svt_now();
  svt_post(p.a.qp, IBV_WR_RDMA_WRITE, p.a.buf, 64, p.a.mr->lkey, p.ib.addr, p.ib.rkey, 0,
           IBV_SEND_SIGNALED, 1);
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_RETRY_EXC_ERR && wc.vendor_err == 0x81, "%s vendor 0x%x",
        ibv_wc_status_str(wc.status), wc.vendor_err);
  double dt = svt_now() - t0, bound = 8 * 4.096e-6 * 1024;
  CHECK(dt >= 0.9 * bound && dt < bound + 0.5, "after %.3f s, bound %.3f s", dt, bound);
out:
  svt_pair_close(&p);
}

/* A QP reached through a GID that is not its port's drops the traffic. */
static void case_wrong_gid(void) {
  struct svt_pair p;
  struct svt_qp_opts o = svt_defaults();
  struct ibv_wc wc;
  o.timeout = 8;
  o.retry_cnt = 1;
  if (!open_with(&p, access_all, &o, &o)) goto out;
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
  ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE);
  struct svt_info wrong = p.ib;
  wrong.gid.raw[15] ^= 1; /* ::ffff:10.1.3.4, nobody's */
  CHECK(!svt_connect(&p.a, &wrong, &o), "connect");
  svt_post(p.a.qp, IBV_WR_RDMA_WRITE, p.a.buf, 64, p.a.mr->lkey, p.ib.addr, p.ib.rkey, 0,
           IBV_SEND_SIGNALED, 1);
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_RETRY_EXC_ERR, "%s", ibv_wc_status_str(wc.status));
out:
  svt_pair_close(&p);
}

/* PSNs are honoured: with the responder expecting 5, requests 0..4 look
 * like duplicates, are acknowledged and not executed, as on a HCA. */
static void case_psn(void) {
  struct svt_pair p;
  struct svt_qp_opts oa = svt_defaults(), ob = oa;
  struct ibv_wc wc;
  ob.rq_psn = 5;
  if (!open_with(&p, access_all, &oa, &ob)) goto out;
  for (int i = 0; i < 6; i++) {
    p.a.buf[i] = (uint8_t)(i + 1);
    svt_post(p.a.qp, IBV_WR_RDMA_WRITE, p.a.buf + i, 1, p.a.mr->lkey, p.ib.addr + (uint64_t)i,
             p.ib.rkey, 0, IBV_SEND_SIGNALED, (uint64_t)i);
  }
  for (int i = 0; i < 6; i++) CHECK(next_status(p.a.cq, &wc) == IBV_WC_SUCCESS, "write %d", i);
  CHECK(!memcmp(p.b.buf, "\0\0\0\0\0\6", 6), "only psn 5 was executed: %d %d", p.b.buf[0],
        p.b.buf[5]);
out:
  svt_pair_close(&p);
}

static void case_wc_error_hook(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  setenv("SOFTVERBS_WC_ERROR", "RETRY_EXC_ERR:2", 1);
  if (!open_pair(&p)) goto out;
  for (int i = 0; i < 4; i++)
    svt_post(p.a.qp, IBV_WR_RDMA_WRITE, p.a.buf, 8, p.a.mr->lkey, p.ib.addr, p.ib.rkey, 0,
             IBV_SEND_SIGNALED, (uint64_t)i);
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_SUCCESS && next_status(p.a.cq, &wc) == IBV_WC_SUCCESS,
        "two succeed");
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_RETRY_EXC_ERR && wc.wr_id == 2 && wc.vendor_err == 0x81,
        "third: %s vendor 0x%x", ibv_wc_status_str(wc.status), wc.vendor_err);
  CHECK(next_status(p.a.cq, &wc) == IBV_WC_WR_FLUSH_ERR, "fourth: %s",
        ibv_wc_status_str(wc.status));
out:
  unsetenv("SOFTVERBS_WC_ERROR");
  svt_pair_close(&p);
}

int main(void) {
  svt_use_host("roce-story5");
  TAP_CASE("write with a bad rkey: REM_ACCESS_ERR, flush, responder QP_ACCESS_ERR", case_bad_rkey);
  TAP_CASE("write past the end of the MR: REM_ACCESS_ERR", case_out_of_bounds);
  TAP_CASE("read of an MR without remote read: REM_ACCESS_ERR", case_read_not_allowed);
  TAP_CASE("write to a qp without remote write: REM_INV_REQ_ERR", case_qp_access);
  TAP_CASE("send before the receive is posted: RNR, then success", case_rnr_then_ok);
  TAP_CASE("rnr_retry exhausted: RNR_RETRY_EXC_ERR", case_rnr_exceeded);
  TAP_CASE("send larger than the receive: REM_INV_REQ_ERR / LOC_LEN_ERR", case_recv_too_small);
  TAP_CASE("bad lkey: LOC_PROT_ERR; posting in ERR flushes", case_bad_lkey);
  TAP_CASE("cq overrun: CQ_ERR event, the CQ keeps its entries", case_cq_overrun);
  TAP_CASE("peer qp destroyed: RETRY_EXC_ERR in bound", case_peer_qp_destroyed);
  TAP_CASE("peer reached through a wrong gid: RETRY_EXC_ERR", case_wrong_gid);
  TAP_CASE("psn mismatch: early requests are duplicates", case_psn);
  TAP_CASE("fault hook SOFTVERBS_WC_ERROR", case_wc_error_hook);
  return tap_done();
}
