/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs holds the application to what a ConnectX (rdma-core's mlx5
 * provider and libibverbs) holds it to, in one process (mlx5_2 <-> mlx5_3
 * of roce-story5, loopback wire): send and receive slots come back only
 * through polled completions, queues and caps are sized and enforced as
 * created, and destroying a QP waits for its events to be acknowledged. */
#include "svt.h"
#include "tap.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const int access_all =
  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

/* A connected pair whose QPs have these caps (reported back in *cap). */
static bool pair_with(struct svt_pair *p, struct ibv_qp_cap *cap) {
  struct svt_qp_opts o = svt_defaults();
  int err = svt_pair_open(p, "mlx5_2", "mlx5_3", 3, 1 << 20, access_all, &o, &o);
  CHECK(err == 0, "opening mlx5_2 <-> mlx5_3: %d", err);
  if (err) return false;
  struct ibv_qp_init_attr ia = {.qp_type = IBV_QPT_RC, .cap = *cap};
  ibv_destroy_qp(p->a.qp);
  ibv_destroy_qp(p->b.qp);
  ia.send_cq = ia.recv_cq = p->a.cq;
  p->a.qp = ibv_create_qp(p->a.pd, &ia);
  ia.cap = *cap;
  ia.send_cq = ia.recv_cq = p->b.cq;
  p->b.qp = ibv_create_qp(p->b.pd, &ia);
  CHECK(p->a.qp && p->b.qp, "create_qp: %s", strerror(errno));
  if (!p->a.qp || !p->b.qp) return false;
  *cap = ia.cap;
  svt_info(&p->a, &p->ia);
  svt_info(&p->b, &p->ib);
  err = svt_connect(&p->a, &p->ib, &o);
  if (!err) err = svt_connect(&p->b, &p->ia, &o);
  CHECK(err == 0, "connect: %d", err);
  return err == 0;
}

/* An 8-byte write of byte v to b's buffer at slot i. */
static int write_slot(struct svt_pair *p, int i, uint8_t v, unsigned flags, uint64_t wr_id) {
  p->a.buf[i * 8] = v;
  return svt_post(p->a.qp, IBV_WR_RDMA_WRITE, p->a.buf + i * 8, 8, p->a.mr->lkey,
                  p->ib.addr + (uint64_t)i * 8, p->ib.rkey, 0, flags, wr_id);
}

/* Slot i landed at b, then a little more for its ACK to reach a. */
static bool landed(struct svt_pair *p, int i, uint8_t v) {
  double t0 = svt_now();
  while (p->b.buf[i * 8] != v && svt_now() - t0 < 5) usleep(1000);
  usleep(50000);
  return p->b.buf[i * 8] == v;
}

/* Posting one more WR than the queue has free slots. */
static int post_one_more(struct svt_pair *p, struct ibv_send_wr **bad_out, bool *bad_ok) {
  struct ibv_sge sge = {(uintptr_t)p->a.buf, 8, p->a.mr->lkey};
  struct ibv_send_wr wr = {.wr_id = 77, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE},
                     *bad = NULL;
  wr.wr.rdma.remote_addr = p->ib.addr;
  wr.wr.rdma.rkey = p->ib.rkey;
  int rc = ibv_post_send(p->a.qp, &wr, &bad);
  *bad_ok = bad == &wr;
  if (bad_out) *bad_out = bad;
  return rc;
}

/* Rule 1: an unsignaled WR's slot comes back when a later signaled WR's
 * completion is polled, not when the WR is acknowledged. */
static void case_sq_release_by_poll(void) {
  struct svt_pair p;
  struct ibv_qp_cap cap = {
    .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1};
  struct ibv_wc wc;
  bool bad_ok;
  if (!pair_with(&p, &cap)) goto out;
  CHECK(cap.max_send_wr == 16, "max_send_wr %u, want 16", cap.max_send_wr);
  int posted = 0;
  for (int i = 0; i < 15; i++) posted += !write_slot(&p, i, 1, 0, (uint64_t)i);
  posted += !write_slot(&p, 15, 1, IBV_SEND_SIGNALED, 99);
  CHECK(posted == 16, "%d of 16 posted", posted);
  CHECK(landed(&p, 15, 1), "the writes did not land");
  CHECK(post_one_more(&p, NULL, &bad_ok) == ENOMEM && bad_ok,
        "16 acknowledged WRs, completion not polled: the 17th must be ENOMEM with bad_wr set");
  CHECK(svt_wait(p.a.cq, &wc, 5000) == 1 && wc.wr_id == 99, "the signaled completion");
  /* All 16 slots are free again: a chain of 17 posts 16 and stops at the 17th. */
  struct ibv_sge sge = {(uintptr_t)p.a.buf, 8, p.a.mr->lkey};
  struct ibv_send_wr wrs[17], *bad = NULL;
  memset(wrs, 0, sizeof wrs);
  for (int i = 0; i < 17; i++) {
    wrs[i] = (struct ibv_send_wr){.wr_id = (uint64_t)(100 + i),
                                  .sg_list = &sge,
                                  .num_sge = 1,
                                  .opcode = IBV_WR_RDMA_WRITE,
                                  .next = i < 16 ? &wrs[i + 1] : NULL};
    wrs[i].wr.rdma.remote_addr = p.ib.addr;
    wrs[i].wr.rdma.rkey = p.ib.rkey;
  }
  wrs[15].send_flags = IBV_SEND_SIGNALED;
  CHECK(ibv_post_send(p.a.qp, wrs, &bad) == ENOMEM && bad == &wrs[16],
        "a chain of 17 on 16 free slots: ENOMEM at the 17th (bad_wr %td)", bad ? bad - wrs : -1);
  CHECK(svt_wait(p.a.cq, &wc, 5000) == 1 && wc.wr_id == 115, "the first 16 were posted");
out:
  svt_pair_close(&p);
}

/* Rule 1, the deadlock it causes: only unsignaled WRs, nothing ever frees
 * their slots; SOFTVERBS_SQ_FREE=ack relaxes that (rxe's behaviour). */
static void case_sq_unsignaled_forever(void) {
  for (int relaxed = 0; relaxed < 2; relaxed++) {
    struct svt_pair p;
    struct ibv_qp_cap cap = {
      .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1};
    struct ibv_wc wc;
    bool bad_ok;
    if (relaxed) setenv("SOFTVERBS_SQ_FREE", "ack", 1);
    if (!pair_with(&p, &cap)) goto next;
    for (int i = 0; i < 16; i++) write_slot(&p, i, 2, 0, (uint64_t)i);
    CHECK(landed(&p, 15, 2), "the writes did not land");
    CHECK(ibv_poll_cq(p.a.cq, 1, &wc) == 0, "an unsignaled WR made a completion");
    int rc = post_one_more(&p, NULL, &bad_ok);
    /* The ACK may come late on a loaded host: relaxed, it frees a slot in time. */
    for (double t0 = svt_now(); relaxed && rc && svt_now() - t0 < 5; usleep(10000))
      rc = post_one_more(&p, NULL, &bad_ok);
    if (relaxed) CHECK(rc == 0, "SOFTVERBS_SQ_FREE=ack: slots free on ACK, got %d", rc);
    else CHECK(rc == ENOMEM && bad_ok, "16 unsignaled WRs hold all 16 slots: got %d", rc);
  next:
    unsetenv("SOFTVERBS_SQ_FREE");
    svt_pair_close(&p);
  }
}

/* Rule 1 for error completions: flushed WRs hold their slots until their
 * flush completions are polled, a completion freeing the slots up to it. */
static void case_sq_flush_counts(void) {
  struct svt_pair p;
  struct ibv_qp_cap cap = {
    .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1};
  struct ibv_wc wc[16];
  bool bad_ok;
  if (!pair_with(&p, &cap)) goto out;
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
  CHECK(!ibv_modify_qp(p.a.qp, &a, IBV_QP_STATE), "to ERR");
  int posted = 0;
  for (int i = 0; i < 16; i++) posted += !write_slot(&p, i, 3, 0, (uint64_t)i);
  CHECK(posted == 16, "posting in ERR: %d of 16", posted);
  usleep(20000);
  CHECK(post_one_more(&p, NULL, &bad_ok) == ENOMEM && bad_ok,
        "16 flushed WRs, nothing polled: the 17th must be ENOMEM");
  int n = ibv_poll_cq(p.a.cq, 8, wc);
  CHECK(n == 8 && wc[0].status == IBV_WC_WR_FLUSH_ERR && wc[7].wr_id == 7, "8 flushes polled: %d",
        n);
  posted = 0;
  for (int i = 0; i < 9; i++) posted += !write_slot(&p, i, 3, 0, (uint64_t)(20 + i));
  CHECK(posted == 8, "8 slots freed by 8 polled flushes, %d posted", posted);
out:
  svt_pair_close(&p);
}

/* Receive slots come back when their completions are polled (mlx5 advances
 * the receive queue's tail in its poll path). */
static void case_rq_release_by_poll(void) {
  struct svt_pair p;
  struct ibv_qp_cap cap = {
    .max_send_wr = 4, .max_recv_wr = 5, .max_send_sge = 1, .max_recv_sge = 1};
  struct ibv_wc wc;
  if (!pair_with(&p, &cap)) goto out;
  CHECK(cap.max_recv_wr == 8 && cap.max_recv_sge == 1, "recv caps %u x %u, want 8 x 1",
        cap.max_recv_wr, cap.max_recv_sge);
  int posted = 0;
  for (int i = 0; i < 9; i++) posted += !svt_post_recv(p.b.qp, p.b.buf, 64, p.b.mr->lkey, 1);
  CHECK(posted == 8, "%d receives posted on 8 slots", posted);
  CHECK(!svt_post(p.a.qp, IBV_WR_SEND, p.a.buf, 8, p.a.mr->lkey, 0, 0, 0, 0, 1), "send");
  double t0 = svt_now();
  while (p.b.buf[0] == 0 && svt_now() - t0 < 5) usleep(1000);
  usleep(20000);
  CHECK(svt_post_recv(p.b.qp, p.b.buf, 64, p.b.mr->lkey, 2) == ENOMEM,
        "a consumed receive whose completion is not polled still holds its slot");
  CHECK(svt_wait(p.b.cq, &wc, 5000) == 1 && wc.status == IBV_WC_SUCCESS, "receive completion");
  CHECK(!svt_post_recv(p.b.qp, p.b.buf, 64, p.b.mr->lkey, 3), "the polled slot is free");
  struct ibv_sge s[2] = {{(uintptr_t)p.b.buf, 8, p.b.mr->lkey}, {(uintptr_t)p.b.buf, 8, 0}};
  struct ibv_recv_wr rwr = {.sg_list = s, .num_sge = 2}, *rbad = NULL;
  CHECK(ibv_post_recv(p.b.qp, &rwr, &rbad) == ENOMEM && rbad == &rwr,
        "a full queue is ENOMEM before the SGE count is looked at, as mlx5_post_recv");
out:
  svt_pair_close(&p);
}

/* Rule 2: SGE counts are checked against the caps, with mlx5's errnos. */
static void case_post_sge_limits(void) {
  struct svt_pair p;
  struct ibv_qp_cap cap = {
    .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1};
  if (!pair_with(&p, &cap)) goto out;
  struct ibv_sge s[2] = {{(uintptr_t)p.a.buf, 8, p.a.mr->lkey},
                         {(uintptr_t)p.a.buf, 8, p.a.mr->lkey}};
  struct ibv_send_wr two = {.wr_id = 2, .sg_list = s, .num_sge = 2, .opcode = IBV_WR_RDMA_WRITE};
  struct ibv_send_wr one = {.wr_id = 1,
                            .sg_list = s,
                            .num_sge = 1,
                            .opcode = IBV_WR_RDMA_WRITE,
                            .send_flags = IBV_SEND_SIGNALED,
                            .next = &two},
                     *bad = NULL;
  one.wr.rdma.remote_addr = two.wr.rdma.remote_addr = p.ib.addr;
  one.wr.rdma.rkey = two.wr.rdma.rkey = p.ib.rkey;
  CHECK(ibv_post_send(p.a.qp, &one, &bad) == ENOMEM && bad == &two,
        "2 SGEs on max_send_sge 1: ENOMEM at that WR, as mlx5_post_send");
  struct ibv_wc wc;
  CHECK(svt_wait(p.a.cq, &wc, 5000) == 1 && wc.wr_id == 1, "the WR before it was posted");
  struct ibv_recv_wr rwr = {.sg_list = s, .num_sge = 2}, *rbad = NULL;
  CHECK(ibv_post_recv(p.b.qp, &rwr, &rbad) == EINVAL && rbad == &rwr,
        "2 SGEs on max_recv_sge 1: EINVAL, as mlx5_post_recv");
out:
  svt_pair_close(&p);
}

struct caps_case {
  struct ibv_qp_cap ask, want; /* want.max_send_wr == 0 && ask.max_send_wr: EINVAL */
  const char *what;
};

static const struct caps_case caps_cases[] = {
  {{100, 100, 1, 1, 0}, {128, 128, 1, 1, 60}, "256-byte WQEs: 128 WRs, 60 bytes inline"},
  {{64, 1, 4, 3, 64}, {102, 1, 4, 4, 124}, "320-byte WQEs; receive SGEs to a power of two"},
  {{1, 1, 1, 1, 828}, {1, 4, 1, 1, 828}, "the most inline data a 1 KiB WQE holds"},
  {{8192, 0, 1, 0, 0}, {8192, 0, 1, 0, 60}, "8192 x 4 blocks: the most the queue takes"},
  {{8192, 0, 5, 0, 0}, {0}, "8192 WRs of 320 bytes: 65536 blocks, above the queue's 32768"},
  {{32768, 0, 1, 0, 0}, {0}, "max_qp_wr WRs of 256 bytes: EINVAL, as on mlx5"},
  {{32769, 0, 1, 0, 0}, {0}, "above max_qp_wr: EINVAL"},
  {{1, 32769, 1, 1, 0}, {0}, "receive above max_qp_wr: EINVAL"},
  {{1, 1, 31, 1, 0}, {0}, "send SGEs above max_sge: EINVAL"},
  {{1, 1, 1, 31, 0}, {0}, "receive SGEs above max_sge: EINVAL"},
  {{1, 1, 1, 1, 829}, {0}, "inline beyond a 1 KiB WQE: EINVAL"},
};

/* Rule 2 at create: device limits are EINVAL, the rest rounded as mlx5 does. */
static void case_create_caps(void) {
  struct svt_ep e;
  if (svt_open(&e, "mlx5_2", 3, 4096, access_all)) {
    CHECK(0, "open mlx5_2");
    svt_close(&e);
    return;
  }
  for (size_t i = 0; i < sizeof caps_cases / sizeof caps_cases[0]; i++) {
    const struct caps_case *c = &caps_cases[i];
    struct ibv_qp_init_attr ia = {
      .send_cq = e.cq, .recv_cq = e.cq, .qp_type = IBV_QPT_RC, .cap = c->ask};
    errno = 0;
    struct ibv_qp *qp = ibv_create_qp(e.pd, &ia);
    if (!c->want.max_send_wr) {
      CHECK(!qp && errno == EINVAL, "%s: %s", c->what, qp ? "created" : strerror(errno));
    } else {
      const struct ibv_qp_cap *g = &ia.cap, *w = &c->want;
      CHECK(qp && g->max_send_wr == w->max_send_wr && g->max_recv_wr == w->max_recv_wr &&
              g->max_send_sge == w->max_send_sge && g->max_recv_sge == w->max_recv_sge &&
              g->max_inline_data == w->max_inline_data,
            "%s: got send %u x %u inline %u, recv %u x %u", c->what, g->max_send_wr,
            g->max_send_sge, g->max_inline_data, g->max_recv_wr, g->max_recv_sge);
    }
    if (qp) ibv_destroy_qp(qp);
  }
  struct ibv_device_attr da;
  ibv_query_device(e.ctx, &da);
  errno = 0;
  CHECK(!ibv_create_cq(e.ctx, da.max_cqe + 1, NULL, NULL, 0) && errno == EINVAL,
        "a CQ above max_cqe: EINVAL");
  struct ibv_cq *cq = ibv_create_cq(e.ctx, 1000, NULL, NULL, 0);
  CHECK(cq && cq->cqe == 1023, "a CQ of 1000 holds 1023 (2^k - 1, as mlx5)");
  if (cq) ibv_destroy_cq(cq);
  svt_close(&e);
}

struct destroyer {
  struct ibv_qp *qp;
  atomic_bool done;
};

static void *destroy_main(void *arg) {
  struct destroyer *d = arg;
  ibv_destroy_qp(d->qp);
  atomic_store(&d->done, true);
  return NULL;
}

/* A write with a bad rkey: b's QP enters ERR with QP_ACCESS_ERR. */
static void access_error(struct svt_pair *p) {
  struct ibv_wc wc;
  svt_post(p->a.qp, IBV_WR_RDMA_WRITE, p->a.buf, 8, p->a.mr->lkey, p->ib.addr, p->ib.rkey ^ 0x100,
           0, IBV_SEND_SIGNALED, 1);
  CHECK(svt_wait(p->a.cq, &wc, 5000) == 1 && wc.status == IBV_WC_REM_ACCESS_ERR, "REM_ACCESS_ERR");
}

static bool readable(int fd, int ms) {
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  return poll(&pfd, 1, ms) == 1;
}

/* Rule 4: ibv_destroy_qp returns only once the events read for the QP are
 * acknowledged; events not read yet are dropped with it. */
static void case_destroy_waits_for_ack(void) {
  struct svt_pair p;
  struct ibv_qp_cap cap = {
    .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1};
  struct ibv_async_event ev;
  if (!pair_with(&p, &cap)) goto out;
  access_error(&p);
  CHECK(readable(p.b.ctx->async_fd, 5000) && !ibv_get_async_event(p.b.ctx, &ev) &&
          ev.event_type == IBV_EVENT_QP_ACCESS_ERR && ev.element.qp == p.b.qp,
        "QP_ACCESS_ERR read");
  struct destroyer d = {.qp = p.b.qp};
  pthread_t t;
  pthread_create(&t, NULL, destroy_main, &d);
  usleep(300000);
  CHECK(!atomic_load(&d.done), "ibv_destroy_qp returned with an event not acknowledged");
  ibv_ack_async_event(&ev);
  pthread_join(t, NULL);
  CHECK(atomic_load(&d.done), "ibv_destroy_qp returns after the acknowledgement");
  /* A fresh QP on b, its event never read: destroy drops it and returns. */
  struct ibv_qp_init_attr ia = {
    .send_cq = p.b.cq, .recv_cq = p.b.cq, .qp_type = IBV_QPT_RC, .cap = cap};
  struct svt_qp_opts o = svt_defaults();
  p.b.qp = ibv_create_qp(p.b.pd, &ia);
  svt_info(&p.b, &p.ib);
  struct ibv_qp_attr ra = {.qp_state = IBV_QPS_RESET};
  ibv_modify_qp(p.a.qp, &ra, IBV_QP_STATE);
  CHECK(!svt_connect(&p.a, &p.ib, &o) && !svt_connect(&p.b, &p.ia, &o), "reconnect");
  access_error(&p);
  CHECK(readable(p.b.ctx->async_fd, 5000), "second event queued");
  ibv_destroy_qp(p.b.qp);
  p.b.qp = NULL;
  CHECK(!readable(p.b.ctx->async_fd, 100), "the destroyed QP's unread event is still readable");
out:
  svt_pair_close(&p);
}

struct cq_destroyer {
  struct ibv_cq *cq;
  atomic_bool done;
};

static void *destroy_cq_main(void *arg) {
  struct cq_destroyer *d = arg;
  ibv_destroy_cq(d->cq);
  atomic_store(&d->done, true);
  return NULL;
}

/* Rule 4 for a CQ, and mlx5's CQ cleaning: a QP destroyed or reset takes
 * its completions out of its CQ; destroy_cq waits for the CQ_ERR ack. */
static void case_cq_clean_and_destroy_wait(void) {
  struct svt_pair p;
  struct ibv_qp_cap cap = {
    .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1};
  struct ibv_wc wc[8];
  struct ibv_async_event ev;
  if (!pair_with(&p, &cap)) goto out;
  write_slot(&p, 0, 5, IBV_SEND_SIGNALED, 1);
  CHECK(landed(&p, 0, 5), "write landed");
  struct ibv_qp_attr ra = {.qp_state = IBV_QPS_RESET};
  CHECK(!ibv_modify_qp(p.a.qp, &ra, IBV_QP_STATE), "to RESET");
  CHECK(ibv_poll_cq(p.a.cq, 8, wc) == 0, "RESET left the QP's completion in its CQ");
  struct ibv_cq *small = ibv_create_cq(p.b.ctx, 1, NULL, NULL, 0);
  struct ibv_qp_init_attr ia = {
    .send_cq = small, .recv_cq = small, .qp_type = IBV_QPT_RC, .cap = cap};
  struct ibv_qp *q = small ? ibv_create_qp(p.b.pd, &ia) : NULL;
  CHECK(q != NULL, "a QP on a 1-entry CQ");
  if (!q) goto out;
  struct ibv_qp_attr ea = {.qp_state = IBV_QPS_ERR};
  ibv_modify_qp(q, &ea, IBV_QP_STATE);
  for (int i = 0; i < 2; i++) svt_post_recv(q, p.b.buf, 8, p.b.mr->lkey, (uint64_t)i);
  CHECK(readable(p.b.ctx->async_fd, 5000) && !ibv_get_async_event(p.b.ctx, &ev) &&
          ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == small,
        "two flushes on a 1-entry CQ: CQ_ERR");
  ibv_destroy_qp(q);
  CHECK(ibv_poll_cq(small, 8, wc) == 0, "destroy_qp left the QP's completion in its CQ");
  struct cq_destroyer d = {.cq = small};
  pthread_t t;
  pthread_create(&t, NULL, destroy_cq_main, &d);
  usleep(300000);
  CHECK(!atomic_load(&d.done), "ibv_destroy_cq returned with CQ_ERR not acknowledged");
  ibv_ack_async_event(&ev);
  pthread_join(t, NULL);
  CHECK(atomic_load(&d.done), "ibv_destroy_cq returns after the acknowledgement");
out:
  svt_pair_close(&p);
}

/* The wait is bounded in tests: the library names the QP and aborts. */
static void case_destroy_unacked_aborts(void) {
  int fds[2];
  if (pipe(fds)) return;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    setenv("SOFTVERBS_ACK_WAIT_MS", "300", 1);
    struct svt_pair p;
    struct ibv_qp_cap cap = {
      .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1};
    struct ibv_async_event ev;
    if (!pair_with(&p, &cap)) _exit(3);
    access_error(&p);
    if (!readable(p.b.ctx->async_fd, 5000) || ibv_get_async_event(p.b.ctx, &ev)) _exit(4);
    ibv_destroy_qp(p.b.qp);
    _exit(0);
  }
  close(fds[1]);
  char msg[1024] = "";
  size_t got = 0;
  ssize_t n;
  while (got < sizeof msg - 1 && (n = read(fds[0], msg + got, sizeof msg - 1 - got)) > 0)
    got += (size_t)n;
  msg[got] = 0;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "child status 0x%x", status);
  CHECK(strstr(msg, "ibv_destroy_qp(qp 0x") && strstr(msg, "never acknowledged"), "message: %s",
        msg);
}

int main(void) {
  svt_use_host("roce-story5");
  TAP_CASE("send slots: freed by the polled signaled completion, not the ACK",
           case_sq_release_by_poll);
  TAP_CASE("send slots: only unsignaled WRs fill the queue for good; SOFTVERBS_SQ_FREE=ack",
           case_sq_unsignaled_forever);
  TAP_CASE("send slots: flush completions free slots when polled", case_sq_flush_counts);
  TAP_CASE("receive slots: freed by the polled completion", case_rq_release_by_poll);
  TAP_CASE("post: SGE counts beyond the caps (ENOMEM send, EINVAL receive)", case_post_sge_limits);
  TAP_CASE("create: device limits EINVAL, caps rounded as mlx5 reports them", case_create_caps);
  TAP_CASE("destroy_qp waits for the ack of a read event; unread events are dropped",
           case_destroy_waits_for_ack);
  TAP_CASE("destroy_qp with an event never acknowledged: named, aborted",
           case_destroy_unacked_aborts);
  TAP_CASE("RESET and destroy_qp clean the CQ; destroy_cq waits for the CQ_ERR ack",
           case_cq_clean_and_destroy_wait);
  return tap_done();
}
