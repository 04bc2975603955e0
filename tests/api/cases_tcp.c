/* SPDX-License-Identifier: Apache-2.0 */
/* TCP behaviour seen from the sender and at scale:
 *  - a receiver that refuses a message (larger than its receive), or that
 *    closes with data in flight, is heard by the sender: its pending
 *    request, or its next call on the connection, fails with the
 *    receiver's reason, not success;
 *  - the no-progress warning names the message that is stalled;
 *  - stripes the caller moves itself do not wake the helper threads;
 *  - thousands of comms in one process: the device's shared helpers are
 *    the only threads, each comm holds its sockets and at most a few
 *    descriptors and kilobytes more. */
#include <dirent.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cases.h"
#include "tools/proc_usage.h"

static void close_comm(struct side *s, void *comm) {
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
}

/* A send of 2000 bytes into a 1000-byte receive: the small send completes
 * at once (the kernel has its bytes), so the sender's next call fails with
 * the receiver's reason. */
void case_oversized_sender(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  int r = xfer_one(s, comm, 2000, 1000, 3);
  if (s->role == ROLE_RECV)
    CHECK(r == ncclInvalidUsage, "the receiver's test returned %d, ncclInvalidUsage expected", r);
  ctl_sync(s); /* the receiver has refused the message and said why */
  if (s->role == ROLE_SEND) {
    usleep(20000); /* past the sender's 1 ms bound for looking at its control socket */
    static uint8_t buf[64];
    void *mh = NULL, *req = NULL;
    netload_reg_mr(&s->nl, comm, buf, sizeof(buf), NCCL_PTR_HOST, &mh);
    int r2 = netload_isend(&s->nl, comm, buf, sizeof(buf), 7, mh, &req);
    if (!r2 && req) r2 = wait_req(s, req, NULL, 5000);
    CHECK(r2 == ncclRemoteError, "the sender's next call returned %d, ncclRemoteError expected",
          r2);
    const char *w = log_find(NCCL_LOG_WARN, "receiving side ended the connection");
    CHECK(w && strstr(w, "is 2000 bytes") && strstr(w, "holds 1000 bytes"),
          "the sender must name the receiver's reason: %s", w ? w : "no WARN");
    netload_dereg_mr(&s->nl, comm, mh);
  }
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* The receiver takes part of a 32 MiB message, then closes its comm: the
 * sender's pending send fails, naming the receiver's close and the
 * message. */
void case_receiver_closes_inflight(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  enum { SZ = 32 << 20 };
  uint8_t *buf = malloc(SZ);
  void *mh = NULL, *req = NULL;
  netload_reg_mr(&s->nl, comm, buf, SZ, NCCL_PTR_HOST, &mh);
  if (s->role == ROLE_SEND) {
    fill_pattern(buf, SZ, 9);
    int r = netload_isend(&s->nl, comm, buf, SZ, 7, mh, &req);
    CHECK(r == 0 && req, "isend: %d", r);
    ctl_sync(s); /* posted */
    ctl_sync(s); /* the receiver closed */
    long long t0 = ms_now();
    r = req ? wait_req(s, req, NULL, 10000) : -1;
    CHECK(r == ncclRemoteError, "the pending send returned %d, ncclRemoteError expected", r);
    CHECK(ms_now() - t0 < 5000, "the sender took %lld ms to hear of the close", ms_now() - t0);
    const char *w = log_find(NCCL_LOG_WARN, "receiving side ended the connection");
    CHECK(w && strstr(w, "the receiver closed its connection while message 0 was in flight"),
          "the sender must name the receiver's close and the message: %s", w ? w : "no WARN");
  } else {
    size_t cap = SZ;
    int tag = 7, done = 0;
    int r = netload_irecv(&s->nl, comm, 1, (void **)&buf, &cap, &tag, &mh, &req);
    CHECK(r == 0 && req, "irecv: %d", r);
    ctl_sync(s);
    for (int i = 0; i < 200 && req && !done; i++) netload_test(&s->nl, req, &done, NULL);
    CHECK(!done, "32 MiB arrived in 200 test() calls; the case needs it in flight");
    netload_dereg_mr(&s->nl, comm, mh);
    mh = NULL;
    close_comm(s, comm);
    ctl_sync(s);
  }
  if (mh) netload_dereg_mr(&s->nl, comm, mh);
  ctl_sync(s);
  if (s->role == ROLE_SEND) close_comm(s, comm);
  free(buf);
  side_close(s);
}

/* Five messages arrive, the sixth does not: the warning after a second
 * names message 5, the one its receive waits for. */
void case_stall_names_message(struct side *s) {
  setenv("NCCL_DIAG_STALL_WARN_SEC", "1", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  for (unsigned i = 0; i < 5; i++) CHECK(xfer_one(s, comm, 100 + i, 4096, i) == 0, "message %u", i);
  if (s->role == ROLE_RECV) {
    static uint8_t buf[4096];
    void *mh = NULL, *req = NULL, *p = buf;
    size_t cap = sizeof(buf);
    int tag = 7, done = 0;
    netload_reg_mr(&s->nl, comm, buf, sizeof(buf), NCCL_PTR_HOST, &mh);
    CHECK(netload_irecv(&s->nl, comm, 1, &p, &cap, &tag, &mh, &req) == 0 && req, "irecv");
    for (long long end = ms_now() + 1600; req && !done && ms_now() < end;)
      netload_test(&s->nl, req, &done, NULL);
    const char *w = log_find(NCCL_LOG_WARN, "has made no progress");
    CHECK(w && strstr(w, "receive of message 5 (up to 4096 bytes)"),
          "the warning must name message 5: %s", w ? w : "no WARN");
    netload_dereg_mr(&s->nl, comm, mh);
  }
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* ---- who wakes ---- */

/* Context switches of this process's TCP helper threads so far: each one
 * is a wake-up (they sleep in epoll_wait) or a preemption. */
static long long helper_switches(void) {
  long long total = 0;
  DIR *d = opendir("/proc/self/task");
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[300], line[128];
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
    FILE *f = fopen(path, "re");
    bool is_helper = false;
    while (f && fgets(line, sizeof(line), f)) {
      if (!strncmp(line, "Name:", 5)) is_helper = strstr(line, "diag-tcp") != NULL;
      long long v;
      if (is_helper && (sscanf(line, "voluntary_ctxt_switches: %lld", &v) == 1 ||
                        sscanf(line, "nonvoluntary_ctxt_switches: %lld", &v) == 1))
        total += v;
    }
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return total;
}

/* NCCL's steps (512 KiB, 8 in flight) are stripes the caller's thread
 * moves itself: their traffic must not wake the helper threads, which on
 * a small host take the CPU the caller and the peer need. Before, each
 * message woke a helper about twice on each side. */
enum { WAKE_MSGS = 200, WAKE_SIZE = 512 << 10, WAKE_WIN = 8 };

static int post(struct side *s, void *comm, uint8_t *buf, void *mh, void **req) {
  size_t cap = WAKE_SIZE;
  int tag = 7;
  void *p = buf;
  int r = 0;
  for (long long end = ms_now() + 5000; !r && !*req && ms_now() < end;)
    r = s->role == ROLE_SEND ? netload_isend(&s->nl, comm, buf, WAKE_SIZE, 7, mh, req)
                             : netload_irecv(&s->nl, comm, 1, &p, &cap, &tag, &mh, req);
  return r ? r : *req ? 0 : -1;
}

void case_helpers_sleep_for_caller_stripes(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  uint8_t *bufs = malloc((size_t)WAKE_SIZE * WAKE_WIN);
  void *mh = NULL, *reqs[WAKE_WIN] = {0};
  CHECK(bufs &&
          netload_reg_mr(&s->nl, comm, bufs, (size_t)WAKE_SIZE * WAKE_WIN, NCCL_PTR_HOST, &mh) == 0,
        "regMr");
  for (int k = 0; bufs && k < WAKE_WIN; k++)
    fill_pattern(bufs + (size_t)k * WAKE_SIZE, WAKE_SIZE, s->role == ROLE_SEND ? (unsigned)k : 99);
  ctl_sync(s);
  long long before = helper_switches(), bad = 0;
  int posted = 0, done_n = 0, r = 0;
  while (bufs && !r && done_n < WAKE_MSGS) {
    while (posted < WAKE_MSGS && posted - done_n < WAKE_WIN && !r)
      r =
        post(s, comm, bufs + (size_t)(posted % WAKE_WIN) * WAKE_SIZE, mh, &reqs[posted % WAKE_WIN]),
      posted++;
    int k = done_n % WAKE_WIN, got = -1;
    if (!r && !(r = wait_req(s, reqs[k], &got, 10000))) {
      reqs[k] = NULL;
      if (s->role == ROLE_RECV &&
          check_pattern(bufs + (size_t)k * WAKE_SIZE, WAKE_SIZE, (unsigned)k) != WAKE_SIZE)
        bad++;
      done_n++;
    }
  }
  long long woke = helper_switches() - before;
  CHECK(!r && done_n == WAKE_MSGS && !bad,
        "%d of %d messages of 512 KiB, %lld with wrong data, "
        "last result %d",
        done_n, WAKE_MSGS, bad, r);
  printf("#   %s side: %lld helper-thread context switches over %d messages\n",
         s->role == ROLE_SEND ? "send" : "receive", woke, WAKE_MSGS);
  CHECK(woke < WAKE_MSGS / 10,
        "%s side: the helper threads switched %lld times over %d messages "
        "the caller moved itself",
        s->role == ROLE_SEND ? "send" : "receive", woke, WAKE_MSGS);
  ctl_sync(s);
  if (mh) netload_dereg_mr(&s->nl, comm, mh);
  close_comm(s, comm);
  free(bufs);
  side_close(s);
}

/* ---- scale ---- */

/* Room for n comms' descriptors: the soft limit up to the hard one, the
 * hard one too where we may. How many comms fit. */
static int fit_comms(int n, int per_comm) {
  struct rlimit rl;
  rlim_t want = (rlim_t)n * (rlim_t)per_comm + 512;
  if (getrlimit(RLIMIT_NOFILE, &rl)) return n;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
    struct rlimit up = {want, want};
    if (setrlimit(RLIMIT_NOFILE, &up) == 0) return n;
  }
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want) return n;
  return (int)((rl.rlim_cur - 512) / (rlim_t)per_comm);
}

/* Under ASan or TSan memory is the sanitizer's (shadow, redzones) and
 * the sanitizer may run a thread of its own; the builds that run them
 * compile this file with it too. */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
static const char *sanitizer(void) {
#if defined(__SANITIZE_THREAD__) || __has_feature(thread_sanitizer)
  return "ThreadSanitizer";
#elif defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
  return "AddressSanitizer";
#else
  return NULL;
#endif
}

/* What the comms cost, per comm, against the targets: at most the
 * device's 2 helpers plus 1 (the process-wide liveness check) threads, at
 * most 3 descriptors beyond a comm's data sockets, at most 16 KB held. */
static void judge(const struct proc_usage *a, const struct proc_usage *b, int n, int nsocks,
                  const char *when) {
  double fds = (double)(b->fds - a->fds) / n, kb = (double)(b->rss_kb - a->rss_kb) / n;
  const char *san = sanitizer();
  printf("#   %d idle comms %s: %+d threads, %.2f descriptors and %.1f KB held per comm%s%s\n", n,
         when, b->threads - a->threads, fds, kb, san ? " under " : "", san ? san : "");
  CHECK(b->threads - a->threads <= 3 + (san != NULL),
        "%s: %d threads more for %d comms (at most 3)", when, b->threads - a->threads, n);
  CHECK(fds <= nsocks + 3, "%s: %.2f descriptors per comm with %d data sockets (at most %d)", when,
        fds, nsocks, nsocks + 3);
  CHECK(san || kb <= 16, "%s: %.1f KB held per idle comm (at most 16)", when, kb);
}

/* 2,000 comms in each process (the receiver holds 2,000 receive comms,
 * the sender 2,000 send comms), idle, then after a message on each and
 * 16 MiB on a few (the helpers' share): threads, descriptors and memory
 * per comm within the targets. */
void case_many_comms_cost(struct side *s) {
  int n = fit_comms(2000, 2 + 3);
  if (side_open(s)) return;
  if (n < 2000) printf("#   the descriptor limit fits %d comms, not 2000\n", n);
  void **comms = calloc((size_t)n, sizeof(void *));
  struct proc_usage base, idle, used;
  proc_usage_now(&base);
  int opened = 0;
  for (int i = 0; i < n && comms; i++) opened += pair_open(s, &comms[i]) == 0;
  CHECK(opened == n, "%d of %d comms opened", opened, n);
  proc_usage_now(&idle);
  if (opened == n) {
    judge(&base, &idle, n, 2, "just connected");
    int bad = 0;
    for (int i = 0; i < n; i++) bad += xfer_one(s, comms[i], 64 + (size_t)i % 4000, 4096, i) != 0;
    for (int i = 0; i < 4; i++) bad += xfer_one(s, comms[i * (n / 4)], 16 << 20, 16 << 20, i) != 0;
    CHECK(bad == 0, "%d transfers failed", bad);
    proc_usage_now(&used);
    judge(&base, &used, n, 2, "after a message each");
  }
  ctl_sync(s);
  for (int i = 0; i < n && comms; i++)
    if (comms[i]) close_comm(s, comms[i]);
  free(comms);
  side_close(s);
}
