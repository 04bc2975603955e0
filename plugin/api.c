/* SPDX-License-Identifier: Apache-2.0 */
/* The version-neutral API: init, devices, connection setup and close;
 * registrations, transfers and test() are in api_data.c. The comms NCCL
 * holds are ids (registry.h), resolved on every call. */
#include "plugin/api.h"
#include "plugin/api_ids.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/events.h"
#include "common/knob_names.h"
#include "common/knobs.h"
#include "common/log.h"
#include "common/ncclver.h"
#include "common/version.h"
#include "plugin/vdev.h"
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
  transport_prefs_read();
  nccl_knobs_note();
  knob_names_warn_unknown(); /* a misspelt setting, which NCCL ignores silently */
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
                          transport_dev_kind(d));
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
  if (atomic_fetch_sub(&live_ctxs, 1) == 1) {
    ev_census("last communicator finalized");
    diag_vdev_forget();
  }
  return ncclSuccess;
}

/* A virtual device's listens and connects each take one of its ports
 * (plugin/vdev.h); handle: the listener's, for a connect. */
static const struct transport_dev *get_dev_for(const char *fn, int dev, const void *handle) {
  const struct transport_host *h = transport_host();
  const struct transport_dev *member = diag_vdev_pick(dev, handle);
  if (member) return member;
  if (dev < 0 || dev >= h->ndev) {
    WARN("%s: device %d does not exist (this plugin has %d devices)", fn, dev,
         h->ndev + diag_vdev_count());
    return NULL;
  }
  return &h->devs[dev];
}

static const struct transport_dev *get_dev(const char *fn, int dev) {
  return get_dev_for(fn, dev, NULL);
}

ncclResult_t diag_devices(int *ndev) {
  pthread_once(&init_once, init_once_fn);
  *ndev = transport_host()->ndev + diag_vdev_count();
  return ncclSuccess;
}

ncclResult_t diag_get_properties(int dev, struct diag_props *p) {
  const struct diag_vdev *v = diag_vdev_get(dev); /* NCCL: its first member's, fused */
  const struct transport_dev *d =
    v ? &transport_host()->devs[v->devs[0]] : get_dev("getProperties", dev);
  if (!d) return ncclInvalidArgument;
  memset(p, 0, sizeof(*p));
  p->name = (char *)d->name;
  p->pci_path = d->pci_path[0] ? (char *)d->pci_path : NULL;
  p->guid = d->guid;
  p->ptr_support = transport_dev_ptr_support(d);
  p->speed = d->speed_mbps;
  p->port = d->port;
  p->max_comms = 65536;
  p->max_recvs = transport_dev_max_recvs(d);
  p->max_p2p_bytes = DIAG_MAX_P2P_BYTES;
  p->max_coll_bytes = DIAG_MAX_COLL_BYTES;
  p->ndevs = 1;
  p->devs[0] = dev;
  diag_dev_rail_plane(d, &p->rail_id, &p->plane_id);
  if (v) {
    p->name = (char *)v->name;
    p->speed = v->speed_mbps;
    p->ptr_support = v->ptr_support;
    p->ndevs = v->ndevs;
    memcpy(p->devs, v->devs, sizeof(int) * (size_t)v->ndevs);
    p->rail_id = v->rail_id;
    p->plane_id = v->plane_id;
  }
  return ncclSuccess;
}

static struct diag_ctx *ctx_or_default(struct diag_ctx *ctx) {
  return ctx && ctx->obj == OBJ_CTX ? ctx : &default_ctx;
}

/* A comm the transport made, under an id (closed again when there is no
 * room for one). */
static ncclResult_t publish_comm(enum registry_kind kind, struct transport_comm *c, void **out) {
  transport_comm_watch(c);
  if (!api_comm_id(kind, c, c->peer.desc, out)) return ncclSuccess;
  transport_comm_close(c);
  return ncclSystemError;
}

ncclResult_t diag_listen(struct diag_ctx *ctx, int dev, void *handle, void **listen_comm) {
  (void)ctx_or_default(ctx);
  *listen_comm = NULL;
  const struct transport_dev *d = get_dev("listen", dev);
  if (!d) return ncclInvalidArgument;
  diag_vdev_failover_note(dev, d);
  void *l = NULL;
  ncclResult_t r = transport_listen(d, handle, &l);
  if (r != ncclSuccess || !l) return r;
  char desc[96];
  snprintf(desc, sizeof(desc), "on device %s", d->name);
  if (!api_comm_id(RK_LISTEN, l, desc, listen_comm)) return ncclSuccess;
  transport_close_listen(l);
  return ncclSystemError;
}

ncclResult_t diag_connect(struct diag_ctx *ctx, int dev, void *handle, void **send_comm) {
  *send_comm = NULL;
  const struct transport_dev *d = get_dev_for("connect", dev, handle);
  if (!d) return ncclInvalidArgument;
  diag_vdev_failover_note(dev, d);
  void *c = NULL;
  ncclResult_t r = transport_connect(d, ctx_or_default(ctx)->traffic_class, handle, &c);
  if (r != ncclSuccess || !c) return r;
  return publish_comm(RK_SEND, c, send_comm);
}

ncclResult_t diag_accept(void *listen_comm, void **recv_comm) {
  *recv_comm = NULL;
  void *l = api_listen("accept", listen_comm);
  if (!l) return ncclInternalError;
  void *c = NULL;
  ncclResult_t r = transport_accept(l, &c);
  if (r != ncclSuccess || !c) return r;
  return publish_comm(RK_RECV, c, recv_comm);
}

ncclResult_t diag_close_send(void *send_comm) {
  struct transport_comm *c = api_comm_take("closeSend", send_comm, RK_BIT(RK_SEND));
  return c ? transport_comm_close(c) : ncclInternalError;
}

ncclResult_t diag_close_recv(void *recv_comm) {
  struct transport_comm *c = api_comm_take("closeRecv", recv_comm, RK_BIT(RK_RECV));
  return c ? transport_comm_close(c) : ncclInternalError;
}

ncclResult_t diag_close_listen(void *listen_comm) {
  void *l = api_listen_take("closeListen", listen_comm);
  return l ? transport_close_listen(l) : ncclInternalError;
}
