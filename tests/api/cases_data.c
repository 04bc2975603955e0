/* SPDX-License-Identifier: Apache-2.0 */
/* Moving data: sizes, capacities, truncation, request depth, close with
 * requests in flight, many comms from several threads, socket shapes. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

static const size_t core_sizes[] = {0,     1,     7,     8,      100,     4095,          4096,
                                    65535, 65536, 65537, 131072, 1 << 20, (1 << 20) + 1, 16 << 20};

/* Over real verbs, which device carries the data is part of the result. */
static void name_path(struct side *s) {
  const char *l = log_find(NCCL_LOG_INFO, "connection with");
  if (!real_verbs) return;
  CHECK(l && strstr(l, "RDMA"), "the connection is not RDMA: %s", l ? l : "no connection line");
  if (l) printf("#   %s: %s\n", s->role == ROLE_SEND ? "sender" : "receiver", l);
}

static void sizes_run(struct side *s, size_t big) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  name_path(s);
  unsigned seed = 1;
  for (size_t i = 0; i < sizeof(core_sizes) / sizeof(core_sizes[0]); i++) {
    int r = xfer_one(s, comm, core_sizes[i], core_sizes[i], seed++);
    CHECK(r == 0, "%zu bytes: %d", core_sizes[i], r);
  }
  if (big) {
    int r = xfer_one(s, comm, big, big, seed++);
    CHECK(r == 0, "%zu MiB: %d", big >> 20, r);
  }
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

void case_sizes(struct side *s) { sizes_run(s, 0); }
void case_sizes_64m(struct side *s) { sizes_run(s, (size_t)64 << 20); }
void case_sizes_1g(struct side *s) { sizes_run(s, (size_t)1 << 30); }

/* A receive larger than the message reports the message's size. */
void case_capacity(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const size_t msgs[] = {0, 1000, 70000, 3 << 20};
  for (int i = 0; i < 4; i++) {
    int r = xfer_one(s, comm, msgs[i], msgs[i] + 4 * 1024 * 1024 + 5, (unsigned)(100 + i));
    CHECK(r == 0, "message %zu into a larger buffer: %d", msgs[i], r);
  }
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* More than the receive holds: ncclInvalidUsage, naming both sizes. */
void case_truncation(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  for (int k = 0; k < 2; k++) {
    size_t size = k ? (64 << 20) : 2000, cap = k ? (1 << 20) : 1000;
    if (k) {
      /* a fresh connection: the first truncation broke the previous one */
      if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
      else netload_close_recv(&s->nl, comm);
      if (pair_open(s, &comm)) return;
    }
    int r = xfer_one(s, comm, size, cap, 5);
    if (transport_ib) {
      /* RDMA: the sender sees the capacity in the clear-to-send entry and
       * refuses; the receiver hears the reason. */
      char a[64];
      snprintf(a, sizeof(a), "holds %zu bytes", cap);
      const char *w = log_find(NCCL_LOG_WARN, a);
      if (s->role == ROLE_SEND)
        CHECK(r == ncclInvalidUsage && w && strstr(w, "bytes but"), "sender: %d, %s", r,
              w ? w : "no WARN");
      else
        CHECK(r == ncclRemoteError && w && strstr(w, "sending side ended"), "receiver: %d, %s", r,
              w ? w : "no WARN");
      ctl_sync(s);
      continue;
    }
    if (s->role == ROLE_SEND && k == 1) {
      /* Too big to sit in socket buffers: the sender must hear the
       * receiver's reason instead of blocking forever. */
      CHECK(r == ncclRemoteError, "the blocked sender got %d, expected ncclRemoteError", r);
      /* The first connection's sender may have heard its own receiver's
       * reason too (when its close is slow): find this message's. */
      const char *w = log_find(NCCL_LOG_WARN, "is 67108864 bytes");
      CHECK(w && strstr(w, "receiving side ended the connection") &&
              strstr(w, "holds 1048576 bytes"),
            "the sender must name the receiver's reason: %s", w ? w : "none");
    }
    if (s->role == ROLE_RECV) {
      CHECK(r == ncclInvalidUsage, "truncated receive returned %d, expected ncclInvalidUsage", r);
      char a[32], b[32];
      snprintf(a, sizeof(a), "is %zu bytes", size);
      snprintf(b, sizeof(b), "holds %zu bytes", cap);
      const char *w = log_find(NCCL_LOG_WARN, a);
      CHECK(w && strstr(w, b), "the WARN must name both sizes (%s, %s): %s", a, b, w ? w : "none");
      /* Both sides run with the same settings: the application's calls. */
      CHECK(w && strstr(w, "so the application posts mismatched sizes"),
            "with the same settings the WARN must name the application's calls: %s",
            w ? w : "none");
    }
    ctl_sync(s);
  }
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* 32 requests in flight per comm; the 33rd is refused, not a crash. */
void case_inflight(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  enum { N = 32, SZ = 200000 };
  uint8_t *buf = malloc((size_t)N * SZ);
  void *mh, *req[N];
  netload_reg_mr(&s->nl, comm, buf, (size_t)N * SZ, NCCL_PTR_HOST, &mh);
  for (int i = 0; i < N; i++) {
    uint8_t *p = buf + (size_t)i * SZ;
    size_t sz = (size_t)(i * 6000 + (i % 3 ? 0 : 10000));
    int r;
    if (s->role == ROLE_SEND) {
      fill_pattern(p, sz, (unsigned)i);
      r = netload_isend(&s->nl, comm, p, sz, 0, mh, &req[i]);
    } else {
      size_t cap = SZ;
      int tag = 0;
      r = netload_irecv(&s->nl, comm, 1, (void **)&p, &cap, &tag, &mh, &req[i]);
    }
    /* RDMA: a send waits (NULL request) until the receiver's entry is there. */
    for (long long end = ms_now() + 10000; !r && !req[i] && s->role == ROLE_SEND && ms_now() < end;)
      r = netload_isend(&s->nl, comm, p, sz, 0, mh, &req[i]);
    CHECK(r == 0 && req[i], "request %d: %d", i, r);
  }
  void *extra = (void *)0x1;
  int side33 = transport_ib ? ROLE_RECV : ROLE_SEND; /* whose pool is 32 deep */
  size_t one = 8;
  int tag = 0;
  int r33 = s->role != side33 ? 0
            : s->role == ROLE_SEND
              ? netload_isend(&s->nl, comm, buf, 8, 0, mh, &extra)
              : netload_irecv(&s->nl, comm, 1, (void **)&buf, &one, &tag, &mh, &extra);
  if (s->role == side33) {
    CHECK(r33 == ncclInternalError && extra == NULL, "33rd request: %d, request %p", r33, extra);
    CHECK(log_find(NCCL_LOG_WARN, "more than 32 re"), "no WARN for the 33rd request");
  }
  for (int i = 0; i < N; i++) {
    int got;
    CHECK(wait_req(s, req[i], &got, 20000) == 0, "request %d did not complete", i);
    size_t sz = (size_t)(i * 6000 + (i % 3 ? 0 : 10000));
    if (s->role == ROLE_RECV) {
      CHECK((size_t)got == sz, "request %d: %d bytes, expected %zu", i, got, sz);
      CHECK(check_pattern(buf + (size_t)i * SZ, sz, (unsigned)i) == sz, "request %d: bad data", i);
    }
  }
  ctl_sync(s);
  netload_dereg_mr(&s->nl, comm, mh);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  free(buf);
  side_close(s);
}

/* Closing with requests in flight frees everything and does not hang. */
void case_close_inflight(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  enum { N = 8, SZ = 8 << 20 };
  uint8_t *buf = malloc((size_t)N * SZ);
  void *mh, *req;
  netload_reg_mr(&s->nl, comm, buf, (size_t)N * SZ, NCCL_PTR_HOST, &mh);
  for (int i = 0; i < N; i++) {
    uint8_t *p = buf + (size_t)i * SZ;
    size_t cap = SZ;
    int tag = 0;
    if (s->role == ROLE_SEND) netload_isend(&s->nl, comm, p, SZ, 0, mh, &req);
    else netload_irecv(&s->nl, comm, 1, (void **)&p, &cap, &tag, &mh, &req);
  }
  long long t0 = ms_now();
  netload_dereg_mr(&s->nl, comm, mh);
  int r =
    s->role == ROLE_SEND ? netload_close_send(&s->nl, comm) : netload_close_recv(&s->nl, comm);
  CHECK(r == 0, "close with requests in flight returned %d", r);
  CHECK(ms_now() - t0 < 2000, "close took %lld ms", ms_now() - t0);
  ctl_sync(s);
  free(buf);
  side_close(s);
}

struct many {
  struct side *s;
  void **comms;
  int first, count, msgs;
  int failures;
};

static void *many_thread(void *arg) {
  struct many *m = arg;
  for (int k = 0; k < m->msgs; k++)
    for (int i = m->first; i < m->first + m->count; i++) {
      size_t size = (size_t)((i * 7919 + k * 104729) % 300000);
      if (xfer_one(m->s, m->comms[i], size, 300000, (unsigned)(i * 1000 + k))) m->failures++;
    }
  return NULL;
}

/* Hundreds of comms in one process, driven from several threads. */
void case_many_comms(struct side *s) {
  enum { NCOMMS = 200, NTHREADS = 4, MSGS = 3 };
  if (side_open(s)) return;
  void **comms = calloc(NCOMMS, sizeof(void *));
  int opened = 0;
  for (int i = 0; i < NCOMMS; i++) opened += pair_open(s, &comms[i]) == 0;
  CHECK(opened == NCOMMS, "%d of %d connections opened", opened, NCOMMS);
  if (opened == NCOMMS) {
    pthread_t t[NTHREADS];
    struct many m[NTHREADS];
    for (int k = 0; k < NTHREADS; k++) {
      m[k] = (struct many){s, comms, k * (NCOMMS / NTHREADS), NCOMMS / NTHREADS, MSGS, 0};
      pthread_create(&t[k], NULL, many_thread, &m[k]);
    }
    for (int k = 0; k < NTHREADS; k++) {
      pthread_join(t[k], NULL);
      CHECK(m[k].failures == 0, "thread %d: %d transfers failed", k, m[k].failures);
    }
  }
  ctl_sync(s);
  for (int i = 0; i < NCOMMS; i++) {
    if (!comms[i]) continue;
    if (s->role == ROLE_SEND) netload_close_send(&s->nl, comms[i]);
    else netload_close_recv(&s->nl, comms[i]);
  }
  free(comms);
  side_close(s);
}

/* NCCL's meaning: threads x sockets per thread data sockets, spread over
 * that many of the device's shared helpers (the pool allows 4 here). */
void case_socket_shape(struct side *s) {
  setenv("NCCL_SOCKET_NTHREADS", "3", 1);
  setenv("NCCL_NSOCKS_PERTHREAD", "2", 1);
  setenv("NCCL_DIAG_SOCKET_POOL", "4", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(log_find(NCCL_LOG_INFO, "6 data sockets, 3 helper threads"),
        "the connection does not use 3 threads x 2 sockets");
  for (unsigned i = 0; i < 6; i++)
    CHECK(xfer_one(s, comm, (size_t)(1 << 20) * (i + 1) + i, 16 << 20, i) == 0, "transfer %u", i);
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* Defaults: who moves a stripe depends on where the peer is (4 MiB caller
 * share on this host, 1 MiB over a link). The sizes give helper stripes
 * whose tails are shorter than the helper's receive low-water mark, which
 * must never wait for bytes that are not coming. */
void case_default_shape(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *want = netns_recv ? "2 data sockets, 2 helper threads (stripes up to 1048576 bytes "
                                  "moved by the caller)"
                                : "2 data sockets, 2 helper threads (stripes up to 4194304 bytes "
                                  "moved by the caller, peer on this host)";
  const char *got = log_find(NCCL_LOG_INFO, "data sockets");
  CHECK(got && strstr(got, want), "expected \"%s\" in the connection's INFO line: %s", want,
        got ? got : "none");
  const size_t sizes[] = {(8 << 20) + 2, (16 << 20) + 130, (20 << 20) + (300 << 10) + 1, 3 << 20};
  for (unsigned i = 0; i < 4; i++)
    CHECK(xfer_one(s, comm, sizes[i], 24 << 20, i + 40) == 0, "transfer of %zu bytes", sizes[i]);
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* No helper threads: the caller's thread moves everything. */
void case_caller_thread(struct side *s) {
  setenv("NCCL_SOCKET_NTHREADS", "0", 1);
  setenv("NCCL_NSOCKS_PERTHREAD", "2", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(log_find(NCCL_LOG_INFO, "2 data sockets, 0 helper threads"), "not 2 sockets, 0 threads");
  for (unsigned i = 0; i < 8; i++)
    CHECK(xfer_one(s, comm, (size_t)300000 * i * i, 16 << 20, i) == 0, "transfer %u", i);
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* *request is always written: a real request on success, NULL on error,
 * whatever it held on entry (a stale pointer, or v9+'s 0x1 sentinel). */
void case_request_written(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  char buf[64], outside[8];
  void *mh, *req = (void *)0xdead;
  netload_reg_mr(&s->nl, comm, buf, sizeof(buf), NCCL_PTR_HOST, &mh);
  if (s->role == ROLE_SEND) {
    int r = netload_isend(&s->nl, comm, outside, sizeof(outside), 0, mh, &req);
    CHECK(r == ncclInternalError && req == NULL, "isend outside its registration: %d, %p", r, req);
    CHECK(log_find(NCCL_LOG_WARN, "outside its registration"), "no WARN naming the bad buffer");
    r = netload_isend(&s->nl, comm, buf, sizeof(buf), 0, mh, &req);
    CHECK(r == 0 && req != (void *)0xdead, "isend: %d, request %p", r, req);
    for (long long end = ms_now() + 10000; !r && !req && ms_now() < end;)
      r = netload_isend(&s->nl, comm, buf, sizeof(buf), 0, mh, &req); /* RDMA: wait for the CTS */
    CHECK(r == 0 && req, "isend never posted: %d", r);
  } else {
    size_t cap = sizeof(buf);
    int tag = 0;
    void *p = buf;
    int r = netload_irecv(&s->nl, comm, 1, &p, &cap, &tag, &mh, &req);
    CHECK(r == 0 && req && req != (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION, "irecv: %d, %p", r,
          req);
  }
  CHECK(wait_req(s, req, NULL, 10000) == 0, "request did not complete");
  /* A completed request is gone: testing it again is a named misuse. */
  int done;
  CHECK(netload_test(&s->nl, req, &done, NULL) == ncclInternalError,
        "test of a finished request succeeded");
  CHECK(log_find(NCCL_LOG_WARN, "not a live request"), "no WARN for testing a finished request");
  void *mh2;
  struct netload_props props;
  netload_props(&s->nl, s->dev, &props);
  if (!(props.ptr_support &
        NCCL_PTR_CUDA)) { /* a device that takes GPU memory has no misuse here */
    CHECK(netload_reg_mr(&s->nl, comm, buf, sizeof(buf), NCCL_PTR_CUDA, &mh2) == ncclInternalError,
          "regMr of CUDA memory on a host-only device succeeded");
    CHECK(log_find(NCCL_LOG_WARN, "not host memory") ||
            log_find(NCCL_LOG_WARN, "GPU Direct RDMA is not available"),
          "no WARN for a CUDA registration");
  }
  ctl_sync(s);
  netload_dereg_mr(&s->nl, comm, mh);
  if (s->role == ROLE_SEND) {
    CHECK(netload_close_recv(&s->nl, comm) == ncclInternalError,
          "closeRecv of a send comm succeeded");
    netload_close_send(&s->nl, comm);
  } else {
    netload_close_recv(&s->nl, comm);
  }
  side_close(s);
}
