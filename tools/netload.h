/* SPDX-License-Identifier: Apache-2.0 */
/* Loads libnccl-net-diag.so the way NCCL does (dlopen RTLD_NOW|RTLD_LOCAL,
 * dlsym ncclNetPlugin_vN) and drives the chosen ABI version through one
 * set of calls, converting sizes and arguments per version as NCCL's own
 * adapters do. The tools, the bench and the tests use it, so they exercise
 * exactly what NCCL sees. */
#ifndef DIAG_TOOLS_NETLOAD_H
#define DIAG_TOOLS_NETLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/abi/net_v10.h"
#include "plugin/abi/net_v11.h"
#include "plugin/abi/net_v12.h"
#include "plugin/abi/net_v5.h"
#include "plugin/abi/net_v6.h"
#include "plugin/abi/net_v7.h"
#include "plugin/abi/net_v8.h"
#include "plugin/abi/net_v9.h"

/* The table versions this loader drives, oldest and newest. */
#define NETLOAD_ABI_MIN 5
#define NETLOAD_ABI_MAX 12

struct netload {
  void *dl;
  int version; /* NETLOAD_ABI_MIN..NETLOAD_ABI_MAX: the one table in use */
  const ncclNet_v5_t *v5;
  const ncclNet_v6_t *v6;
  const ncclNet_v7_t *v7;
  const ncclNet_v8_t *v8;
  const ncclNet_v9_t *v9;
  const ncclNet_v10_t *v10;
  const ncclNet_v11_t *v11;
  const ncclNet_v12_t *v12;
  void *ctx;                   /* v11/v12 per-comm context */
  ncclDebugLogger_t logger;    /* init's logger, also for this loader's own refusals */
  ncclProfilerCallback_t prof; /* v10+: the profiler callback init passes (NULL: none) */
  void **phandles; /* v10+: the profiler handles isend (the first) and irecv pass, or NULL */
  char path[4096];
};

struct netload_props {
  char name[64];
  char pci_path[4096];
  int has_pci;
  uint64_t guid;
  int ptr_support, speed, port, max_comms, max_recvs, device_type, device_version;
  int force_flush, vdevs;
  int vdev_members[8]; /* vProps.devs, the first vdevs of them (v9+) */
  size_t max_p2p_bytes, max_coll_bytes;
  int limits_assumed;    /* the table has no maxP2pBytes/maxCollBytes (v5-v8): NCCL's values */
  int rail_id, plane_id; /* v12; NCCL_NET_ID_UNDEF (-1) = unknown, and for older tables */
};

/* Finds the plugin: explicit path, else $NCCL_DIAG_PLUGIN_PATH, else beside
 * the running executable (build tree or install tree), else the loader's
 * search path. version 0 = the newest exported, as the newest NCCL picks. */
int netload_open(struct netload *nl, const char *path, int version, char *err, size_t errlen);
void netload_close(struct netload *nl);
/* 1 when the table has int message sizes (v5-v8), which carry at most INT_MAX. */
int netload_int_sizes(const struct netload *nl);

ncclResult_t netload_init(struct netload *nl, ncclDebugLogger_t logger);
ncclResult_t netload_finalize(struct netload *nl);
ncclResult_t netload_devices(struct netload *nl, int *ndev);
ncclResult_t netload_props(struct netload *nl, int dev, struct netload_props *p);
ncclResult_t netload_listen(struct netload *nl, int dev, void *handle, void **lc);
ncclResult_t netload_connect(struct netload *nl, int dev, void *handle, void **sc);
ncclResult_t netload_accept(struct netload *nl, void *lc, void **rc);
/* Sizes a table cannot carry (above INT_MAX where it has int sizes) are
 * refused with a WARN through the init logger naming the size and the
 * table's limit: never truncated, as NCCL's adapters never truncate. */
ncclResult_t netload_reg_mr(struct netload *nl, void *comm, void *data, size_t size, int type,
                            void **mh);
ncclResult_t netload_dereg_mr(struct netload *nl, void *comm, void *mh);
ncclResult_t netload_isend(struct netload *nl, void *sc, void *data, size_t size, int tag, void *mh,
                           void **req);
ncclResult_t netload_irecv(struct netload *nl, void *rc, int n, void **data, size_t *sizes,
                           int *tags, void **mh, void **req);
ncclResult_t netload_test(struct netload *nl, void *req, int *done, int *sizes);
ncclResult_t netload_iflush(struct netload *nl, void *rc, int n, void **data, int *sizes, void **mh,
                            void **req);
ncclResult_t netload_close_send(struct netload *nl, void *sc);
ncclResult_t netload_close_recv(struct netload *nl, void *rc);
ncclResult_t netload_close_listen(struct netload *nl, void *lc);
const char *netload_name(struct netload *nl);
/* makeVDevice (v9+; NULL in the table, or an older table: ncclInternalError
 * with no call, as NCCL would not make one). */
ncclResult_t netload_make_vdevice(struct netload *nl, int ndevs, const int *devs, int *dev);

/* Convenience for tools and tests: drive connect and accept to completion
 * from one thread (both ends in this process), within timeout_ms. */
ncclResult_t netload_connect_pair(struct netload *nl, int dev, void **sc, void **rc,
                                  int timeout_ms);

#endif
