/* SPDX-License-Identifier: Apache-2.0 */
/* Finding and opening the plugin, init, properties, connection setup. The
 * data path is in netload_data.c. */
#include "tools/netload.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "tools/netload_call.h"
#include "tools/netload_resolve.h"

#define SO_NAME "libnccl-net-diag.so"
/* The install's library folder relative to its bin folder (meson's libdir,
 * multiarch on Debian: lib/aarch64-linux-gnu on Grace). */
#ifndef NETLOAD_LIBDIR
#define NETLOAD_LIBDIR "../lib/"
#endif

static void *try_open(const char *p, char *err, size_t errlen) {
  void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  if (!h && err && !err[0]) snprintf(err, errlen, "%s", dlerror());
  return h;
}

/* NCCL_NET_PLUGIN set (and not "none"): the file NCCL would load, or none. */
static void *nccl_choice(const char *value, char *out, size_t cap, char *err, size_t errlen) {
  static struct netload_choice c;
  if (netload_resolve(value, &c)) {
    char fix[400];
    netload_choice_fix(&c, fix, sizeof(fix));
    char host[256] = "this host";
    gethostname(host, sizeof(host) - 1);
    snprintf(err, errlen, "on %s NCCL_NET_PLUGIN=%s loads nothing (%s): %s", host, value, c.why,
             fix);
    return NULL;
  }
  snprintf(out, cap, "%s", c.file);
  return try_open(c.file, err, errlen);
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
  const char *nccl = getenv("NCCL_NET_PLUGIN");
  if (nccl && *nccl && strcasecmp(nccl, "none")) return nccl_choice(nccl, out, cap, err, errlen);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    /* build tree (build/tools, build/bench, build/tests/x), install tree (bin -> lib) */
    static const char *const rel[] = {"../plugin/",
                                      "../../plugin/",
                                      NETLOAD_LIBDIR,
                                      "../lib/",
                                      "../lib64/",
                                      "../lib/x86_64-linux-gnu/",
                                      "../lib/aarch64-linux-gnu/",
                                      "../lib/powerpc64le-linux-gnu/",
                                      "./"};
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
      snprintf(out, cap, "%s/%s%s", exe, rel[i], SO_NAME);
      char real[PATH_MAX];
      if (access(out, R_OK)) continue;
      if (realpath(out, real)) snprintf(out, cap, "%s", real);
      return try_open(out, err, errlen);
    }
  }
  snprintf(out, cap, "%s", SO_NAME);
  return try_open(SO_NAME, err, errlen);
}

static void set_table(struct netload *nl, int v, void *s) {
  nl->version = v;
  switch (v) {
  case 5: nl->v5 = s; break;
  case 6: nl->v6 = s; break;
  case 7: nl->v7 = s; break;
  case 8: nl->v8 = s; break;
  case 9: nl->v9 = s; break;
  case 10: nl->v10 = s; break;
  case 11: nl->v11 = s; break;
  default: nl->v12 = s; break;
  }
}

int netload_open(struct netload *nl, const char *path, int version, char *err, size_t errlen) {
  memset(nl, 0, sizeof(*nl));
  if (err) err[0] = 0;
  if (version && (version < NETLOAD_ABI_MIN || version > NETLOAD_ABI_MAX)) {
    snprintf(err, errlen, "ABI v%d is not one this loader drives (v%d to v%d)", version,
             NETLOAD_ABI_MIN, NETLOAD_ABI_MAX);
    return EINVAL;
  }
  nl->dl = find_plugin(path, nl->path, sizeof(nl->path), err, errlen);
  if (!nl->dl) return ENOENT;
  for (int v = version ? version : NETLOAD_ABI_MAX; v >= NETLOAD_ABI_MIN; v--) {
    char sym[32];
    snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
    void *s = dlsym(nl->dl, sym);
    if (s) {
      set_table(nl, v, s);
      return 0;
    }
    if (version) {
      snprintf(err, errlen, "%s exports no %s", nl->path, sym);
      break;
    }
  }
  if (!version)
    snprintf(err, errlen, "%s exports no ncclNetPlugin_v%d..v%d", nl->path, NETLOAD_ABI_MIN,
             NETLOAD_ABI_MAX);
  dlclose(nl->dl);
  nl->dl = NULL;
  return ENOENT;
}

void netload_close(struct netload *nl) {
  if (nl->dl) dlclose(nl->dl);
  nl->dl = NULL;
}

int netload_int_sizes(const struct netload *nl) { return nl->version <= 8; }

const char *netload_name(struct netload *nl) { return NL_SAME(nl, name); }

ncclResult_t netload_init(struct netload *nl, ncclDebugLogger_t logger) {
  nl->logger = logger;
  switch (nl->version) {
  case 5: return nl->v5->init(logger);
  case 6: return nl->v6->init(logger);
  case 7: return nl->v7->init(logger);
  case 8: return nl->v8->init(logger);
  case 9: return nl->v9->init(logger);
  case 10: return nl->v10->init(logger, nl->prof);
  case 11: {
    ncclNetCommConfig_v11_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
    return nl->v11->init(&nl->ctx, 0x1234abcdULL, &cfg, logger, nl->prof);
  }
  default: {
    ncclNetCommConfig_v12_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
    return nl->v12->init(&nl->ctx, 0x1234abcdULL, &cfg, logger, nl->prof);
  }
  }
}

/* Tables before v11 have no finalize: NCCL simply stops calling them. */
ncclResult_t netload_finalize(struct netload *nl) {
  ncclResult_t r = ncclSuccess;
  if (nl->version == 11) r = nl->v11->finalize(nl->ctx);
  if (nl->version == 12) r = nl->v12->finalize(nl->ctx);
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
  } while (0)

/* What the property struct of v9 and later adds. */
#define COPY_V9(p, s)                                                                              \
  do {                                                                                             \
    (p)->device_type = (int)(s).netDeviceType;                                                     \
    (p)->device_version = (s).netDeviceVersion;                                                    \
    (p)->force_flush = (s).forceFlush;                                                             \
    (p)->vdevs = (s).vProps.ndevs;                                                                 \
    for (int i_ = 0; i_ < (s).vProps.ndevs && i_ < 8 &&                                            \
                     i_ < (int)(sizeof((s).vProps.devs) / sizeof((s).vProps.devs[0]));             \
         i_++)                                                                                     \
      (p)->vdev_members[i_] = (s).vProps.devs[i_];                                                 \
    (p)->max_p2p_bytes = (s).maxP2pBytes;                                                          \
    (p)->max_coll_bytes = (s).maxCollBytes;                                                        \
  } while (0)

/* v5-v8 say nothing about sizes or virtual devices: report what NCCL's
 * adapters assume for them. */
static void assume_limits(struct netload_props *p) {
  p->vdevs = 1;
  p->max_p2p_bytes = MAX_NET_SIZE;
  p->max_coll_bytes = MAX_COLLNET_SIZE;
  p->limits_assumed = 1;
}

/* NCCL does not zero the struct before getProperties: neither do we. */
#define GET_PROPS(get, type, p, dev, s)                                                            \
  type s;                                                                                          \
  memset(&s, 0xa5, sizeof(s));                                                                     \
  ncclResult_t r_ = (get)(dev, &s);                                                                \
  if (r_) return r_;                                                                               \
  COPY_COMMON(p, s)

static ncclResult_t props_int_tables(struct netload *nl, int dev, struct netload_props *p) {
  assume_limits(p);
  if (nl->version == 5 || nl->version == 6) { /* one property layout */
    GET_PROPS(nl->version == 5 ? nl->v5->getProperties : nl->v6->getProperties,
              ncclNetProperties_v5_t, p, dev, s);
    return ncclSuccess;
  }
  if (nl->version == 7) {
    GET_PROPS(nl->v7->getProperties, ncclNetProperties_v7_t, p, dev, s);
    p->device_type = (int)s.netDeviceType;
    p->device_version = s.netDeviceVersion;
    return ncclSuccess;
  }
  GET_PROPS(nl->v8->getProperties, ncclNetProperties_v8_t, p, dev, s);
  p->device_type = (int)s.netDeviceType;
  p->device_version = s.netDeviceVersion;
  return ncclSuccess;
}

ncclResult_t netload_props(struct netload *nl, int dev, struct netload_props *p) {
  memset(p, 0, sizeof(*p));
  p->rail_id = p->plane_id = NCCL_NET_ID_UNDEF;
  if (nl->version <= 8) return props_int_tables(nl, dev, p);
  if (nl->version == 12) {
    GET_PROPS(nl->v12->getProperties, ncclNetProperties_v12_t, p, dev, s);
    COPY_V9(p, s);
    p->rail_id = s.railId;
    p->plane_id = s.planeId;
    return ncclSuccess;
  }
  if (nl->version == 11) {
    GET_PROPS(nl->v11->getProperties, ncclNetProperties_v11_t, p, dev, s);
    COPY_V9(p, s);
    return ncclSuccess;
  }
  GET_PROPS(nl->version == 9 ? nl->v9->getProperties : nl->v10->getProperties,
            ncclNetProperties_v9_t, p, dev, s); /* v10 keeps the v9 layout */
  COPY_V9(p, s);
  return ncclSuccess;
}
