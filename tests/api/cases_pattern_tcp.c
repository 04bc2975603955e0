/* SPDX-License-Identifier: Apache-2.0 */
/* Call patterns NCCL uses that a plain send/receive does not exercise:
 *  - a peer's clean close after its data was delivered fails nothing on
 *    this side: a request whose bytes are through completes, on the send
 *    side and on the receive side;
 *  - accept may come long after connect (NCCL's proxy accepts when it gets
 *    to it): the connector waits for a busy listener, and the attempts it
 *    raced on the listener's other addresses are never handed out by a
 *    later accept on the same listen comm. */
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

/* ---- late accepts ---- */

/* Accepts one comm on lc, driving accept until it comes out. */
static void *accept_one(struct side *s, void *lc, int timeout_ms) {
  void *rc = NULL;
  long long end = ms_now() + timeout_ms;
  int r = 0;
  while (!rc && !r && ms_now() < end) {
    r = netload_accept(&s->nl, lc, &rc);
    if (!rc && !r) usleep(100);
  }
  CHECK(r == 0 && rc, "accept returned %d, comm %p", r, rc);
  return rc;
}

/* Drives n connects on copies of one handle at once, until each has its
 * comm; the slowest one's time in ms, or -1. */
static long long connect_all(struct side *s, const char *handle, void **sc, int n, int timeout_ms) {
  char(*h)[NCCL_NET_HANDLE_MAXSIZE] = calloc((size_t)n, NCCL_NET_HANDLE_MAXSIZE);
  for (int i = 0; i < n; i++) memcpy(h[i], handle, NCCL_NET_HANDLE_MAXSIZE), sc[i] = NULL;
  long long t0 = ms_now(), end = t0 + timeout_ms;
  int left = n, r = 0;
  while (left && !r && ms_now() < end) {
    for (int i = 0; i < n && !r; i++) {
      if (sc[i]) continue;
      r = netload_connect(&s->nl, s->dev, h[i], &sc[i]);
      left -= sc[i] != NULL;
    }
    if (left) usleep(100);
  }
  free(h);
  CHECK(!left && !r, "%d of %d connects did not complete (connect returned %d)", left, n, r);
  return left ? -1 : ms_now() - t0;
}

/* One 4 KiB message per comm, the sender's comm i sending seed 60 + i:
 * the receiver finds which seed each of its comms carries, so the pairs
 * are checked as a permutation. */
static void exchange(struct side *s, void **comms, int n) {
  enum { SZ = 4096 };
  uint8_t *buf = calloc((size_t)n, SZ);
  void **mh = calloc((size_t)n, sizeof(void *)), **req = calloc((size_t)n, sizeof(void *));
  for (int i = 0; i < n; i++) {
    void *p = buf + (size_t)i * SZ;
    netload_reg_mr(&s->nl, comms[i], p, SZ, NCCL_PTR_HOST, &mh[i]);
    if (s->role == ROLE_SEND) {
      fill_pattern(p, SZ, 60 + i);
      CHECK(isend_retry(s, comms[i], p, SZ, mh[i], &req[i]) == 0, "isend %d", i);
    } else {
      size_t cap = SZ;
      int tag = 7;
      CHECK(netload_irecv(&s->nl, comms[i], 1, &p, &cap, &tag, &mh[i], &req[i]) == 0 && req[i],
            "irecv %d", i);
    }
  }
  int size, seen = 0;
  for (int i = 0; i < n; i++) {
    int r = req[i] ? wait_req(s, req[i], &size, 20000) : -1;
    CHECK(r == 0 && size == SZ, "comm %d: test returned %d, size %d", i, r, size);
    if (s->role == ROLE_SEND || r) continue;
    int seed = -1;
    for (int k = 0; k < n && seed < 0; k++)
      if (check_pattern(buf + (size_t)i * SZ, SZ, 60 + k) == SZ) seed = k;
    CHECK(seed >= 0 && !(seen & (1 << seed)),
          "receive comm %d carries %s (each must carry one sender's data, no two the same)", i,
          seed < 0 ? "nobody's data" : "a sender's data that another comm carries too");
    if (seed >= 0) seen |= 1 << seed;
  }
  for (int i = 0; i < n; i++) netload_dereg_mr(&s->nl, comms[i], mh[i]);
  free(buf), free(mh), free(req);
}

static void close_all(struct side *s, void **comms, int n) {
  for (int i = 0; i < n; i++) {
    if (!comms[i]) continue;
    if (s->role == ROLE_SEND) netload_close_send(&s->nl, comms[i]);
    else netload_close_recv(&s->nl, comms[i]);
  }
}

static int no_warnings(const char *who) {
  int n = log_count(NCCL_LOG_WARN, "");
  CHECK(n == 0, "%s: %d warnings, the first: %s", who, n, log_find(NCCL_LOG_WARN, ""));
  return n == 0;
}

/* A listen comm serves rounds of connects; in round k the receiver accepts
 * delays_ms[k][j] after the connects started (or after its last accept),
 * and the sender drives n[k] connects at once. Every comm pairs with its
 * own peer and carries its data; nothing is warned on either side. */
static void late_rounds(struct side *s, const int *ns, const int (*delays)[8], int rounds,
                        long long max_connect_ms) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL, *comms[8];
  if (side_open(s)) return;
  if (s->role == ROLE_RECV) {
    CHECK(netload_listen(&s->nl, s->dev, handle, &lc) == 0 && lc, "listen");
    ctl_send(s, handle, sizeof(handle));
  } else {
    ctl_recv(s, handle, sizeof(handle));
  }
  for (int k = 0; k < rounds; k++) {
    int n = ns[k];
    ctl_sync(s); /* round k starts on both sides */
    if (s->role == ROLE_RECV) {
      for (int j = 0; j < n; j++) {
        usleep((useconds_t)delays[k][j] * 1000);
        comms[j] = lc ? accept_one(s, lc, 30000) : NULL;
      }
    } else {
      long long ms = connect_all(s, handle, comms, n, 30000);
      printf("#   round %d: %d connect%s done in %lld ms\n", k, n, n == 1 ? "" : "s", ms);
      CHECK(ms >= 0 && ms <= max_connect_ms,
            "round %d: connects took %lld ms; the last accept came %d ms after the first", k, ms,
            delays[k][n - 1]);
    }
    exchange(s, comms, n);
    ctl_sync(s);
    close_all(s, comms, n);
  }
  no_warnings(s->role == ROLE_RECV ? "the listener" : "the connector");
  ctl_sync(s);
  if (lc) netload_close_listen(&s->nl, lc);
  side_close(s);
}

/* Accept 300 ms after connect, then a second connect and accept on the
 * same listen comm: both connect promptly, no warnings. */
void case_late_accept_then_another(struct side *s) {
  static const int ns[2] = {1, 1};
  static const int delays[2][8] = {{300}, {0}};
  late_rounds(s, ns, delays, 2, 5000);
}

/* Eight connects at once on one listen comm, accepted 300 to 600 ms late,
 * then eight more accepted at once: every comm pairs with its own peer. */
void case_late_accepts_many(struct side *s) {
  static const int ns[2] = {8, 8};
  static const int delays[2][8] = {{300, 40, 40, 40, 40, 40, 40, 40}, {0}};
  late_rounds(s, ns, delays, 2, 8000);
}

/* An accept 25 s after connect (past the connector's 20 s hello wait):
 * the connector waits for the busy listener, says once what it waits for
 * (never that the handle is from an earlier run), and connects. */
void case_accept_25s_late(struct side *s) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL, *comm = NULL;
  if (side_open(s)) return;
  if (s->role == ROLE_RECV) {
    CHECK(netload_listen(&s->nl, s->dev, handle, &lc) == 0 && lc, "listen");
    ctl_send(s, handle, sizeof(handle));
    sleep(25);
    comm = lc ? accept_one(s, lc, 30000) : NULL;
    no_warnings("the listener");
  } else {
    ctl_recv(s, handle, sizeof(handle));
    long long ms = connect_all(s, handle, &comm, 1, 40000);
    printf("#   connected in %lld ms\n", ms);
    CHECK(ms >= 24000, "connected in %lld ms, before the accept", ms);
    int n = log_count(NCCL_LOG_WARN, "");
    const char *w = log_find(NCCL_LOG_WARN, "");
    CHECK(n == 1, "the connector warned %d times (once expected)", n);
    if (w) printf("#   %s\n", w);
    CHECK(w && !strstr(w, "earlier run") && strstr(w, "still waiting"),
          "the connector's warning must say what it waits for, and guess no stale handle: %s", w);
  }
  if (comm) exchange(s, &comm, 1);
  ctl_sync(s);
  if (comm) close_all(s, &comm, 1);
  if (lc) netload_close_listen(&s->nl, lc);
  side_close(s);
}

/* The listener's host goes silent (every packet dropped there) while its
 * process has not yet taken our connection: the connector, which waits for
 * a busy listener without a deadline, still ends within the peer timeout,
 * naming a host that stopped answering, not a refusal or a stale handle. */
void case_listener_host_dies_before_accept(struct side *s) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL, *comm = NULL;
  setenv("NCCL_DIAG_PEER_TIMEOUT_SEC", "4", 1);
  if (side_open(s)) return;
  if (s->role == ROLE_RECV) {
    CHECK(netload_listen(&s->nl, s->dev, handle, &lc) == 0 && lc, "listen");
    ctl_send(s, handle, sizeof(handle));
    usleep(1500 * 1000); /* the connector is connected and waits for our answer */
    CHECK(shell("nft add table inet diagblk && nft add chain inet diagblk in "
                "'{ type filter hook input priority 0; policy drop; }' && nft add chain inet "
                "diagblk out '{ type filter hook output priority 0; policy drop; }'") == 0,
          "drop every packet on this host");
    ctl_recv_int(s); /* the connector is done */
    shell("nft delete table inet diagblk");
  } else {
    ctl_recv(s, handle, sizeof(handle));
    long long t0 = ms_now();
    int r = 0;
    while (!comm && !r && ms_now() - t0 < 40000) {
      r = netload_connect(&s->nl, s->dev, handle, &comm);
      if (!comm && !r) usleep(1000);
    }
    long long ms = ms_now() - t0;
    CHECK(!comm && r != ncclSuccess, "connect must fail, returned %d after %lld ms", r, ms);
    CHECK(ms < 20000, "it must fail within the peer timeout (4 s) and slack: %lld ms", ms);
    const char *w = log_find(NCCL_LOG_WARN, "stopped answering");
    CHECK(w && !strstr(w, "earlier run"), "the WARN names a host that stopped answering: %s",
          w ? w : "none");
    ctl_send_int(s, 0);
  }
  if (comm) netload_close_send(&s->nl, comm);
  if (lc) netload_close_listen(&s->nl, lc);
  side_close(s);
}
