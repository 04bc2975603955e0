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
  CHECK(nl_reg_mr(&s->nl, comm, buf, size, NCCL_PTR_HOST, &mh) == 0, "regMr");
  int tag = 7, got = -1, done = 0;
  size_t cap = size;
  CHECK(nl_irecv(&s->nl, comm, 1, (void **)&buf, &cap, &tag, &mh, &req) == 0 && req, "irecv");
  ctl_sync(s); /* the sender now waits IDLE_MS, then sends */
  long long t0 = ms_now(), idle_end = t0 + IDLE_MS - 50;
  double cpu0 = thread_cpu_ms(), idle_cpu = -1;
  long long calls = 0;
  while (req && !done && ms_now() < t0 + 30000) {
    if (nl_test(&s->nl, req, &done, &got)) break;
    calls++;
    if (idle_cpu < 0 && ms_now() >= idle_end) idle_cpu = thread_cpu_ms() - cpu0;
  }
  long long finished = ms_now();
  long long posted = ctl_recv_int(s);
  CHECK(done, "%zu bytes: not received after 30 s", size);
  double wall = (double)(idle_end - t0);
  CHECK(idle_cpu >= 0 && idle_cpu < 0.4 * wall,
        "%zu bytes: test() used %.0f ms of CPU in %.0f ms with nothing to receive (%lld calls): "
        "it spins instead of waiting", size, idle_cpu, wall, calls);
  CHECK(finished - posted < 2000, "%zu bytes: completed %lld ms after the send was posted", size,
        finished - posted);
  CHECK(got == (int)size && check_pattern(buf, size, seed) == size, "%zu bytes: data differs",
        size);
  printf("#   %zu bytes: %.1f ms CPU over %.0f ms idle, %lld test() calls, done %lld ms after "
         "the send\n", size, idle_cpu, wall, calls, finished - posted);
  nl_dereg_mr(&s->nl, comm, mh);
  free(buf);
}

static void send_after_idle(struct side *s, void *comm, size_t size, unsigned seed) {
  uint8_t *buf = malloc(size);
  void *mh = NULL, *req = NULL;
  if (!buf) return;
  fill_pattern(buf, size, seed);
  CHECK(nl_reg_mr(&s->nl, comm, buf, size, NCCL_PTR_HOST, &mh) == 0, "regMr");
  ctl_sync(s);
  usleep(IDLE_MS * 1000);
  long long posted = ms_now();
  long long end = posted + 20000;
  int r;
  do r = nl_isend(&s->nl, comm, buf, size, 7, mh, &req);
  while (!r && !req && ms_now() < end);
  ctl_send_int(s, posted);
  int got = -1;
  CHECK(!r && req && wait_req(s, req, &got, 30000) == 0 && got == (int)size, "send of %zu", size);
  nl_dereg_mr(&s->nl, comm, mh);
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
  if (s->role == ROLE_SEND) nl_close_send(&s->nl, comm);
  else nl_close_recv(&s->nl, comm);
  side_close(s);
}
