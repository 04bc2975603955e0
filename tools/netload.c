/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/netload.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SO_NAME "libnccl-net-diag.so"

static void *try_open(const char *p, char *err, size_t errlen) {
  void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  if (!h && err && !err[0]) snprintf(err, errlen, "%s", dlerror());
  return h;
}

static void *find_plugin(const char *path, char *out, size_t cap, char *err, size_t errlen) {
  if (path) {
    snprintf(out, cap, "%s", path);
    return try_open(path, err, errlen);
  }
  const char *env = getenv("NCCL_DIAG_PLUGIN_PATH");
  if (env && *env) {
    snprintf(out, cap, "%s", env);
    return try_open(env, err, errlen);
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    /* build tree (build/tools, build/bench, build/tests/x), install tree (bin -> lib) */
    static const char *const rel[] = {
      "../plugin/", "../../plugin/", "../lib/", "../lib64/", "../lib/x86_64-linux-gnu/", "./"};
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
      snprintf(out, cap, "%s/%s%s", exe, rel[i], SO_NAME);
      if (access(out, R_OK) == 0) return try_open(out, err, errlen);
    }
  }
  snprintf(out, cap, "%s", SO_NAME);
  return try_open(SO_NAME, err, errlen);
}

int netload_open(struct netload *nl, const char *path, int version, char *err, size_t errlen) {
  memset(nl, 0, sizeof(*nl));
  if (err) err[0] = 0;
  nl->dl = find_plugin(path, nl->path, sizeof(nl->path), err, errlen);
  if (!nl->dl) return -1;
  for (int v = version ? version : 11; v >= 8; v--) {
    char sym[32];
    snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
    void *s = dlsym(nl->dl, sym);
    if (!s) {
      if (version) {
        snprintf(err, errlen, "%s exports no %s", nl->path, sym);
        dlclose(nl->dl);
        return -1;
      }
      continue;
    }
    nl->version = v;
    if (v == 8) nl->v8 = s;
    if (v == 9) nl->v9 = s;
    if (v == 10) nl->v10 = s;
    if (v == 11) nl->v11 = s;
    return 0;
  }
  snprintf(err, errlen, "%s exports no ncclNetPlugin_v8..v11", nl->path);
  dlclose(nl->dl);
  return -1;
}

void netload_close(struct netload *nl) {
  if (nl->dl) dlclose(nl->dl);
  nl->dl = NULL;
}

const char *netload_name(struct netload *nl) {
  switch (nl->version) {
  case 8: return nl->v8->name;
  case 9: return nl->v9->name;
  case 10: return nl->v10->name;
  default: return nl->v11->name;
  }
}

/* Dispatch a call that has the same shape in every version. */
#define NL_SAME(nl, call)                                                                          \
  ((nl)->version == 8    ? (nl)->v8->call                                                          \
   : (nl)->version == 9  ? (nl)->v9->call                                                          \
   : (nl)->version == 10 ? (nl)->v10->call                                                         \
                         : (nl)->v11->call)

ncclResult_t netload_init(struct netload *nl, ncclDebugLogger_t logger) {
  switch (nl->version) {
  case 8: return nl->v8->init(logger);
  case 9: return nl->v9->init(logger);
  case 10: return nl->v10->init(logger, NULL);
  default: {
    ncclNetCommConfig_v11_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
    return nl->v11->init(&nl->ctx, 0x1234abcdULL, &cfg, logger, NULL);
  }
  }
}

ncclResult_t netload_finalize(struct netload *nl) {
  if (nl->version != 11) return ncclSuccess;
  ncclResult_t r = nl->v11->finalize(nl->ctx);
  nl->ctx = NULL;
  return r;
}

ncclResult_t netload_devices(struct netload *nl, int *ndev) { return NL_SAME(nl, devices(ndev)); }

#define COPY_COMMON(p, s)                                                                          \
  do {                                                                                             \
    snprintf((p)->name, sizeof((p)->name), "%s", (s).name ? (s).name : "(null)");                  \
    (p)->has_pci = (s).pciPath != NULL;                                                            \
    snprintf((p)->pci_path, sizeof((p)->pci_path), "%s", (s).pciPath ? (s).pciPath : "");          \
    (p)->guid = (s).guid;                                                                          \
    (p)->ptr_support = (s).ptrSupport;                                                             \
    (p)->speed = (s).speed;                                                                        \
    (p)->port = (s).port;                                                                          \
    (p)->max_comms = (s).maxComms;                                                                 \
    (p)->max_recvs = (s).maxRecvs;                                                                 \
    (p)->device_type = (int)(s).netDeviceType;                                                     \
    (p)->device_version = (s).netDeviceVersion;                                                    \
  } while (0)

ncclResult_t netload_props(struct netload *nl, int dev, struct netload_props *p) {
  memset(p, 0, sizeof(*p));
  ncclResult_t r;
  if (nl->version == 8) {
    ncclNetProperties_v8_t s;
    memset(&s, 0xa5, sizeof(s)); /* NCCL does not zero it either */
    if ((r = nl->v8->getProperties(dev, &s))) return r;
    COPY_COMMON(p, s);
    p->vdevs = 1;
    p->max_p2p_bytes = 1ULL << 30; /* what NCCL's v8 adapter assumes */
    p->max_coll_bytes = 1ULL << 29;
    return ncclSuccess;
  }
  if (nl->version == 11) {
    ncclNetProperties_v11_t s;
    memset(&s, 0xa5, sizeof(s));
    if ((r = nl->v11->getProperties(dev, &s))) return r;
    COPY_COMMON(p, s);
    p->force_flush = s.forceFlush;
    p->vdevs = s.vProps.ndevs;
    p->max_p2p_bytes = s.maxP2pBytes;
    p->max_coll_bytes = s.maxCollBytes;
    return ncclSuccess;
  }
  ncclNetProperties_v9_t s;
  memset(&s, 0xa5, sizeof(s));
  r = nl->version == 9 ? nl->v9->getProperties(dev, &s) : nl->v10->getProperties(dev, &s);
  if (r) return r;
  COPY_COMMON(p, s);
  p->force_flush = s.forceFlush;
  p->vdevs = s.vProps.ndevs;
  p->max_p2p_bytes = s.maxP2pBytes;
  p->max_coll_bytes = s.maxCollBytes;
  return ncclSuccess;
}

ncclResult_t netload_listen(struct netload *nl, int dev, void *handle, void **lc) {
  if (nl->version == 11) return nl->v11->listen(nl->ctx, dev, handle, lc);
  return nl->version == 8   ? nl->v8->listen(dev, handle, lc)
         : nl->version == 9 ? nl->v9->listen(dev, handle, lc)
                            : nl->v10->listen(dev, handle, lc);
}

ncclResult_t netload_connect(struct netload *nl, int dev, void *handle, void **sc) {
  ncclNetDeviceHandle_v8_t *dh = NULL; /* NCCL's host path: a pointer to NULL */
  switch (nl->version) {
  case 8: return nl->v8->connect(dev, handle, sc, &dh);
  case 9: return nl->v9->connect(dev, handle, sc, &dh);
  case 10: {
    ncclNetCommConfig_v10_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
    return nl->v10->connect(dev, &cfg, handle, sc, &dh);
  }
  default: return nl->v11->connect(nl->ctx, dev, handle, sc, &dh);
  }
}

ncclResult_t netload_accept(struct netload *nl, void *lc, void **rc) {
  ncclNetDeviceHandle_v8_t *dh = NULL;
  return NL_SAME(nl, accept(lc, rc, &dh));
}

ncclResult_t netload_reg_mr(struct netload *nl, void *comm, void *data, size_t size, int type,
                            void **mh) {
  *mh = NULL; /* NCCL pre-zeroes the slot */
  return NL_SAME(nl, regMr(comm, data, size, type, mh));
}

ncclResult_t netload_dereg_mr(struct netload *nl, void *comm, void *mh) {
  return NL_SAME(nl, deregMr(comm, mh));
}

ncclResult_t netload_isend(struct netload *nl, void *sc, void *data, size_t size, int tag, void *mh,
                           void **req) {
  *req = (void *)0xdead; /* stale value on entry, as NCCL may leave */
  switch (nl->version) {
  case 8:
    if (size > (1ULL << 30)) return ncclInternalError; /* NCCL's v8 adapter rejects it */
    return nl->v8->isend(sc, data, (int)size, tag, mh, req);
  case 9: return nl->v9->isend(sc, data, size, tag, mh, req);
  case 10: return nl->v10->isend(sc, data, size, tag, mh, NULL, req);
  default: return nl->v11->isend(sc, data, size, tag, mh, NULL, req);
  }
}

ncclResult_t netload_irecv(struct netload *nl, void *rc, int n, void **data, size_t *sizes,
                           int *tags, void **mh, void **req) {
  switch (nl->version) {
  case 8: {
    int isz[NCCL_NET_MAX_REQUESTS];
    for (int i = 0; i < n && i < NCCL_NET_MAX_REQUESTS; i++) {
      if (sizes[i] > (1ULL << 30)) return ncclInternalError;
      isz[i] = (int)sizes[i];
    }
    *req = NULL; /* v8 adapter clears the sentinel */
    return nl->v8->irecv(rc, n, data, isz, tags, mh, req);
  }
  case 9:
    *req = (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION; /* v9+ may see the sentinel */
    return nl->v9->irecv(rc, n, data, sizes, tags, mh, req);
  case 10:
    *req = (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION;
    return nl->v10->irecv(rc, n, data, sizes, tags, mh, NULL, req);
  default:
    *req = (void *)NCCL_NET_OPTIONAL_RECV_COMPLETION;
    return nl->v11->irecv(rc, n, data, sizes, tags, mh, NULL, req);
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

static long long ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

ncclResult_t netload_connect_pair(struct netload *nl, int dev, void **sc, void **rc,
                                  int timeout_ms) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL;
  ncclResult_t r = netload_listen(nl, dev, handle, &lc);
  *sc = *rc = NULL;
  if (r) return r;
  long long end = ms_now() + timeout_ms;
  while (!*sc || !*rc) {
    if (!*sc && (r = netload_connect(nl, dev, handle, sc))) break;
    if (!*rc && (r = netload_accept(nl, lc, rc))) break;
    if (ms_now() > end) {
      r = ncclSystemError;
      break;
    }
  }
  netload_close_listen(nl, lc);
  return r;
}
