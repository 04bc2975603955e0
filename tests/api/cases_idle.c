/* SPDX-License-Identifier: Apache-2.0 */
/* test() with nothing to do sleeps instead of spinning: NCCL's proxy
 * thread calls it in a tight loop, and on a small host that spin takes the
 * CPU the threads moving data need. The receiver polls a posted receive
 * for a while before the sender sends, and its own thread's CPU time over
 * that wait must be a small share of the wall time; the message must then
 * arrive promptly and intact, whether the caller's thread moved it (a
 * small message) or the helper threads did and woke the caller. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "common/clock.h"
#include "harness.h"

#define IDLE_MS 400

static double thread_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void recv_after_idle(struct side *s, void *comm, size_t size, unsigned seed) {
  uint8_t *buf = malloc(size);
  void *mh = NULL, *req = NULL;
  if (!buf) return;
  memset(buf, 0xee, size);
  CHECK(netload_reg_mr(&s->nl, comm, buf, size, NCCL_PTR_HOST, &mh) == 0, "regMr");
  int tag = 7, got = -1, done = 0;
  size_t cap = size;
  CHECK(netload_irecv(&s->nl, comm, 1, (void **)&buf, &cap, &tag, &mh, &req) == 0 && req, "irecv");
  ctl_sync(s); /* the sender now waits IDLE_MS, then sends */
  long long t0 = ms_now(), idle_end = t0 + IDLE_MS - 50;
  double cpu0 = thread_cpu_ms(), idle_cpu = -1;
  long long calls = 0;
  while (req && !done && ms_now() < t0 + 30000) {
    if (netload_test(&s->nl, req, &done, &got)) break;
    calls++;
    if (idle_cpu < 0 && ms_now() >= idle_end) idle_cpu = thread_cpu_ms() - cpu0;
  }
  long long finished = ms_now();
  long long posted = ctl_recv_int(s);
  CHECK(done, "%zu bytes: not received after 30 s", size);
  double wall = (double)(idle_end - t0);
  CHECK(idle_cpu >= 0 && idle_cpu < 0.4 * wall,
        "%zu bytes: test() used %.0f ms of CPU in %.0f ms with nothing to receive (%lld calls): "
        "it spins instead of waiting",
        size, idle_cpu, wall, calls);
  CHECK(finished - posted < 2000, "%zu bytes: completed %lld ms after the send was posted", size,
        finished - posted);
  CHECK(got == (int)size && check_pattern(buf, size, seed) == size, "%zu bytes: data differs",
        size);
  printf("#   %zu bytes: %.1f ms CPU over %.0f ms idle, %lld test() calls, done %lld ms after "
         "the send\n",
         size, idle_cpu, wall, calls, finished - posted);
  netload_dereg_mr(&s->nl, comm, mh);
  free(buf);
}

static void send_after_idle(struct side *s, void *comm, size_t size, unsigned seed) {
  uint8_t *buf = malloc(size);
  void *mh = NULL, *req = NULL;
  if (!buf) return;
  fill_pattern(buf, size, seed);
  CHECK(netload_reg_mr(&s->nl, comm, buf, size, NCCL_PTR_HOST, &mh) == 0, "regMr");
  ctl_sync(s);
  usleep(IDLE_MS * 1000);
  long long posted = ms_now();
  long long end = posted + 20000;
  int r;
  do r = netload_isend(&s->nl, comm, buf, size, 7, mh, &req);
  while (!r && !req && ms_now() < end);
  ctl_send_int(s, posted);
  int got = -1;
  CHECK(!r && req && wait_req(s, req, &got, 30000) == 0 && got == (int)size, "send of %zu", size);
  netload_dereg_mr(&s->nl, comm, mh);
  free(buf);
}

void case_idle_wait(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  /* 256 KiB: the caller moves it; 32 MiB: stripes above NCCL_DIAG_CALLER_MAX, the helpers. */
  const size_t sizes[] = {256 << 10, 32 << 20};
  for (unsigned i = 0; i < 2; i++) {
    if (s->role == ROLE_RECV) recv_after_idle(s, comm, sizes[i], i + 11);
    else send_after_idle(s, comm, sizes[i], i + 11);
    ctl_sync(s);
  }
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* NCCL's proxy thread tests several comms in turn. While it waits in one
 * comm's test(), a message for another must end the wait: with a long wait
 * bound (20 ms) a wait that only watched its own comm's sockets would
 * deliver most messages milliseconds late. */
#define TWO_MSGS 40

static long long us_now(void) { return clock_mono_ns() / 1000; }

static int cmp_ll(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;
  return x < y ? -1 : x > y;
}

static void two_recv(struct side *s, void *idle, void *busy) {
  static uint8_t a[64], b[64];
  void *ma = NULL, *mb = NULL, *ra = NULL;
  CHECK(netload_reg_mr(&s->nl, idle, a, sizeof a, NCCL_PTR_HOST, &ma) == 0, "regMr");
  CHECK(netload_reg_mr(&s->nl, busy, b, sizeof b, NCCL_PTR_HOST, &mb) == 0, "regMr");
  int tag = 7, done = 0, got;
  size_t cap = sizeof a;
  void *pa = a, *pb = b;
  CHECK(netload_irecv(&s->nl, idle, 1, &pa, &cap, &tag, &ma, &ra) == 0 && ra,
        "irecv on the idle comm");
  long long delay[TWO_MSGS];
  int n = 0;
  for (; n < TWO_MSGS; n++) {
    void *rb = NULL;
    cap = sizeof b;
    if (netload_irecv(&s->nl, busy, 1, &pb, &cap, &tag, &mb, &rb) || !rb) break;
    ctl_sync(s);
    long long end = ms_now() + 10000;
    done = 0;
    while (!done && ms_now() < end) {
      int idle_done = 0;
      if (netload_test(&s->nl, ra, &idle_done, &got) || idle_done) break;
      if (netload_test(&s->nl, rb, &done, &got)) break;
    }
    long long t = us_now(), posted = ctl_recv_int(s);
    if (!done) break;
    delay[n] = t - posted;
  }
  CHECK(n == TWO_MSGS, "message %d on the busy comm not received", n);
  if (n == TWO_MSGS) {
    qsort(delay, n, sizeof delay[0], cmp_ll);
    long long p50 = delay[n / 2], p90 = delay[n * 9 / 10];
    printf("#   send to completion with another comm waiting on the same thread: p50 %lld us, "
           "p90 %lld us\n",
           p50, p90);
    CHECK(p90 < 5000, "a message waited %lld us (p90) while the thread slept on another comm", p90);
  }
  ctl_sync(s); /* now the idle comm's message comes */
  CHECK(wait_req(s, ra, &got, 10000) == 0 && got == 8, "the idle comm's message");
  netload_dereg_mr(&s->nl, idle, ma);
  netload_dereg_mr(&s->nl, busy, mb);
}

static void two_send(struct side *s, void *idle, void *busy) {
  static uint8_t a[64], b[64];
  void *ma = NULL, *mb = NULL;
  CHECK(netload_reg_mr(&s->nl, idle, a, sizeof a, NCCL_PTR_HOST, &ma) == 0, "regMr");
  CHECK(netload_reg_mr(&s->nl, busy, b, sizeof b, NCCL_PTR_HOST, &mb) == 0, "regMr");
  for (int i = 0; i < TWO_MSGS; i++) {
    void *r = NULL;
    int got;
    ctl_sync(s);
    usleep(5000);
    long long posted = us_now(), end = ms_now() + 10000;
    int res;
    do res = netload_isend(&s->nl, busy, b, 8, 7, mb, &r);
    while (!res && !r && ms_now() < end);
    ctl_send_int(s, posted);
    if (res || !r || wait_req(s, r, &got, 10000)) break;
  }
  ctl_sync(s);
  void *r = NULL;
  int got, res;
  long long end = ms_now() + 10000;
  do res = netload_isend(&s->nl, idle, a, 8, 7, ma, &r);
  while (!res && !r && ms_now() < end);
  CHECK(!res && r && wait_req(s, r, &got, 10000) == 0, "send on the idle comm");
  netload_dereg_mr(&s->nl, idle, ma);
  netload_dereg_mr(&s->nl, busy, mb);
}

void case_idle_two_comms(struct side *s) {
  setenv("NCCL_DIAG_IDLE_WAIT_US", "20000", 1);
  void *idle, *busy;
  if (side_open(s) || pair_open(s, &idle) || pair_open(s, &busy)) return;
  if (s->role == ROLE_RECV) two_recv(s, idle, busy);
  else two_send(s, idle, busy);
  ctl_sync(s);
  if (s->role == ROLE_SEND) {
    netload_close_send(&s->nl, idle);
    netload_close_send(&s->nl, busy);
  } else {
    netload_close_recv(&s->nl, idle);
    netload_close_recv(&s->nl, busy);
  }
  side_close(s);
}
