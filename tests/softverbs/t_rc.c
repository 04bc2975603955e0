/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs RC data path in one process: two devices of one fixture host
 * (mlx5_2 <-> mlx5_3 of roce-story5), loopback wire. Operations, ordering,
 * signaling, inline data, SGE lists, completion channels, threads. */
#include "svt.h"
#include "tap.h"

#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { SIZE = 4 << 20 };
static const int access_all =
  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

static bool open_pair(struct svt_pair *p) {
  struct svt_qp_opts o = svt_defaults();
  int err = svt_pair_open(p, "mlx5_2", "mlx5_3", 3, SIZE, access_all, &o, &o);
  CHECK(err == 0, "opening and connecting mlx5_2 <-> mlx5_3: %d", err);
  return err == 0;
}

static bool wait_ok(struct ibv_cq *cq, struct ibv_wc *wc, const char *what) {
  int n = svt_wait(cq, wc, 5000);
  CHECK(n == 1, "%s: no completion", what);
  if (n == 1) CHECK(wc->status == IBV_WC_SUCCESS, "%s: %s", what, ibv_wc_status_str(wc->status));
  return n == 1 && wc->status == IBV_WC_SUCCESS;
}

static void case_send_recv(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  if (!open_pair(&p)) goto out;
  memset(p.a.buf, 0x5a, 4096);
  CHECK(!svt_post_recv(p.b.qp, p.b.buf, 8192, p.b.mr->lkey, 11), "post_recv");
  CHECK(!svt_post(p.a.qp, IBV_WR_SEND_WITH_IMM, p.a.buf, 4096, p.a.mr->lkey, 0, 0, 0xabcd,
                  IBV_SEND_SIGNALED, 22),
        "post_send");
  if (wait_ok(p.b.cq, &wc, "recv")) {
    CHECK(wc.wr_id == 11 && wc.opcode == IBV_WC_RECV && wc.byte_len == 4096,
          "wr %llu opcode %d len %u", (unsigned long long)wc.wr_id, wc.opcode, wc.byte_len);
    CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xabcd, "imm 0x%x flags 0x%x",
          ntohl(wc.imm_data), wc.wc_flags);
    CHECK(wc.qp_num == p.b.qp->qp_num && wc.src_qp == p.a.qp->qp_num, "qp_num 0x%x src_qp 0x%x",
          wc.qp_num, wc.src_qp);
    CHECK(p.b.buf[0] == 0x5a && p.b.buf[4095] == 0x5a && p.b.buf[4096] == 0, "payload");
  }
  if (wait_ok(p.a.cq, &wc, "send"))
    CHECK(wc.wr_id == 22 && wc.opcode == IBV_WC_SEND, "send wc: wr %llu opcode %d",
          (unsigned long long)wc.wr_id, wc.opcode);
out:
  svt_pair_close(&p);
}

/* Unsignaled writes make no completion; the data of every write is in
 * place when a later write-with-imm completes at the receiver. */
static void case_write_order(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  if (!open_pair(&p)) goto out;
  for (int i = 0; i < 16; i++) memset(p.a.buf + i * 65536, i + 1, 65536);
  CHECK(!svt_post_recv(p.b.qp, NULL, 0, 0, 5), "post_recv");
  for (int i = 0; i < 16; i++)
    CHECK(!svt_post(p.a.qp, IBV_WR_RDMA_WRITE, p.a.buf + i * 65536, 65536, p.a.mr->lkey,
                    p.ib.addr + i * 65536, p.ib.rkey, 0, 0, (uint64_t)i),
          "write %d", i);
  CHECK(!svt_post(p.a.qp, IBV_WR_RDMA_WRITE_WITH_IMM, NULL, 0, 0, p.ib.addr, p.ib.rkey, 77,
                  IBV_SEND_SIGNALED, 99),
        "write with imm");
  if (wait_ok(p.b.cq, &wc, "imm")) {
    CHECK(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && ntohl(wc.imm_data) == 77 && wc.byte_len == 0,
          "opcode %d imm %u len %u", wc.opcode, ntohl(wc.imm_data), wc.byte_len);
    for (int i = 0; i < 16; i++)
      CHECK(p.b.buf[i * 65536] == i + 1 && p.b.buf[i * 65536 + 65535] == i + 1,
            "chunk %d not in place", i);
  }
  if (wait_ok(p.a.cq, &wc, "signaled write"))
    CHECK(wc.wr_id == 99, "only the signaled WR completes, got %llu", (unsigned long long)wc.wr_id);
  CHECK(ibv_poll_cq(p.a.cq, 1, &wc) == 0, "an unsignaled WR completed");
out:
  svt_pair_close(&p);
}

static void case_read(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  if (!open_pair(&p)) goto out;
  for (size_t i = 0; i < (1 << 20); i++) p.b.buf[i] = (uint8_t)(i * 31);
  CHECK(!svt_post(p.a.qp, IBV_WR_RDMA_READ, p.a.buf + 4096, 1 << 20, p.a.mr->lkey, p.ib.addr,
                  p.ib.rkey, 0, IBV_SEND_SIGNALED, 3),
        "post read");
  if (wait_ok(p.a.cq, &wc, "read")) {
    CHECK(wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 1 << 20, "opcode %d len %u", wc.opcode,
          wc.byte_len);
    CHECK(!memcmp(p.a.buf + 4096, p.b.buf, 1 << 20), "read data differs");
  }
out:
  svt_pair_close(&p);
}

/* Inline data is copied at post time: the buffer may change right after. */
static void case_inline(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  uint8_t src[64];
  if (!open_pair(&p)) goto out;
  memset(src, 0x11, sizeof src);
  CHECK(!svt_post_recv(p.b.qp, p.b.buf, 64, p.b.mr->lkey, 1), "post_recv");
  CHECK(!svt_post(p.a.qp, IBV_WR_SEND, src, 64, 0xdead, 0, 0, 0,
                  IBV_SEND_SIGNALED | IBV_SEND_INLINE, 2),
        "inline send (no lkey needed)");
  memset(src, 0x22, sizeof src);
  if (wait_ok(p.b.cq, &wc, "recv"))
    CHECK(p.b.buf[0] == 0x11 && p.b.buf[63] == 0x11, "got 0x%x", p.b.buf[0]);
  /* The cap is what create_qp reported (64 asked, 124 given, as mlx5 rounds). */
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr qi;
  ibv_query_qp(p.a.qp, &qa, IBV_QP_CAP, &qi);
  struct ibv_send_wr *bad;
  struct ibv_sge big = {
    .addr = (uintptr_t)p.a.buf, .length = qi.cap.max_inline_data + 1, .lkey = p.a.mr->lkey};
  struct ibv_send_wr wr = {
    .sg_list = &big, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_INLINE};
  CHECK(qi.cap.max_inline_data == 124, "max_inline_data %u", qi.cap.max_inline_data);
  CHECK(ibv_post_send(p.a.qp, &wr, &bad) == ENOMEM && bad == &wr,
        "inline beyond max_inline_data must be ENOMEM, as mlx5_post_send answers");
out:
  svt_pair_close(&p);
}

static void case_sge_lists(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  struct ibv_send_wr *bad;
  struct ibv_recv_wr *rbad;
  if (!open_pair(&p)) goto out;
  for (int i = 0; i < 3000; i++) p.a.buf[i] = (uint8_t)i;
  struct ibv_sge s[3] = {{(uintptr_t)p.a.buf, 1000, p.a.mr->lkey},
                         {(uintptr_t)p.a.buf + 1000, 1000, p.a.mr->lkey},
                         {(uintptr_t)p.a.buf + 2000, 1000, p.a.mr->lkey}};
  struct ibv_sge r[2] = {{(uintptr_t)p.b.buf + 8192, 1500, p.b.mr->lkey},
                         {(uintptr_t)p.b.buf, 4096, p.b.mr->lkey}};
  struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = r, .num_sge = 2};
  struct ibv_send_wr wr = {
    .wr_id = 2, .sg_list = s, .num_sge = 3, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED};
  CHECK(!ibv_post_recv(p.b.qp, &rwr, &rbad) && !ibv_post_send(p.a.qp, &wr, &bad), "post");
  if (wait_ok(p.b.cq, &wc, "recv")) {
    CHECK(wc.byte_len == 3000, "len %u", wc.byte_len);
    CHECK(!memcmp(p.b.buf + 8192, p.a.buf, 1500) && !memcmp(p.b.buf, p.a.buf + 1500, 1500),
          "scatter wrong");
  }
out:
  svt_pair_close(&p);
}

/* A completion channel wakes on a solicited completion when armed for
 * solicited ones only, and on any completion otherwise. */
static void case_channel(void) {
  struct svt_pair p;
  struct ibv_wc wc;
  struct ibv_cq *got;
  void *cq_ctx;
  int token;
  if (!open_pair(&p)) goto out;
  struct ibv_comp_channel *ch = ibv_create_comp_channel(p.b.ctx);
  struct ibv_cq *cq = ch ? ibv_create_cq(p.b.ctx, 16, &token, ch, 0) : NULL;
  CHECK(cq != NULL, "channel and CQ");
  if (!cq) goto out;
  /* A second QP on b with the channel's CQ, connected to a fresh QP on a. */
  struct ibv_qp_init_attr ia = {
    .send_cq = cq,
    .recv_cq = cq,
    .qp_type = IBV_QPT_RC,
    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
  struct ibv_qp *qb = ibv_create_qp(p.b.pd, &ia);
  struct svt_qp_opts o = svt_defaults();
  struct svt_ep eb = p.b;
  eb.qp = qb;
  struct svt_info ib_new;
  svt_info(&eb, &ib_new);
  ibv_destroy_qp(p.a.qp);
  ia.send_cq = ia.recv_cq = p.a.cq;
  p.a.qp = ibv_create_qp(p.a.pd, &ia);
  struct svt_info ia_new;
  svt_info(&p.a, &ia_new);
  CHECK(!svt_connect(&p.a, &ib_new, &o) && !svt_connect(&eb, &ia_new, &o), "connect");
  struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
  CHECK(!ibv_req_notify_cq(cq, 1), "arm for solicited");
  svt_post_recv(qb, p.b.buf, 64, p.b.mr->lkey, 1);
  svt_post_recv(qb, p.b.buf, 64, p.b.mr->lkey, 2);
  svt_post(p.a.qp, IBV_WR_SEND, p.a.buf, 8, p.a.mr->lkey, 0, 0, 0, 0, 1);
  svt_wait(cq, &wc, 5000);
  CHECK(poll(&pfd, 1, 100) == 0, "an unsolicited completion woke a solicited-only arm");
  svt_post(p.a.qp, IBV_WR_SEND, p.a.buf, 8, p.a.mr->lkey, 0, 0, 0, IBV_SEND_SOLICITED, 2);
  CHECK(poll(&pfd, 1, 5000) == 1, "the solicited completion did not wake the channel");
  CHECK(!ibv_get_cq_event(ch, &got, &cq_ctx) && got == cq && cq_ctx == &token, "get_cq_event");
  ibv_ack_cq_events(cq, 1);
  CHECK(cq->comp_events_completed == 1, "acked %u", cq->comp_events_completed);
  CHECK(ibv_destroy_comp_channel(ch) == EBUSY, "a channel with a CQ must not be destroyed");
  ibv_destroy_qp(qb);
  ibv_destroy_cq(cq);
  CHECK(!ibv_destroy_comp_channel(ch), "destroy channel");
out:
  svt_pair_close(&p);
}

/* NCCL's flush: a QP connected to itself READs from its own memory. */
static void case_self_qp(void) {
  struct svt_ep e;
  struct svt_info me;
  struct ibv_wc wc;
  struct svt_qp_opts o = svt_defaults();
  CHECK(!svt_open(&e, "mlx5_2", 3, 8192, access_all), "open");
  svt_info(&e, &me);
  CHECK(!svt_connect(&e, &me, &o), "connect to itself");
  e.buf[100] = 42;
  CHECK(!svt_post(e.qp, IBV_WR_RDMA_READ, e.buf + 4096, 1, e.mr->lkey, me.addr + 100, me.rkey, 0,
                  IBV_SEND_SIGNALED, 1),
        "post read");
  if (wait_ok(e.cq, &wc, "self read")) CHECK(e.buf[4096] == 42, "read %d", e.buf[4096]);
  svt_close(&e);
}

struct worker {
  struct svt_ep ep;
  struct svt_info peer;
  bool server;
  int err;
};

static void *work(void *arg) {
  struct worker *w = arg;
  w->err = svt_pingpong(&w->ep, &w->peer, w->server, 200, 16384);
  return NULL;
}

/* Four QP pairs on the same two contexts, eight threads at once. */
static void case_threads(void) {
  enum { N = 4 };
  struct worker w[2 * N];
  pthread_t t[2 * N];
  struct svt_qp_opts o = svt_defaults();
  memset(w, 0, sizeof w);
  bool ok = true;
  for (int i = 0; i < N && ok; i++) {
    ok = !svt_open(&w[2 * i].ep, "mlx5_2", 3, 65536, access_all) &&
         !svt_open(&w[2 * i + 1].ep, "mlx5_3", 3, 65536, access_all);
    svt_info(&w[2 * i].ep, &w[2 * i + 1].peer);
    svt_info(&w[2 * i + 1].ep, &w[2 * i].peer);
    ok = ok && !svt_connect(&w[2 * i].ep, &w[2 * i].peer, &o) &&
         !svt_connect(&w[2 * i + 1].ep, &w[2 * i + 1].peer, &o);
    w[2 * i].server = true;
  }
  CHECK(ok, "setup");
  for (int i = 0; ok && i < 2 * N; i++) pthread_create(&t[i], NULL, work, &w[i]);
  for (int i = 0; ok && i < 2 * N; i++) {
    pthread_join(t[i], NULL);
    CHECK(w[i].err == 0, "thread %d failed", i);
  }
  for (int i = 0; i < 2 * N; i++) svt_close(&w[i].ep);
}

/* An InfiniBand pair, addressed by LID (no GRH). */
static void case_ib_lid(void) {
  struct svt_pair p;
  struct svt_qp_opts o = svt_defaults();
  setenv("NCCL_DIAG_SYSFS_ROOT", svt_fixture("ib-hdr"), 1);
  int err = svt_pair_open(&p, "mlx5_0", "mlx5_1", -1, 1 << 20, access_all, &o, &o);
  CHECK(err == 0 && p.ia.lid == 0x11 && p.ib.lid == 0x12, "open: %d, lids %u %u", err, p.ia.lid,
        p.ib.lid);
  if (!err) {
    struct ibv_wc wc;
    memset(p.a.buf, 9, 4096);
    svt_post_recv(p.b.qp, p.b.buf, 4096, p.b.mr->lkey, 1);
    svt_post(p.a.qp, IBV_WR_SEND, p.a.buf, 4096, p.a.mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED, 1);
    if (wait_ok(p.b.cq, &wc, "recv by lid"))
      CHECK(p.b.buf[4095] == 9 && wc.slid == 0x11, "slid %u", wc.slid);
  }
  svt_pair_close(&p);
  setenv("NCCL_DIAG_SYSFS_ROOT", svt_fixture("roce-story5"), 1);
}

int main(void) {
  svt_use_host("roce-story5");
  TAP_CASE("send with immediate: payload and completion fields", case_send_recv);
  TAP_CASE("unsignaled writes, then write-with-imm: in order, one completion", case_write_order);
  TAP_CASE("rdma read of 1 MiB", case_read);
  TAP_CASE("inline send copied at post time; too long is ENOMEM", case_inline);
  TAP_CASE("gather three SGEs, scatter into two", case_sge_lists);
  TAP_CASE("completion channel: solicited-only arm", case_channel);
  TAP_CASE("a qp connected to itself reads its own memory (flush)", case_self_qp);
  TAP_CASE("eight threads on four qp pairs", case_threads);
  TAP_CASE("infiniband pair addressed by lid", case_ib_lid);
  return tap_done();
}
