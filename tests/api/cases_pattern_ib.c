/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA data path under NCCL's calling patterns: several queue pairs
 * over thousands of messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"

enum { CAP = 65536 };

struct pbuf {
  uint8_t *p;
  void *mh;
};

static void pbuf_open(struct side *s, void *comm, struct pbuf *b, size_t n) {
  b->p = calloc(1, n);
  b->mh = NULL;
  CHECK(netload_reg_mr(&s->nl, comm, b->p, n, NCCL_PTR_HOST, &b->mh) == 0, "regMr");
}

static void pbuf_close(struct side *s, void *comm, struct pbuf *b) {
  netload_dereg_mr(&s->nl, comm, b->mh);
  free(b->p);
}

/* isend until a request comes (NCCL's loop): the call's result. */
static int send_tag(struct side *s, void *comm, void *data, size_t size, int tag, void *mh,
                    void **req) {
  long long end = ms_now() + 20000;
  int r;
  *req = NULL;
  do r = netload_isend(&s->nl, comm, data, size, tag, mh, req);
  while (!r && !*req && ms_now() < end);
  return r;
}

static void *recv_tags(struct side *s, void *comm, struct pbuf *b, int n, const int *tags) {
  void *data[8], *mhs[8], *req = NULL;
  size_t caps[8];
  int tg[8];
  for (int i = 0; i < n; i++)
    data[i] = b->p + (size_t)i * CAP, mhs[i] = b->mh, caps[i] = CAP, tg[i] = tags[i];
  int r = netload_irecv(&s->nl, comm, n, data, caps, tg, mhs, &req);
  CHECK(r == 0 && req, "irecv of %d buffers: result %d", n, r);
  return req;
}

/* Test a request until it is done or fails: its result. */
static int settle(struct side *s, void *req, int *sizes, int ms) {
  long long end = ms_now() + ms;
  int done = 0, r = 0, sz[64];
  do r = netload_test(&s->nl, req, &done, sz);
  while (!r && !done && ms_now() < end);
  for (int i = 0; sizes && i < 8; i++) sizes[i] = sz[i];
  return r ? r : done ? 0 : -2;
}

/* 2,400 messages, 16 in flight, on a connection of several queue pairs:
 * single receives of varied sizes (0 to 60 KB), every 8th a grouped one. */
static void many_on_qps(struct side *s, const char *qps, const char *split) {
  enum { MSGS = 2400, WIN = 16 };
  setenv("NCCL_IB_QPS_PER_CONNECTION", qps, 1);
  setenv("NCCL_IB_SPLIT_DATA_ON_QPS", split, 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  char want[40];
  snprintf(want, sizeof(want), "RDMA, %s queue pairs", qps);
  CHECK(log_find(NCCL_LOG_INFO, want), "not %s queue pairs", qps);
  struct pbuf b;
  pbuf_open(s, comm, &b, (size_t)WIN * 2 * CAP);
  void *reqs[WIN][2] = {{0}};
  int bad = 0, failed = 0;
  for (int m = 0; m < MSGS + WIN && !failed && bad < 3; m++) {
    int w = m % WIN;
    if (m >= WIN) { /* complete message m - WIN, then reuse its window slot */
      int k = m - WIN, grouped = k % 8 == 7, got[8];
      for (int j = 0; j < (s->role == ROLE_SEND && grouped ? 2 : 1); j++)
        if (settle(s, reqs[w][j], got, 30000)) failed = 1;
      int sz = (k * 7919) % 60001;
      if (!failed && s->role == ROLE_RECV && !grouped &&
          (got[0] != sz ||
           check_pattern(b.p + (size_t)w * 2 * CAP, (size_t)sz, (unsigned)k) != (size_t)sz))
        bad++;
      if (!failed && s->role == ROLE_RECV && grouped &&
          (got[0] != 128 || got[1] != sz % 1000 ||
           check_pattern(b.p + (size_t)w * 2 * CAP + CAP, (size_t)(sz % 1000), (unsigned)k) !=
             (size_t)(sz % 1000)))
        bad++;
    }
    if (m >= MSGS || failed) continue;
    int grouped = m % 8 == 7, sz = (m * 7919) % 60001;
    uint8_t *p = b.p + (size_t)w * 2 * CAP;
    int tags[2] = {3, 4};
    if (s->role == ROLE_RECV) {
      struct pbuf at = {p, b.mh};
      reqs[w][0] = recv_tags(s, comm, &at, grouped ? 2 : 1, tags);
      failed |= !reqs[w][0];
    } else if (!grouped) {
      fill_pattern(p, (size_t)sz, (unsigned)m);
      failed |= send_tag(s, comm, p, (size_t)sz, 3, b.mh, &reqs[w][0]) || !reqs[w][0];
    } else {
      fill_pattern(p + CAP, (size_t)(sz % 1000), (unsigned)m);
      failed |= send_tag(s, comm, p + CAP, (size_t)(sz % 1000), 4, b.mh, &reqs[w][1]) ||
                !reqs[w][1] || send_tag(s, comm, p, 128, 3, b.mh, &reqs[w][0]) || !reqs[w][0];
    }
  }
  CHECK(!failed, "%s queue pairs, split %s: a message failed (see the log)", qps, split);
  CHECK(!bad, "%s queue pairs, split %s: %d messages with wrong sizes or data", qps, split, bad);
  const char *w = log_find(NCCL_LOG_WARN, "failed");
  CHECK(!w, "a failure: %s", w);
  ctl_sync(s);
  pbuf_close(s, comm, &b);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

void case_ib_qps2_one(struct side *s) { many_on_qps(s, "2", "0"); }

void case_ib_qps4_one(struct side *s) { many_on_qps(s, "4", "0"); }

void case_ib_qps2_split(struct side *s) { many_on_qps(s, "2", "1"); }

void case_ib_qps4_split(struct side *s) { many_on_qps(s, "4", "1"); }
