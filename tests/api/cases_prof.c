/* SPDX-License-Identifier: Apache-2.0 */
/* Network events for NCCL's profiler: init (v10+) gets a recording
 * callback, isend/irecv get per-request handles, and every transfer must
 * report what NCCL's own transports report: over RDMA one event per work
 * request with its queue pair, opcode and length; over TCP one event per
 * request with its socket, direction and length. Every start is stopped
 * by the time test() reports done. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "plugin/abi/net_profiler.h"

#define REC_MAX 256

struct rec {
  void *phandle;
  int64_t plugin_id;
  ncclProfilerNetIbDescr_v1_t ib;
  ncclProfilerNetSockDescr_v1_t sock;
  int is_stopped;
};

static struct rec recs[REC_MAX];
static int nrecs, bad_stops;

/* The handle given back is the record's address, as a profiler's would be. */
static ncclResult_t record(void **eh, int type, void *phandle, int64_t plugin_id, void *data) {
  if (type == ncclProfilerNetEventStart) {
    if (nrecs == REC_MAX) return ncclInternalError;
    struct rec *r = &recs[nrecs++];
    memset(r, 0, sizeof(*r));
    r->phandle = phandle;
    r->plugin_id = plugin_id;
    if ((plugin_id & NCCL_PROFILER_NET_TYPE_MASK) == NCCL_PROFILER_NET_TYPE_IB)
      memcpy(&r->ib, data, sizeof(r->ib));
    else memcpy(&r->sock, data, sizeof(r->sock));
    *eh = r;
    return ncclSuccess;
  }
  struct rec *r = *eh;
  if (type != ncclProfilerNetEventStop || r < recs || r >= recs + nrecs || r->is_stopped)
    bad_stops++;
  else r->is_stopped = 1;
  return ncclSuccess;
}

static void close_comm(struct side *s, void *comm) {
  if (!comm) return;
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
}

/* The events of one request (its handle), all stopped: how many. */
static int events_of(void *ph, int *unstopped) {
  int n = 0;
  for (int i = 0; i < nrecs; i++) {
    if (recs[i].phandle != ph) continue;
    n++;
    if (!recs[i].is_stopped) (*unstopped)++;
  }
  return n;
}

static void check_ib(struct side *s, const struct rec *r, size_t size, bool is_grouped) {
  CHECK(r->plugin_id == (int64_t)(NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER),
        "plugin id 0x%llx, expected IB version 1", (long long)r->plugin_id);
  CHECK(r->ib.type == ncclProfileQp, "descriptor type %d", r->ib.type);
  CHECK(r->ib.qp.device == s->dev, "device %d, the comm's is %d", r->ib.qp.device, s->dev);
  CHECK(r->ib.qp.length == size, "length %zu, expected %zu", r->ib.qp.length, size);
  char qp[32];
  snprintf(qp, sizeof(qp), "qp 0x%x:", (unsigned)r->ib.qp.qpNum);
  CHECK(r->ib.qp.qpNum > 0 && log_find(NCCL_LOG_INFO, qp),
        "qp number 0x%x is not one of this connection's queue pairs", (unsigned)r->ib.qp.qpNum);
  /* A single send's data rides in its write-with-immediate, as NCCL posts
   * it (adaptive routing off); a send into a grouped receive is a plain
   * write, the group's immediate follows it. */
  int want = 129;           /* a receive: the RECV_RDMA_WITH_IMM completion */
  if (s->role == ROLE_SEND) /* RDMA_WRITE, or WRITE_WITH_IMM (a 0-byte send moves only that) */
    want = is_grouped && size ? 0 : 1;
  CHECK(r->ib.qp.opcode == want, "opcode %d, expected %d", r->ib.qp.opcode, want);
}

static void check_sock(struct side *s, const struct rec *r, size_t size) {
  CHECK(r->plugin_id == (int64_t)(NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER),
        "plugin id 0x%llx, expected socket version 1", (long long)r->plugin_id);
  CHECK(r->sock.type == ncclProfileSocket, "descriptor type %d", r->sock.type);
  CHECK(r->sock.sock.fd >= 0, "fd %d", r->sock.sock.fd);
  CHECK(r->sock.sock.op == (s->role == ROLE_SEND ? 0 : 1), "op %d on the %s side", r->sock.sock.op,
        s->role == ROLE_SEND ? "send" : "receive");
  CHECK(r->sock.sock.length == size, "length %zu, expected %zu", r->sock.sock.length, size);
}

/* A receive that never completes, then the close: its events end there. */
static void close_abandoned(struct side *s, void *comm) {
  enum { CAP = 4096 };
  static uint8_t buf[CAP];
  int mark, tag = 99, done = 0;
  void *mh = NULL, *req = NULL, *ph = &mark, *data = buf;
  size_t cap = CAP;
  netload_reg_mr(&s->nl, comm, buf, CAP, NCCL_PTR_HOST, &mh);
  s->nl.phandles = &ph;
  CHECK(netload_irecv(&s->nl, comm, 1, &data, &cap, &tag, &mh, &req) == 0 && req, "irecv");
  s->nl.phandles = NULL;
  if (req) netload_test(&s->nl, req, &done, NULL);
  int unstopped = 0, n = events_of(&mark, &unstopped);
  CHECK(n == (s->abi >= 10 ? 1 : 0) && unstopped == n, "a pending receive: %d events, %d running",
        n, unstopped);
  netload_dereg_mr(&s->nl, comm, mh);
  close_comm(s, comm);
  unstopped = 0;
  events_of(&mark, &unstopped);
  CHECK(unstopped == 0, "%d events of a receive still running after its comm closed", unstopped);
}

void case_prof_events(struct side *s) {
  s->nl.prof = record;
  nrecs = bad_stops = 0;
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  static const size_t sizes[] = {1000, 70000, 0, 3 << 20};
  enum { N = sizeof(sizes) / sizeof(sizes[0]) };
  int marks[N];
  for (int i = 0; i < N; i++) {
    void *ph = &marks[i];
    s->nl.phandles = &ph;
    CHECK(xfer_one(s, comm, sizes[i], 3 << 20, (unsigned)i) == 0, "transfer %d", i);
    s->nl.phandles = NULL;
    int unstopped = 0, n = events_of(&marks[i], &unstopped);
    int first = nrecs - n;
    bool is_v10 = s->abi >= 10;
    CHECK(n == (is_v10 ? 1 : 0), "transfer %d of %zu bytes (v%d): %d events, expected %d", i,
          sizes[i], s->abi, n, is_v10 ? 1 : 0);
    CHECK(unstopped == 0, "transfer %d: %d events not stopped when test() reported done", i,
          unstopped);
    if (n != 1) continue;
    if (transport_ib) check_ib(s, &recs[first], s->role == ROLE_SEND ? sizes[i] : 3 << 20, false);
    else check_sock(s, &recs[first], s->role == ROLE_SEND ? sizes[i] : 3 << 20);
  }
  /* No handle, no event (NCCL's callback dereferences the handle). */
  int before = nrecs;
  CHECK(xfer_one(s, comm, 5000, 5000, 9) == 0, "transfer without a handle");
  CHECK(nrecs == before, "%d events for a request without a profiler handle", nrecs - before);
  ctl_sync(s);
  if (s->role == ROLE_RECV) close_abandoned(s, comm);
  else close_comm(s, comm);
  CHECK(bad_stops == 0, "%d stops of a handle never started or stopped twice", bad_stops);
  side_close(s);
}

/* Over RDMA, a grouped receive: one event per buffer, each under its own
 * handle, on the receive's queue pair; each send of the group its own. */
void case_prof_grouped(struct side *s) {
  enum { N = 3, CAP = 100000 };
  s->nl.prof = record;
  nrecs = bad_stops = 0;
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  static const size_t sizes[N] = {5000, 0, 70000};
  uint8_t *buf = malloc((size_t)N * CAP);
  void *mh, *data[N], *mhs[N], *req[N] = {0}, *ph[N];
  size_t caps[N];
  int tags[N], marks[N];
  netload_reg_mr(&s->nl, comm, buf, (size_t)N * CAP, NCCL_PTR_HOST, &mh);
  for (int i = 0; i < N; i++)
    data[i] = buf + (size_t)i * CAP, mhs[i] = mh, caps[i] = CAP, tags[i] = 40 + i,
    ph[i] = &marks[i];
  if (s->role == ROLE_RECV) {
    s->nl.phandles = ph;
    CHECK(netload_irecv(&s->nl, comm, N, data, caps, tags, mhs, &req[0]) == 0 && req[0], "irecv");
    s->nl.phandles = NULL;
    int got[N];
    if (req[0]) CHECK(wait_req_sizes(s, req[0], got, N, 20000) == 0, "grouped receive not done");
  } else {
    for (int i = 0; i < N; i++) {
      void *one = ph[i];
      s->nl.phandles = &one;
      long long end = ms_now() + 20000;
      int r;
      do r = netload_isend(&s->nl, comm, data[i], sizes[i], tags[i], mh, &req[i]);
      while (!r && !req[i] && ms_now() < end);
      s->nl.phandles = NULL;
      CHECK(r == 0 && req[i], "isend %d: %d", i, r);
    }
    for (int i = 0; i < N; i++)
      if (req[i]) CHECK(wait_req(s, req[i], NULL, 20000) == 0, "send %d not done", i);
  }
  int want = s->abi >= 10 ? N : 0; /* tables before v10 carry no handles */
  CHECK(nrecs == want, "%d events for a group of %d (v%d), expected %d", nrecs, N, s->abi, want);
  for (int i = 0; i < want; i++) {
    int unstopped = 0, n = events_of(&marks[i], &unstopped);
    CHECK(n == 1 && !unstopped, "buffer %d: %d events, %d not stopped", i, n, unstopped);
    for (int k = 0; k < nrecs && n == 1; k++)
      if (recs[k].phandle == &marks[i]) {
        check_ib(s, &recs[k], s->role == ROLE_SEND ? sizes[i] : CAP, true);
        CHECK(recs[k].ib.qp.qpNum == recs[0].ib.qp.qpNum, "buffer %d on another queue pair", i);
      }
  }
  CHECK(bad_stops == 0, "%d stops of a handle never started or stopped twice", bad_stops);
  netload_dereg_mr(&s->nl, comm, mh);
  free(buf);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}
