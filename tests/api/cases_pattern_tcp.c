/* SPDX-License-Identifier: Apache-2.0 */
/* Call patterns NCCL uses that a plain send/receive does not exercise:
 *  - a peer's clean close after its data was delivered fails nothing on
 *    this side: a request whose bytes are through completes, on the send
 *    side and on the receive side. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"

enum { MSG = 5000 };

static int test_until(struct side *s, void *req, int *size, int timeout_ms) {
  long long end = ms_now() + timeout_ms;
  int done = 0, r = 0;
  *size = -1;
  while (!done && ms_now() < end) {
    r = netload_test(&s->nl, req, &done, size);
    if (r) return r;
  }
  return done ? 0 : -2;
}

/* isend until it takes the message: over RDMA it returns no request
 * until the receiver's receive is posted (its clear-to-send). */
static int isend_retry(struct side *s, void *comm, void *data, size_t size, void *mh, void **req) {
  long long end = ms_now() + 10000;
  int r;
  *req = NULL;
  do r = netload_isend(&s->nl, comm, data, size, 7, mh, req);
  while (!r && !*req && ms_now() < end);
  return r ? r : *req ? 0 : -2;
}

/* Two messages each way posted; the sender's first completes, the
 * receiver takes both and closes; 5 ms later the sender's second must be
 * done with its size, as NCCL's Socket transport reports it. */
void case_send_done_after_clean_close(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  uint8_t *buf = malloc(2 * MSG);
  void *mh = NULL, *req[2] = {NULL, NULL};
  netload_reg_mr(&s->nl, comm, buf, 2 * MSG, NCCL_PTR_HOST, &mh);
  int size;
  if (s->role == ROLE_SEND) {
    for (int i = 0; i < 2; i++) {
      fill_pattern(buf + i * MSG, MSG, 40 + i);
      CHECK(isend_retry(s, comm, buf + i * MSG, MSG, mh, &req[i]) == 0, "isend %d", i);
    }
    int r = req[0] ? test_until(s, req[0], &size, 10000) : -1;
    CHECK(r == 0 && size == MSG, "send 0: test returned %d, size %d", r, size);
    ctl_sync(s); /* the receiver has both messages and closed */
    usleep(5000);
    r = req[1] ? test_until(s, req[1], &size, 10000) : -1;
    CHECK(r == 0 && size == MSG,
          "send 1, delivered before the receiver's clean close: test returned %d, size %d (done, "
          "size %d expected)",
          r, size, MSG);
    netload_dereg_mr(&s->nl, comm, mh);
    netload_close_send(&s->nl, comm);
  } else {
    for (int i = 0; i < 2; i++) {
      void *p = buf + i * MSG;
      size_t cap = MSG;
      int tag = 7;
      CHECK(netload_irecv(&s->nl, comm, 1, &p, &cap, &tag, &mh, &req[i]) == 0 && req[i], "irecv %d",
            i);
    }
    for (int i = 0; i < 2; i++) {
      int r = req[i] ? test_until(s, req[i], &size, 10000) : -1;
      CHECK(r == 0 && size == MSG, "receive %d: test returned %d, size %d", i, r, size);
      CHECK(check_pattern(buf + i * MSG, MSG, 40 + i) == MSG, "receive %d: data differs", i);
    }
    netload_dereg_mr(&s->nl, comm, mh);
    netload_close_recv(&s->nl, comm);
    ctl_sync(s);
  }
  CHECK(log_count(NCCL_LOG_WARN, "") == 0, "a clean close drew a warning: %s",
        log_find(NCCL_LOG_WARN, ""));
  ctl_sync(s);
  free(buf);
  side_close(s);
}

/* The mirror: both messages arrive (the sender's requests are done and
 * the receiver has not tested yet), the sender closes; the receiver's
 * tests must then return done with the data. Sizes: one on the control
 * socket, one striped over the data sockets. A third receive is posted
 * ahead, as NCCL posts them: it never gets a message, and only its own
 * test fails, naming the sender's close. */
void case_recv_done_after_clean_close(struct side *s) {
  /* message i at offs[i]; the third receive is posted ahead, no message */
  static const size_t sizes[3] = {MSG, 256 << 10, 4096}, offs[3] = {0, MSG, MSG + (256 << 10)};
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  size_t total = offs[2] + sizes[2];
  uint8_t *buf = malloc(total);
  void *mh = NULL, *req[3] = {NULL, NULL, NULL};
  netload_reg_mr(&s->nl, comm, buf, total, NCCL_PTR_HOST, &mh);
  int size;
  if (s->role == ROLE_RECV) {
    for (int i = 0; i < 3; i++) {
      void *p = buf + offs[i];
      size_t cap = sizes[i];
      int tag = 7;
      CHECK(netload_irecv(&s->nl, comm, 1, &p, &cap, &tag, &mh, &req[i]) == 0 && req[i], "irecv %d",
            i);
    }
    ctl_sync(s); /* posted */
    ctl_sync(s); /* the sender's requests are done and it closed */
    usleep(5000);
    for (int i = 0; i < 2; i++) {
      int r = req[i] ? test_until(s, req[i], &size, 10000) : -1;
      CHECK(r == 0 && (size_t)size == sizes[i],
            "receive %d of %zu bytes, sent before the sender's clean close: test returned %d, "
            "size %d (done expected)",
            i, sizes[i], r, size);
      CHECK(check_pattern(buf + offs[i], sizes[i], 50 + i) == sizes[i], "receive %d: data differs",
            i);
    }
    CHECK(log_count(NCCL_LOG_WARN, "") == 0, "the delivered receives drew a warning: %s",
          log_find(NCCL_LOG_WARN, ""));
    int r = req[2] ? test_until(s, req[2], &size, 10000) : -1;
    CHECK(r == ncclRemoteError, "the receive posted ahead: test returned %d (ncclRemoteError)", r);
    const char *w = log_find(NCCL_LOG_WARN, "");
    CHECK(w && strstr(w, "closed"), "its failure must name the sender's close: %s", w);
    netload_dereg_mr(&s->nl, comm, mh);
    netload_close_recv(&s->nl, comm);
  } else {
    ctl_sync(s);
    for (int i = 0; i < 2; i++) {
      fill_pattern(buf + offs[i], sizes[i], 50 + i);
      CHECK(isend_retry(s, comm, buf + offs[i], sizes[i], mh, &req[i]) == 0, "isend %d", i);
    }
    for (int i = 0; i < 2; i++) {
      int r = req[i] ? test_until(s, req[i], &size, 10000) : -1;
      CHECK(r == 0 && (size_t)size == sizes[i], "send %d: test returned %d, size %d", i, r, size);
    }
    netload_dereg_mr(&s->nl, comm, mh);
    netload_close_send(&s->nl, comm);
    ctl_sync(s);
    CHECK(log_count(NCCL_LOG_WARN, "") == 0, "a clean close drew a warning: %s",
          log_find(NCCL_LOG_WARN, ""));
  }
  ctl_sync(s);
  free(buf);
  side_close(s);
}
