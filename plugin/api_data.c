/* SPDX-License-Identifier: Apache-2.0 */
/* The data half of the API: registrations, transfers, flushes and test().
 * Every id NCCL passes is resolved through the registry (registry.h) before
 * a transport sees anything, and the rules both transports share are
 * enforced here, once:
 *  - a registration of 0 bytes (any address, NULL included) succeeds and
 *    covers nothing; it pins nothing and reaches no transport;
 *  - a transfer of 0 bytes needs no buffer and no registration: NULL is
 *    passed on as an address the transport may read 0 bytes from;
 *  - any other transfer needs a live registration of the same comm that
 *    covers the whole buffer. */
#include <stdbool.h>
#include <stdint.h>

#include "common/log.h"
#include "plugin/api.h"
#include "plugin/api_ids.h"
#include "transport/run/stall.h"
#include "transport/transport.h"

#define API_MAX_GROUP 8 /* grouped receives a comm takes, at most (maxRecvs) */
_Static_assert(TRANSPORT_MAX_RECVS <= API_MAX_GROUP, "maxRecvs fits the API's arrays");
_Static_assert(NCCL_NET_MAX_REQUESTS *TRANSPORT_MAX_RECVS <= REGISTRY_REQS_PER_COMM,
               "every request a comm can have in flight gets an id");

/* What a 0-byte transfer's NULL buffer becomes: an address, never read. */
static char no_bytes[1];

/* dmabuf: a dma-buf registration (offset, fd), else a plain one. */
static ncclResult_t reg(struct transport_comm *c, const void *cid, void *data, size_t size,
                        int type, bool dmabuf, uint64_t offset, int fd, void **mhandle) {
  void *mh = NULL;
  if (size) {
    ncclResult_t r = dmabuf ? c->ops->reg_mr_dmabuf(c, data, size, type, offset, fd, &mh)
                            : c->ops->reg_mr(c, data, size, type, &mh);
    if (r != ncclSuccess) return r;
  }
  struct registry_mr mr = {mh, (uintptr_t)data, size, cid};
  if (registry_mr_add(cid, &mr, mhandle) == RM_NONE) return ncclSuccess;
  WARN("regMr of %zu bytes with %s: out of memory for its id, or more than four million "
       "registrations in this process",
       size, c->peer.desc);
  if (mh) c->ops->dereg_mr(c, mh);
  return ncclSystemError;
}

ncclResult_t diag_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
  *mhandle = NULL;
  struct transport_comm *c = api_comm("regMr", comm, RK_COMMS);
  if (!c) return ncclInternalError;
  return reg(c, comm, data, size, type, false, 0, -1, mhandle);
}

ncclResult_t diag_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
                                int fd, void **mhandle) {
  *mhandle = NULL;
  struct transport_comm *c = api_comm("regMrDmaBuf", comm, RK_COMMS);
  if (!c) return ncclInternalError;
  if (!c->ops->reg_mr_dmabuf) {
    WARN("regMrDmaBuf on the %s connection with %s: this device does not do dma-buf", c->ops->name,
         c->peer.desc);
    return ncclInternalError;
  }
  return reg(c, comm, data, size, type, true, offset, fd, mhandle);
}

ncclResult_t diag_dereg_mr(void *comm, void *mhandle) {
  struct transport_comm *c = api_comm("deregMr", comm, RK_COMMS);
  if (!c) return ncclInternalError;
  if (!mhandle) return ncclSuccess; /* as NCCL's own transports: nothing to do */
  struct registry_mr mr;
  enum registry_miss miss = registry_mr_take(comm, mhandle, &mr);
  if (miss) {
    api_mr_miss("deregMr", c, mhandle, miss, &mr);
    return ncclInternalError;
  }
  return mr.mh ? c->ops->dereg_mr(c, mr.mh) : ncclSuccess;
}

/* The run-time figures (transport/run/stats.h). A completion's bytes
 * are what test() reports in sizes, as NCCL reads them. */
static void note_post(struct transport_comm *c, void *req, int n) {
  struct transport_req *r = req;
  r->is_counted = run_stats_is_on();
  if (!r->is_counted) return;
  r->posted_n = (uint8_t)n;
  run_stats_post(&c->stats, r);
}

static void note_done(struct transport_req *r, const int *sizes) {
  if (!r->is_counted) return;
  uint64_t bytes = 0;
  for (int i = 0; sizes && i < (r->posted_n ? r->posted_n : 1); i++)
    bytes += sizes[i] > 0 ? (uint64_t)sizes[i] : 0;
  run_stats_done(&r->comm->stats, r, bytes);
}

/* The transport's request, under an id of the comm's. */
static ncclResult_t publish(const struct transport_comm *c, const void *cid, const char *fn,
                            ncclResult_t r, void *req, void **request) {
  if (r != ncclSuccess || !req) return r;
  if (registry_req_add(cid, req, request) == RM_NONE) return ncclSuccess;
  WARN("%s with %s: more than %d requests in flight on one connection", fn, c->peer.desc,
       REGISTRY_REQS_PER_COMM);
  return ncclInternalError;
}

ncclResult_t diag_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                        void **request) {
  *request = NULL;
  run_note_call(); /* the caller posts: not stuck (transport/run/stall.h) */
  struct transport_comm *c = api_comm("isend", send_comm, RK_BIT(RK_SEND));
  if (!c) return ncclInternalError;
  if (size > DIAG_MAX_P2P_BYTES) {
    WARN("isend of %zu bytes to %s refused: larger than the %llu bytes this plugin takes in one "
         "message (its maxP2pBytes, which NCCL also assumes for tables before v9). NCCL splits "
         "transfers below it; a caller that does not must split this one",
         size, c->peer.desc, (unsigned long long)DIAG_MAX_P2P_BYTES);
    return ncclInternalError;
  }
  struct registry_mr mr;
  if (!api_mr_for("isend", c, send_comm, mhandle, data, size, &mr)) return ncclInternalError;
  void *req = NULL;
  ncclResult_t r = c->ops->isend(c, data ? data : no_bytes, size, tag, mr.mh, &req);
  if (r == ncclSuccess && req) note_post(c, req, 0);
  return publish(c, send_comm, "isend", r, req, request);
}

ncclResult_t diag_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                        void **mhandles, void **request) {
  *request = NULL;
  run_note_call(); /* the caller posts: not stuck (transport/run/stall.h) */
  struct transport_comm *c = api_comm("irecv", recv_comm, RK_BIT(RK_RECV));
  if (!c) return ncclInternalError;
  if (n < 1 || n > c->max_recvs || n > API_MAX_GROUP) {
    WARN("irecv from %s: %d grouped receives, this device takes 1 to %d (maxRecvs)", c->peer.desc,
         n, c->max_recvs);
    return ncclInternalError;
  }
  void *bufs[API_MAX_GROUP], *mhs[API_MAX_GROUP];
  for (int i = 0; i < n; i++) {
    struct registry_mr mr;
    if (!api_mr_for("irecv", c, recv_comm, mhandles ? mhandles[i] : NULL, data[i], sizes[i], &mr))
      return ncclInternalError;
    bufs[i] = data[i] ? data[i] : no_bytes;
    mhs[i] = mr.mh;
  }
  void *req = NULL;
  ncclResult_t r = c->ops->irecv(c, n, bufs, sizes, tags, mhs, &req);
  if (r == ncclSuccess && req) note_post(c, req, n);
  return publish(c, recv_comm, "irecv", r, req, request);
}

ncclResult_t diag_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                         void **request) {
  *request = NULL;
  struct transport_comm *c = api_comm("iflush", recv_comm, RK_BIT(RK_RECV));
  if (!c) return ncclInternalError;
  if (n < 1 || n > c->max_recvs || n > API_MAX_GROUP) {
    WARN("iflush on the connection with %s: %d buffers, this device takes 1 to %d (maxRecvs)",
         c->peer.desc, n, c->max_recvs);
    return ncclInternalError;
  }
  void *bufs[API_MAX_GROUP], *mhs[API_MAX_GROUP];
  int sz[API_MAX_GROUP];
  for (int i = 0; i < n; i++) {
    struct registry_mr mr;
    sz[i] = sizes && sizes[i] > 0 ? sizes[i] : 0;
    if (!api_mr_for("iflush", c, recv_comm, mhandles ? mhandles[i] : NULL, data[i], (size_t)sz[i],
                    &mr))
      return ncclInternalError;
    bufs[i] = data[i] ? data[i] : no_bytes;
    mhs[i] = mr.mh;
  }
  void *req = NULL;
  ncclResult_t r = c->ops->iflush(c, n, bufs, sz, mhs, &req);
  if (r == ncclSuccess && req) ((struct transport_req *)req)->is_counted = false;
  return publish(c, recv_comm, "iflush", r, req, request);
}

/* Kept out of line: test() is NCCL's most frequent call. */
static __attribute__((cold, noinline)) ncclResult_t test_miss(const void *request,
                                                              enum registry_miss miss) {
  if (miss == RM_STALE)
    WARN("test: %p is not a live request: it completed already (a test() after it reported "
         "done), or its connection was closed",
         request);
  else
    WARN("test: %p is not a live request of this plugin (a wild or corrupted pointer, or "
         "another kind of id); refused without touching it",
         request);
  return ncclInternalError;
}

ncclResult_t diag_test(void *request, int *done, int *sizes) {
  run_note_call();
  *done = 0;
  enum registry_miss miss;
  struct registry_req_ref ref;
  struct transport_req *r = registry_req_get(request, &ref, &miss);
  if (__builtin_expect(!r, 0)) return test_miss(request, miss);
  ncclResult_t res = r->comm->ops->test(r, done, sizes);
  if (*done) {
    note_done(r, sizes);
    registry_req_done(&ref);
  }
  return res;
}
