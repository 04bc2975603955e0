/* SPDX-License-Identifier: Apache-2.0 */
/* Port fail-over (NCCL_IB_RESILIENCY_PORT_FAILOVER, NCCL 2.29) on the
 * fixture host with one dual-port card, fused into a virtual NIC: the
 * port a connection runs on goes down on one side while eight messages
 * are in flight (softverbs reports it DOWN and fails the next completion
 * there with RETRY_EXC_ERR; that side tells the other on the control
 * connection, long before the other's writes to the queue pair in error
 * would time out at NCCL's 8 x 4.3 s). Both ends fused, the connection is
 * striped over both ports (ib_stripe.c). With the setting on, it carries
 * on over one surviving port and every message arrives once, intact; later messages go on the
 * new port (a completion on the old one would fail again). With it off,
 * the connection fails with the port named and the advice to turn it on. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"

#define FO_MSGS 120
#define FO_WINDOW 8
#define FO_MAX 100000
#define FO_FAIL_AT 30 /* the port goes down as message 30 is posted */

static size_t fo_size(int i) { return i % 17 == 5 ? 0 : (size_t)(i * 7919) % FO_MAX + 1; }

/* A call into the plugin runs on NCCL's proxy thread, which every
 * connection of the process shares: none may wait, a move to another
 * port included. Its wall-clock time on a loaded host is mostly the
 * scheduler's; its CPU time is the plugin's (a poll loop of the plugin
 * would show in both). The calls that gave up the CPU of their own accord
 * are counted too: softverbs' own locks do that now and then. The goal is
 * 1 ms; the CPU bound is far above it so a loaded host passes (the call
 * that makes a move's queue pair and registrations has shown over 5 ms
 * beside a parallel build). A sanitizer's checks and shadow memory
 * multiply every call's CPU (an isend of the move took 5.6 ms under
 * AddressSanitizer): the bound there is twice as wide, still far below a
 * poll loop's hundreds of ms. */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) ||                               \
  __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FO_CALL_CPU_LIMIT_NS 20000000LL
#else
#define FO_CALL_CPU_LIMIT_NS 10000000LL
#endif

struct fo_run {
  int down_role;
  const char *down;      /* the port that goes down: "mlx5_0" (NULL) or "mlx5_1" */
  const char *also_down; /* another port reported down with it, or NULL */
  int wc_after;          /* the completions that still succeed there (softverbs fails one
                          * per distinct setting: a second failure needs another) */
  uint8_t *buf;
  void *mh, *reqs[FO_MSGS];
  int next, done, err;
  long long calls, wall_max_ns, cpu_max_ns, waits;
  const char *wall_max_what, *cpu_max_what, *wait_what;
};

struct call_clock {
  long long wall, cpu, nvcsw;
};

static long long clock_of(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void clock_start(struct call_clock *k) {
  struct rusage u;
  getrusage(RUSAGE_THREAD, &u);
  k->nvcsw = u.ru_nvcsw;
  k->cpu = clock_of(CLOCK_THREAD_CPUTIME_ID);
  k->wall = clock_of(CLOCK_MONOTONIC);
}

static void clock_stop(struct fo_run *f, const struct call_clock *k, const char *what) {
  long long wall = clock_of(CLOCK_MONOTONIC) - k->wall;
  long long cpu = clock_of(CLOCK_THREAD_CPUTIME_ID) - k->cpu;
  struct rusage u;
  getrusage(RUSAGE_THREAD, &u);
  f->calls++;
  if (u.ru_nvcsw != k->nvcsw && !f->waits++) f->wait_what = what;
  if (wall > f->wall_max_ns) f->wall_max_ns = wall, f->wall_max_what = what;
  if (cpu > f->cpu_max_ns) f->cpu_max_ns = cpu, f->cpu_max_what = what;
}

/* One try at posting message i, as NCCL's proxy does: no request means
 * call again later. 0 with or without f->reqs[i], or the error. */
static int post_one(struct side *s, void *comm, struct fo_run *f, int i) {
  uint8_t *b = f->buf + (size_t)(i % (2 * FO_WINDOW)) * FO_MAX;
  size_t size = fo_size(i), cap = FO_MAX;
  int tag = 7;
  if (s->role == ROLE_SEND) {
    fill_pattern(b, size, (unsigned)i);
    return netload_isend(&s->nl, comm, b, size, tag, f->mh, &f->reqs[i]);
  }
  memset(b, 0xee, FO_MAX);
  return netload_irecv(&s->nl, comm, 1, (void **)&b, &cap, &tag, &f->mh, &f->reqs[i]);
}

/* Message i completed: its size (and on the receiver its bytes) checked. */
static int check_one(struct side *s, struct fo_run *f, int i, int got) {
  uint8_t *b = f->buf + (size_t)(i % (2 * FO_WINDOW)) * FO_MAX;
  CHECK((size_t)got == fo_size(i), "message %d: %d bytes, expected %zu", i, got, fo_size(i));
  if (s->role == ROLE_SEND) return (size_t)got == fo_size(i) ? 0 : -1;
  size_t bad = check_pattern(b, fo_size(i), (unsigned)i);
  CHECK(bad == fo_size(i), "message %d: its bytes differ from byte %zu on", i, bad);
  return bad == fo_size(i) && (size_t)got == fo_size(i) ? 0 : -1;
}

/* Moves messages from..to, FO_WINDOW in flight; the side f->down_role
 * takes its port down as message FO_FAIL_AT is posted. 0, or the first
 * failure. */
static int run_window(struct side *s, void *comm, struct fo_run *f, int from, int to) {
  long long end = ms_now() + 60000;
  f->next = f->done = from;
  while (f->done < to && ms_now() < end) {
    /* As NCCL's proxy: post what it can, then test the oldest request. */
    if (f->next < to && f->next - f->done < FO_WINDOW) {
      if (s->role == f->down_role && f->next == FO_FAIL_AT && !getenv("SOFTVERBS_PORT_DOWN")) {
        const char *d = f->down ? f->down : "mlx5_0";
        char v[64];
        snprintf(v, sizeof(v), "%s:1%s%s", d, f->also_down ? "," : "",
                 f->also_down ? f->also_down : "");
        setenv("SOFTVERBS_PORT_DOWN", v, 1);
        snprintf(v, sizeof(v), "RETRY_EXC_ERR:%d:%s", f->wc_after, d);
        setenv("SOFTVERBS_WC_ERROR", v, 1);
      }
      struct call_clock k;
      clock_start(&k);
      int r = post_one(s, comm, f, f->next);
      clock_stop(f, &k, s->role == ROLE_SEND ? "isend" : "irecv");
      if (r) return r;
      if (f->reqs[f->next]) f->next++;
    }
    if (f->done == f->next) continue;
    int done = 0, got = -1;
    struct call_clock k;
    clock_start(&k);
    int r = netload_test(&s->nl, f->reqs[f->done], &done, &got);
    clock_stop(f, &k, "test");
    if (r) return r;
    if (done && check_one(s, f, f->done++, got)) return -1;
  }
  return f->done == to ? 0 : -3;
}

/* The connection on the fused NIC, or (is_fused false) on mlx5_0 alone. */
static void *fo_open_on(struct side *s, const char *setting, struct fo_run *f, bool is_fused) {
  setenv("NCCL_IB_RESILIENCY_PORT_FAILOVER", setting, 1);
  if (use_fixture(s, ROLE_RECV, "roce-dual-port") || use_fixture(s, ROLE_SEND, "roce-dual-port"))
    return NULL;
  if (side_open(s)) return NULL;
  if (is_fused && s->abi < 9) { /* no makeVDevice before v9: nothing to fuse */
    side_close(s);
    return NULL;
  }
  int n = 0, devs[2] = {0, 1}, vd = -1;
  netload_devices(&s->nl, &n);
  if (is_fused) CHECK(netload_make_vdevice(&s->nl, 2, devs, &vd) == ncclSuccess, "makeVDevice");
  s->dev = is_fused ? vd : 0;
  void *comm = NULL;
  if (pair_open(s, &comm)) return NULL;
  CHECK(log_find(NCCL_LOG_INFO, "on mlx5_0 port 1: RDMA"), "the connection is not on mlx5_0");
  f->buf = calloc(2 * FO_WINDOW, FO_MAX);
  CHECK(f->buf &&
          !netload_reg_mr(&s->nl, comm, f->buf, 2 * FO_WINDOW * FO_MAX, NCCL_PTR_HOST, &f->mh),
        "regMr");
  return comm;
}

static void *fo_open(struct side *s, const char *setting, struct fo_run *f) {
  return fo_open_on(s, setting, f, true);
}

/* The longest call, said and checked. */
static void check_calls(struct side *s, const struct fo_run *f) {
  tap_diag("%s side, %lld calls: longest %lld us of CPU (%s), %lld us of wall clock (%s); %lld "
           "calls waited%s%s",
           s->role == ROLE_SEND ? "sending" : "receiving", f->calls, f->cpu_max_ns / 1000,
           f->cpu_max_what ? f->cpu_max_what : "none", f->wall_max_ns / 1000,
           f->wall_max_what ? f->wall_max_what : "none", f->waits, f->waits ? ", first " : "",
           f->waits ? f->wait_what : "");
  CHECK(f->cpu_max_ns < FO_CALL_CPU_LIMIT_NS, "a %s call took %lld us of CPU",
        f->cpu_max_what ? f->cpu_max_what : "", f->cpu_max_ns / 1000);
}

static void fo_close(struct side *s, void *comm, struct fo_run *f) {
  check_calls(s, f);
  ctl_sync(s);
  netload_dereg_mr(&s->nl, comm, f->mh);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  free(f->buf);
  unsetenv("SOFTVERBS_PORT_DOWN");
  unsetenv("SOFTVERBS_WC_ERROR");
  side_close(s);
}

/* down: the port that fails ("mlx5_0", the connection's first, or
 * "mlx5_1"); to: where the side that lost it carries on. */
static void moves(struct side *s, int down_role, const char *down, const char *to) {
  struct fo_run f = {.down_role = down_role, .down = down};
  void *comm = fo_open(s, "1", &f);
  if (!comm) return;
  int r = run_window(s, comm, &f, 0, FO_MSGS);
  CHECK(r == 0, "the %s side stopped at message %d of %d: %d",
        s->role == ROLE_SEND ? "sending" : "receiving", f.done, FO_MSGS, r);
  const char *w = log_find(NCCL_LOG_WARN, "moved from");
  /* both ends fused: the connection was striped over both ports (ib_stripe.c) */
  char moved[96], went[64];
  snprintf(moved, sizeof(moved), "moved from its 2 striped ports to %s port 1", to);
  snprintf(went, sizeof(went), "%s port 1 went down", down);
  CHECK(w && (s->role != down_role || strstr(w, moved)) && strstr(w, went) &&
          strstr(w, "NCCL_IB_RESILIENCY_PORT_FAILOVER=1"),
        "one WARN names the failed port, its cause and the new port: %s", w ? w : "none");
  /* How many writes were lost in flight depends on timing (usually 7 or 8
   * here): the receiver's checks above show each arrived once. */
  CHECK(!w || (s->role == ROLE_SEND ? strstr(w, "are sent again") : strstr(w, "posted again")),
        "the move does not say what is sent again: %s", w ? w : "none");
  CHECK(log_count(NCCL_LOG_WARN, "moved from") == 1, "%d move WARNs",
        log_count(NCCL_LOG_WARN, "moved from"));
  CHECK(!log_find(NCCL_LOG_WARN, "(RDMA): "), "a connection failed: %s",
        log_find(NCCL_LOG_WARN, "(RDMA): "));
  /* A completion on the old port would fail now: the next messages go on the new one. */
  ctl_sync(s);
  char again[64];
  snprintf(again, sizeof(again), "RETRY_EXC_ERR:1:%s", down);
  setenv("SOFTVERBS_WC_ERROR", again, 1);
  for (int i = 0; i < 16 && !r; i++) r = xfer_one(s, comm, 70000 + (size_t)i, 70016, 500 + i);
  CHECK(r == 0, "messages after the move: %d", r);
  fo_close(s, comm, &f);
}

/* The sending side's port: the writes it posted had landed (the receiver
 * completes them), the receiver's clear-to-sends to it are lost. */
void case_ib_failover_moves(struct side *s) { moves(s, ROLE_SEND, "mlx5_0", "mlx5_1"); }

/* The receiving side's port: the writes in flight to it are lost and sent
 * again on the new port. */
void case_ib_failover_recv_down(struct side *s) { moves(s, ROLE_RECV, "mlx5_0", "mlx5_1"); }

/* The second port of the striped pair fails on the sending side: the
 * connection carries on over the first alone (both ends), every message
 * once, intact. */
void case_ib_failover_second_port(struct side *s) { moves(s, ROLE_SEND, "mlx5_1", "mlx5_0"); }

void case_ib_failover_off(struct side *s) {
  struct fo_run f = {.down_role = ROLE_SEND};
  void *comm = fo_open(s, "0", &f);
  if (!comm) return;
  int r = run_window(s, comm, &f, 0, FO_MSGS);
  CHECK(r != 0 && f.done < FO_MSGS, "the %s side finished with the port down",
        s->role == ROLE_SEND ? "sending" : "receiving");
  if (s->role == ROLE_SEND) {
    const char *w = log_find(NCCL_LOG_WARN, "port 1 went down");
    CHECK(w && strstr(w, "mlx5_0 port 1") &&
            strstr(w, "NCCL_IB_RESILIENCY_PORT_FAILOVER=1 on both sides would have moved this "
                      "connection to mlx5_1 port 1, another port of its virtual NIC"),
          "the failure names the port and the setting that would have kept it: %s",
          w                                   ? w
          : log_find(NCCL_LOG_WARN, "(RDMA)") ? log_find(NCCL_LOG_WARN, "(RDMA)")
                                              : "none");
  }
  CHECK(!log_find(NCCL_LOG_WARN, "moved from"), "it moved with the setting at 0");
  fo_close(s, comm, &f);
}

/* Beyond a virtual NIC: the connection runs on mlx5_0 alone (10.60.0.0/24
 * on both hosts). Its port fails on one side mid-transfer: the only other
 * port, mlx5_1, is on 10.60.1.0/24 and reaches only the peer's mlx5_1, so
 * both ends move there, every message once, intact. With
 * NCCL_IB_RESILIENCY_PORT_RECOVERY=1 the connection moves back once mlx5_0
 * has been active again for the start delay (100 ms here), and its
 * traffic runs there again: a completion on mlx5_1 would now fail.
 * Without it the connection stays on mlx5_1, and the WARN says so. */
static void moves_out_and_back(struct side *s, int down_role, bool is_recovery) {
  setenv("NCCL_IB_RESILIENCY_PORT_RECOVERY", is_recovery ? "1" : "0", 1);
  setenv("NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY", "100", 1);
  struct fo_run f = {.down_role = down_role};
  void *comm = fo_open_on(s, "1", &f, false);
  if (!comm) return;
  int r = run_window(s, comm, &f, 0, FO_MSGS);
  CHECK(r == 0, "the %s side stopped at message %d of %d: %d",
        s->role == ROLE_SEND ? "sending" : "receiving", f.done, FO_MSGS, r);
  const char *w = log_find(NCCL_LOG_WARN, "moved from");
  CHECK(w &&
          strstr(w, "moved from mlx5_0 port 1 to mlx5_1 port 1, another port of this host on "
                    "the peer's subnet") &&
          strstr(w, "to mlx5_1 port 1 (NCCL_IB_RESILIENCY_PORT_FAILOVER=1, move 1 of 1)") &&
          strstr(w, "mlx5_0 port 1"),
        "one WARN names the failed port, the port outside the NIC it moved to and the peer's: %s",
        w ? w : "none");
  CHECK(log_count(NCCL_LOG_WARN, "moved from") == 1, "%d move WARNs",
        log_count(NCCL_LOG_WARN, "moved from"));
  CHECK(!log_find(NCCL_LOG_WARN, "(RDMA): "), "a connection failed: %s",
        log_find(NCCL_LOG_WARN, "(RDMA): "));
  CHECK(!w || is_recovery == !strstr(w, "it stays there: NCCL_IB_RESILIENCY_PORT_RECOVERY=1 moves "
                                        "it back when the port returns"),
        "the WARN %s the setting that moves it back: %s", is_recovery ? "names" : "leaves out",
        w ? w : "none");
  /* The port returns: messages go on, the connection moves back under them. */
  ctl_sync(s);
  unsetenv("SOFTVERBS_PORT_DOWN");
  unsetenv("SOFTVERBS_WC_ERROR");
  ctl_sync(s);
  /* Batches of 10 messages 10 ms apart until both sides saw the move back
   * (the sides agree after each batch), 10 s at most; 2 s without it. */
  int both = 0, i = 0;
  for (int batch = 0; !r && !both && batch < (is_recovery ? 100 : 20); batch++) {
    for (int k = 0; k < 10 && !r; k++, i++) {
      r = xfer_one(s, comm, 30000 + (size_t)i * 13, 40000, 900 + (unsigned)i);
      usleep(10000);
    }
    ctl_send_int(s, log_find(NCCL_LOG_INFO, "moved back from") != NULL);
    both = ctl_recv_int(s) && log_find(NCCL_LOG_INFO, "moved back from");
  }
  CHECK(r == 0, "messages while the port returned: %d", r);
  const char *b = log_find(NCCL_LOG_INFO, "moved back from");
  CHECK(!is_recovery == !b, "it %s back: %s", b ? "moved" : "did not move", b ? b : "none");
  CHECK(!is_recovery ||
          (b && strstr(b, "moved back from mlx5_1 port 1 to mlx5_0 port 1") &&
           strstr(b, "to mlx5_0 port 1 (NCCL_IB_RESILIENCY_PORT_RECOVERY=1, return 1 of 5)") &&
           strstr(b, "is active again")),
        "the move back names both ports, the setting and why: %s", b ? b : "none");
  CHECK(!log_find(NCCL_LOG_WARN, "(RDMA): "), "a connection failed: %s",
        log_find(NCCL_LOG_WARN, "(RDMA): "));
  ctl_sync(s);
  /* Where the traffic runs now: a completion on the other port would fail. */
  setenv("SOFTVERBS_WC_ERROR", is_recovery ? "RETRY_EXC_ERR:1:mlx5_1" : "RETRY_EXC_ERR:1:mlx5_0",
         1);
  for (int j = 0; j < 16 && !r; j++) r = xfer_one(s, comm, 70000 + (size_t)j, 70016, 500 + j);
  CHECK(r == 0, "messages after the port returned (a completion on %s would fail): %d",
        is_recovery ? "mlx5_1" : "mlx5_0", r);
  CHECK(log_count(NCCL_LOG_WARN, "moved from") == 1, "it moved again: %d move WARNs",
        log_count(NCCL_LOG_WARN, "moved from"));
  if (is_recovery && !r) {
    /* Back on its first port it is as it started: the port failing again
     * moves it again (one move allowed, NCCL's default), nothing lost. */
    ctl_sync(s);
    unsetenv("SOFTVERBS_WC_ERROR");
    ctl_sync(s);
    f.wc_after = 1;
    r = run_window(s, comm, &f, 0, FO_MSGS);
    CHECK(r == 0, "the %s side stopped at message %d of %d after the second failure: %d",
          s->role == ROLE_SEND ? "sending" : "receiving", f.done, FO_MSGS, r);
    CHECK(log_count(NCCL_LOG_WARN, "moved from") == 2, "%d move WARNs, expected 2",
          log_count(NCCL_LOG_WARN, "moved from"));
  }
  fo_close(s, comm, &f);
  unsetenv("NCCL_IB_RESILIENCY_PORT_RECOVERY");
  unsetenv("NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY");
}

void case_ib_failover_out_send(struct side *s) { moves_out_and_back(s, ROLE_SEND, true); }
void case_ib_failover_out_recv(struct side *s) { moves_out_and_back(s, ROLE_RECV, true); }
void case_ib_failover_out_stays(struct side *s) { moves_out_and_back(s, ROLE_SEND, false); }

/* Beyond a virtual NIC, nowhere to go: the sender's other port is down
 * too. The connection fails as it would have, and its WARN says why it
 * did not move. */
void case_ib_failover_out_nowhere(struct side *s) {
  struct fo_run f = {.down_role = ROLE_SEND, .also_down = "mlx5_1:1"};
  void *comm = fo_open_on(s, "1", &f, false);
  if (!comm) return;
  int r = run_window(s, comm, &f, 0, FO_MSGS);
  CHECK(r != 0 && f.done < FO_MSGS, "the %s side finished with both ports down",
        s->role == ROLE_SEND ? "sending" : "receiving");
  CHECK(!log_find(NCCL_LOG_WARN, "moved from"), "it moved: %s",
        log_find(NCCL_LOG_WARN, "moved from"));
  if (s->role == ROLE_SEND) {
    const char *w = log_find(NCCL_LOG_WARN, "could not move it");
    CHECK(w && strstr(w, "mlx5_0 port 1") &&
            strstr(w, "NCCL_IB_RESILIENCY_PORT_FAILOVER=1 could not move it on ") &&
            strstr(w, ": no other port of this host is up on the peer's subnet"),
          "the failure names the port and why it did not move: %s",
          w                                   ? w
          : log_find(NCCL_LOG_WARN, "(RDMA)") ? log_find(NCCL_LOG_WARN, "(RDMA)")
                                              : "none");
  }
  fo_close(s, comm, &f);
}
