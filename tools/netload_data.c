/* SPDX-License-Identifier: Apache-2.0 */
/* Connections and the data path through whichever table is in use, with the
 * argument conversions NCCL's adapters make: int sizes for v5-v8 (refused,
 * never truncated, above INT_MAX), the optional-completion sentinel from v9
 * on, profiler handles from v10 on, the per-comm context from v11 on. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "tools/netload.h"
#include "tools/netload_call.h"

static void warn(struct netload *nl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct netload *nl, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (nl->logger) nl->logger(NCCL_LOG_WARN, NCCL_NET, __FILE__, __LINE__, "%s", msg);
  else fprintf(stderr, "WARN %s\n", msg);
}

/* A size the table's int cannot carry: refused before the call. */
static int fits_int(struct netload *nl, const char *fn, size_t size) {
  if (size <= INT_MAX) return 1;
  warn(nl,
       "%s of %zu bytes refused before calling ncclNetPlugin_v%d: that table carries sizes as "
       "int, at most %d bytes, and the size is never truncated. Split the transfer, or use "
       "ncclNetPlugin_v9 or newer (size_t sizes)",
       fn, size, nl->version, INT_MAX);
  return 0;
}

ncclResult_t netload_listen(struct netload *nl, int dev, void *handle, void **lc) {
  if (nl->version == 11) return nl->v11->listen(nl->ctx, dev, handle, lc);
  if (nl->version == 12) return nl->v12->listen(nl->ctx, dev, handle, lc);
  return nl->version == 5   ? nl->v5->listen(dev, handle, lc)
         : nl->version == 6 ? nl->v6->listen(dev, handle, lc)
         : nl->version == 7 ? nl->v7->listen(dev, handle, lc)
         : nl->version == 8 ? nl->v8->listen(dev, handle, lc)
         : nl->version == 9 ? nl->v9->listen(dev, handle, lc)
                            : nl->v10->listen(dev, handle, lc);
}

ncclResult_t netload_connect(struct netload *nl, int dev, void *handle, void **sc) {
  ncclNetDeviceHandle_v8_t *dh = NULL; /* NCCL's host path: a pointer to NULL */
  switch (nl->version) {
  case 5: return nl->v5->connect(dev, handle, sc);
  case 6: return nl->v6->connect(dev, handle, sc);
  case 7: return nl->v7->connect(dev, handle, sc, &dh);
  case 8: return nl->v8->connect(dev, handle, sc, &dh);
  case 9: return nl->v9->connect(dev, handle, sc, &dh);
  case 10: {
    ncclNetCommConfig_v10_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
    return nl->v10->connect(dev, &cfg, handle, sc, &dh);
  }
  case 11: return nl->v11->connect(nl->ctx, dev, handle, sc, &dh);
  default: return nl->v12->connect(nl->ctx, dev, handle, sc, &dh);
  }
}

ncclResult_t netload_accept(struct netload *nl, void *lc, void **rc) {
  ncclNetDeviceHandle_v8_t *dh = NULL;
  if (nl->version == 5) return nl->v5->accept(lc, rc);
  if (nl->version == 6) return nl->v6->accept(lc, rc);
  return nl->version == 7    ? nl->v7->accept(lc, rc, &dh)
         : nl->version == 8  ? nl->v8->accept(lc, rc, &dh)
         : nl->version == 9  ? nl->v9->accept(lc, rc, &dh)
         : nl->version == 10 ? nl->v10->accept(lc, rc, &dh)
         : nl->version == 11 ? nl->v11->accept(lc, rc, &dh)
                             : nl->v12->accept(lc, rc, &dh);
}

ncclResult_t netload_reg_mr(struct netload *nl, void *comm, void *data, size_t size, int type,
                            void **mh) {
  *mh = NULL;             /* NCCL pre-zeroes the slot */
  if (nl->version <= 7) { /* int registration sizes */
    if (!fits_int(nl, "regMr", size)) return ncclInternalError;
    return nl->version == 5   ? nl->v5->regMr(comm, data, (int)size, type, mh)
           : nl->version == 6 ? nl->v6->regMr(comm, data, (int)size, type, mh)
                              : nl->v7->regMr(comm, data, (int)size, type, mh);
  }
  return nl->version == 8    ? nl->v8->regMr(comm, data, size, type, mh)
         : nl->version == 9  ? nl->v9->regMr(comm, data, size, type, mh)
         : nl->version == 10 ? nl->v10->regMr(comm, data, size, type, mh)
         : nl->version == 11 ? nl->v11->regMr(comm, data, size, type, mh)
                             : nl->v12->regMr(comm, data, size, type, mh);
}

ncclResult_t netload_dereg_mr(struct netload *nl, void *comm, void *mh) {
  return NL_SAME(nl, deregMr(comm, mh));
}

ncclResult_t netload_isend(struct netload *nl, void *sc, void *data, size_t size, int tag, void *mh,
                           void **req) {
  *req = (void *)0xdead; /* stale value on entry, as NCCL may leave */
  if (netload_int_sizes(nl) && !fits_int(nl, "isend", size)) return ncclInternalError;
  void *ph = nl->phandles ? nl->phandles[0] : NULL;
  switch (nl->version) {
  case 5: return nl->v5->isend(sc, data, (int)size, tag, mh, req);
  case 6: return nl->v6->isend(sc, data, (int)size, tag, mh, req);
  case 7: return nl->v7->isend(sc, data, (int)size, tag, mh, req);
  case 8: return nl->v8->isend(sc, data, (int)size, tag, mh, req);
  case 9: return nl->v9->isend(sc, data, size, tag, mh, req);
  case 10: return nl->v10->isend(sc, data, size, tag, mh, ph, req);
  case 11: return nl->v11->isend(sc, data, size, tag, mh, ph, req);
  default: return nl->v12->isend(sc, data, size, tag, mh, ph, req);
  }
}

/* v5-v8: int capacities, and no optional-completion sentinel (NCCL's v8
 * adapter clears it; older NCCLs never set it). */
static ncclResult_t irecv_int(struct netload *nl, void *rc, int n, void **data, size_t *sizes,
                              int *tags, void **mh, void **req) {
  int isz[NCCL_NET_MAX_REQUESTS];
  *req = NULL;
  if (n < 1 || n > NCCL_NET_MAX_REQUESTS) return ncclInternalError;
  for (int i = 0; i < n; i++) {
    if (!fits_int(nl, "irecv", sizes[i])) return ncclInternalError;
    isz[i] = (int)sizes[i];
  }
  switch (nl->version) {
  case 5: return nl->v5->irecv(rc, n, data, isz, tags, mh, req);
  case 6: return nl->v6->irecv(rc, n, data, isz, tags, mh, req);
  case 7: return nl->v7->irecv(rc, n, data, isz, tags, mh, req);
  default: return nl->v8->irecv(rc, n, data, isz, tags, mh, req);
  }
}

ncclResult_t netload_irecv(struct netload *nl, void *rc, int n, void **data, size_t *sizes,
                           int *tags, void **mh, void **req) {
  if (netload_int_sizes(nl)) return irecv_int(nl, rc, n, data, sizes, tags, mh, req);
  *req = (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION; /* v9+ may see the sentinel */
  switch (nl->version) {
  case 9: return nl->v9->irecv(rc, n, data, sizes, tags, mh, req);
  case 10: return nl->v10->irecv(rc, n, data, sizes, tags, mh, nl->phandles, req);
  case 11: return nl->v11->irecv(rc, n, data, sizes, tags, mh, nl->phandles, req);
  default: return nl->v12->irecv(rc, n, data, sizes, tags, mh, nl->phandles, req);
  }
}

ncclResult_t netload_test(struct netload *nl, void *req, int *done, int *sizes) {
  return NL_SAME(nl, test(req, done, sizes));
}

ncclResult_t netload_iflush(struct netload *nl, void *rc, int n, void **data, int *sizes, void **mh,
                            void **req) {
  *req = NULL; /* NCCL pre-sets NULL: NULL back means nothing to wait for */
  return NL_SAME(nl, iflush(rc, n, data, sizes, mh, req));
}

ncclResult_t netload_close_send(struct netload *nl, void *sc) { return NL_SAME(nl, closeSend(sc)); }
ncclResult_t netload_close_recv(struct netload *nl, void *rc) { return NL_SAME(nl, closeRecv(rc)); }
ncclResult_t netload_close_listen(struct netload *nl, void *lc) {
  return NL_SAME(nl, closeListen(lc));
}

ncclResult_t netload_connect_pair(struct netload *nl, int dev, void **sc, void **rc,
                                  int timeout_ms) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL;
  ncclResult_t r = netload_listen(nl, dev, handle, &lc);
  *sc = *rc = NULL;
  if (r) return r;
  long long end = clock_mono_ns() / 1000000 + timeout_ms;
  while (!*sc || !*rc) {
    if (!*sc && (r = netload_connect(nl, dev, handle, sc))) break;
    if (!*rc && (r = netload_accept(nl, lc, rc))) break;
    if (clock_mono_ns() / 1000000 > end) {
      r = ncclSystemError;
      break;
    }
  }
  netload_close_listen(nl, lc);
  return r;
}

ncclResult_t netload_make_vdevice(struct netload *nl, int ndevs, const int *devs, int *dev) {
  if (nl->version == 12) {
    ncclNetVDeviceProps_v12_t p = {0};
    p.ndevs = ndevs;
    for (int i = 0; i < ndevs && i < NCCL_NET_MAX_DEVS_PER_NIC_V12; i++) p.devs[i] = devs[i];
    return nl->v12->makeVDevice ? nl->v12->makeVDevice(dev, &p) : ncclInternalError;
  }
  ncclNetVDeviceProps_t p = {0};
  p.ndevs = ndevs;
  for (int i = 0; i < ndevs && i < NCCL_NET_MAX_DEVS_PER_NIC; i++) p.devs[i] = devs[i];
  switch (nl->version) {
  case 9: return nl->v9->makeVDevice ? nl->v9->makeVDevice(dev, &p) : ncclInternalError;
  case 10: return nl->v10->makeVDevice ? nl->v10->makeVDevice(dev, &p) : ncclInternalError;
  case 11: return nl->v11->makeVDevice ? nl->v11->makeVDevice(dev, &p) : ncclInternalError;
  default: return ncclInternalError;
  }
}
