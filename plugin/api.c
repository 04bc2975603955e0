/* SPDX-License-Identifier: Apache-2.0 */
/* The version-neutral API: validation at the boundary, then dispatch. */
#include "plugin/api.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/events.h"
#include "common/knobs.h"
#include "common/log.h"
#include "common/ncclver.h"
#include "common/version.h"
#include "transport/ib/ib.h"
#include "transport/transport.h"

/* Our log levels and subsystem bits are NCCL's values: the sink passes
 * them through unchanged. */
_Static_assert((int)LOG_LEVEL_WARN == (int)NCCL_LOG_WARN, "log levels are NCCL's");
_Static_assert((int)LOG_LEVEL_INFO == (int)NCCL_LOG_INFO, "log levels are NCCL's");
_Static_assert((int)LOG_LEVEL_TRACE == (int)NCCL_LOG_TRACE, "log levels are NCCL's");
_Static_assert((int)LOG_SUBSYS_INIT == (int)NCCL_INIT && (int)LOG_SUBSYS_NET == (int)NCCL_NET &&
                 (int)LOG_SUBSYS_ENV == (int)NCCL_ENV,
               "subsystem bits are NCCL's");

static _Atomic(ncclDebugLogger_t) nccl_logger;

static void nccl_sink(enum log_level level, unsigned long flags, const char *file, int line,
                      const char *text) {
  ncclDebugLogger_t fn = atomic_load(&nccl_logger);
  if (fn) fn((ncclDebugLogLevel)level, flags, file, line, "%s", text);
}

/* The first logger NCCL hands us wins (v11 passes one per communicator). */
static void set_nccl_logger(ncclDebugLogger_t logger) {
  ncclDebugLogger_t expected = NULL;
  if (!logger || !atomic_compare_exchange_strong(&nccl_logger, &expected, logger)) return;
  log_set_sink(nccl_sink);
}

static struct diag_ctx default_ctx = {OBJ_CTX, 0, NCCL_NET_TRAFFIC_CLASS_UNDEF};
static atomic_int live_ctxs; /* v11/v12 communicators; the last finalize closes the census */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static atomic_int bound_abi; /* the table of NCCL's first init call */

static void init_once_fn(void) {
  knob_load(0);
  char nv[32];
  int abi = atomic_load(&bound_abi);
  nccl_version_str(nccl_version_code(), nv, sizeof(nv));
  if (abi)
    INFO(LOG_INIT, "libnccl-net-diag %s (NCCL %s in this process, bound through ncclNetPlugin_v%d)",
         DIAG_VERSION, nv, abi);
  else INFO(LOG_INIT, "libnccl-net-diag %s (NCCL %s in this process)", DIAG_VERSION, nv);
  transport_host_init();
  const struct transport_host *h = transport_host();
  struct ev e;
  ev_begin(&e, "init");
  ev_str(&e, "plugin_version", DIAG_VERSION);
  ev_str(&e, "nccl_version", nv);
  if (abi) ev_int(&e, "abi", abi);
  ev_int(&e, "devices", h->ndev);
  if (!h->ndev) ev_str(&e, "why_none", h->why_none);
  ev_end(&e);
  if (!h->ndev) {
    WARN("no usable network device, so NCCL cannot use this plugin: %s", h->why_none);
    return;
  }
  char list[1024];
  size_t o = 0;
  for (int i = 0; i < h->ndev && o < sizeof(list); i++) {
    const struct transport_dev *d = &h->devs[i];
    char a[64];
    ipaddr_str(&d->addr, a, sizeof(a));
    o += (size_t)snprintf(list + o, sizeof(list) - o, " [%d]%s:%s/%s", i, d->name, a,
                          d->is_ib ? "RDMA" : "TCP");
  }
  INFO(LOG_INIT, "using%s", list);
}

ncclResult_t diag_init(ncclDebugLogger_t logger, int abi) {
  int none = 0;
  atomic_compare_exchange_strong(&bound_abi, &none, abi);
  set_nccl_logger(logger);
  pthread_once(&init_once, init_once_fn);
  return ncclSuccess;
}

struct diag_ctx *diag_ctx_new(uint64_t comm_id, int traffic_class) {
  struct diag_ctx *c = calloc(1, sizeof(*c));
  if (!c) return &default_ctx; /* still usable; nothing to free */
  c->obj = OBJ_CTX;
  c->comm_id = comm_id;
  c->traffic_class = traffic_class;
  atomic_fetch_add(&live_ctxs, 1);
  return c;
}

ncclResult_t diag_ctx_free(struct diag_ctx *ctx) {
  if (!ctx || ctx == &default_ctx) return ncclSuccess;
  if (ctx->obj != OBJ_CTX) {
    WARN("finalize: %p is not a context from this plugin's init", (void *)ctx);
    return ncclInternalError;
  }
  ctx->obj = OBJ_DEAD;
  free(ctx);
  if (atomic_fetch_sub(&live_ctxs, 1) == 1) ev_census("last communicator finalized");
  return ncclSuccess;
}

static const struct transport_dev *get_dev(const char *fn, int dev) {
  const struct transport_host *h = transport_host();
  if (dev < 0 || dev >= h->ndev) {
    WARN("%s: device %d does not exist (this plugin has %d devices)", fn, dev, h->ndev);
    return NULL;
  }
  return &h->devs[dev];
}

ncclResult_t diag_devices(int *ndev) {
  pthread_once(&init_once, init_once_fn);
  *ndev = transport_host()->ndev;
  return ncclSuccess;
}

ncclResult_t diag_get_properties(int dev, struct diag_props *p) {
  const struct transport_dev *d = get_dev("getProperties", dev);
  if (!d) return ncclInvalidArgument;
  memset(p, 0, sizeof(*p));
  p->name = (char *)d->name;
  p->pci_path = d->pci_path[0] ? (char *)d->pci_path : NULL;
  p->guid = d->guid;
  p->ptr_support = d->is_ib ? ib_ptr_support(d) : NCCL_PTR_HOST;
  p->speed = d->speed_mbps;
  p->port = d->port;
  p->max_comms = 65536;
  p->max_recvs = d->is_ib ? IB_MAX_RECVS : 1;
  p->max_p2p_bytes = DIAG_MAX_P2P_BYTES;
  p->max_coll_bytes = DIAG_MAX_COLL_BYTES;
  return ncclSuccess;
}

static struct diag_ctx *ctx_or_default(struct diag_ctx *ctx) {
  return ctx && ctx->obj == OBJ_CTX ? ctx : &default_ctx;
}

ncclResult_t diag_listen(struct diag_ctx *ctx, int dev, void *handle, void **listen_comm) {
  (void)ctx_or_default(ctx);
  *listen_comm = NULL;
  const struct transport_dev *d = get_dev("listen", dev);
  if (!d) return ncclInvalidArgument;
  return transport_listen(d, handle, listen_comm);
}

ncclResult_t diag_connect(struct diag_ctx *ctx, int dev, void *handle, void **send_comm) {
  *send_comm = NULL;
  const struct transport_dev *d = get_dev("connect", dev);
  if (!d) return ncclInvalidArgument;
  return transport_connect(d, ctx_or_default(ctx)->traffic_class, handle, send_comm);
}

static int check_obj(const char *fn, const void *p, uint32_t want, const char *what) {
  if (p && *(const uint32_t *)p == want) return 1;
  WARN("%s: %p is not a %s of this plugin%s", fn, p, what,
       p && *(const uint32_t *)p == OBJ_DEAD ? " (it was already closed)" : "");
  return 0;
}

ncclResult_t diag_accept(void *listen_comm, void **recv_comm) {
  *recv_comm = NULL;
  if (!check_obj("accept", listen_comm, OBJ_LISTEN, "listen comm")) return ncclInternalError;
  return transport_accept(listen_comm, recv_comm);
}

static struct transport_comm *any_comm(const char *fn, void *comm) {
  if (comm && (*(uint32_t *)comm == OBJ_SEND || *(uint32_t *)comm == OBJ_RECV)) return comm;
  check_obj(fn, comm, OBJ_SEND, "send or receive comm");
  return NULL;
}

ncclResult_t diag_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
  struct transport_comm *c = any_comm("regMr", comm);
  if (!c) return ncclInternalError;
  return c->ops->reg_mr(c, data, size, type, mhandle);
}

ncclResult_t diag_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
                                int fd, void **mhandle) {
  struct transport_comm *c = any_comm("regMrDmaBuf", comm);
  if (!c) return ncclInternalError;
  if (!c->ops->reg_mr_dmabuf) {
    WARN("regMrDmaBuf on the %s connection with %s: this device does not do dma-buf", c->ops->name,
         c->peer.desc);
    return ncclInternalError;
  }
  return c->ops->reg_mr_dmabuf(c, data, size, type, offset, fd, mhandle);
}

ncclResult_t diag_dereg_mr(void *comm, void *mhandle) {
  struct transport_comm *c = any_comm("deregMr", comm);
  if (!c) return ncclInternalError;
  return c->ops->dereg_mr(c, mhandle);
}

ncclResult_t diag_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                        void **request) {
  *request = NULL;
  if (!check_obj("isend", send_comm, OBJ_SEND, "send comm")) return ncclInternalError;
  struct transport_comm *c = send_comm;
  if (size > DIAG_MAX_P2P_BYTES) {
    WARN("isend of %zu bytes to %s refused: larger than the %llu bytes this plugin takes in one "
         "message (its maxP2pBytes, which NCCL also assumes for tables before v9). NCCL splits "
         "transfers below it; a caller that does not must split this one",
         size, c->peer.desc, (unsigned long long)DIAG_MAX_P2P_BYTES);
    return ncclInternalError;
  }
  return c->ops->isend(c, data, size, tag, mhandle, request);
}

ncclResult_t diag_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                        void **mhandles, void **request) {
  *request = NULL;
  if (!check_obj("irecv", recv_comm, OBJ_RECV, "receive comm")) return ncclInternalError;
  struct transport_comm *c = recv_comm;
  if (n < 1 || n > c->max_recvs) {
    WARN("irecv from %s: %d grouped receives, this device takes 1 to %d (maxRecvs)", c->peer.desc,
         n, c->max_recvs);
    return ncclInternalError;
  }
  return c->ops->irecv(c, n, data, sizes, tags, mhandles, request);
}

ncclResult_t diag_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                         void **request) {
  *request = NULL;
  if (!check_obj("iflush", recv_comm, OBJ_RECV, "receive comm")) return ncclInternalError;
  struct transport_comm *c = recv_comm;
  return c->ops->iflush(c, n, data, sizes, mhandles, request);
}

ncclResult_t diag_test(void *request, int *done, int *sizes) {
  *done = 0;
  if (!check_obj("test", request, OBJ_REQ, "live request")) return ncclInternalError;
  struct transport_req *r = request;
  return r->comm->ops->test(request, done, sizes);
}

ncclResult_t diag_close_send(void *send_comm) {
  if (!check_obj("closeSend", send_comm, OBJ_SEND, "send comm")) return ncclInternalError;
  struct transport_comm *c = send_comm;
  return c->ops->close(c);
}

ncclResult_t diag_close_recv(void *recv_comm) {
  if (!check_obj("closeRecv", recv_comm, OBJ_RECV, "receive comm")) return ncclInternalError;
  struct transport_comm *c = recv_comm;
  return c->ops->close(c);
}

ncclResult_t diag_close_listen(void *listen_comm) {
  if (!check_obj("closeListen", listen_comm, OBJ_LISTEN, "listen comm")) return ncclInternalError;
  return transport_close_listen(listen_comm);
}
