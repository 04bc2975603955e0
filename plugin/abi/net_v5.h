/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNet_v5_t: the only table NCCL 2.12 binds (it looks for v5, then v4);
 * 2.13-2.25 still accept it. Sizes are int, there is no dma-buf slot and no
 * device offload. Written from the layout NCCL 2.12 defines, pinned
 * by static asserts. */
#ifndef DIAG_ABI_NET_V5_H
#define DIAG_ABI_NET_V5_H

#include "plugin/abi/nccl_common.h"

/* v5 and v6 share this property layout (nine fields, 48 bytes). */
typedef struct {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport; /* v5: HOST or HOST|CUDA (NCCL 2.12 has no dma-buf bit) */
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
} ncclNetProperties_v5_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v5_t *props);
  ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(int dev, void *handle, void **sendComm);
  ncclResult_t (*accept)(void *listenComm, void **recvComm);
  ncclResult_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
  ncclResult_t (*deregMr)(void *comm, void *mhandle);
  ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
                        void **request);
  ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags, void **mhandles,
                        void **request);
  ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                         void **request);
  ncclResult_t (*test)(void *request, int *done, int *sizes);
  ncclResult_t (*closeSend)(void *sendComm);
  ncclResult_t (*closeRecv)(void *recvComm);
  ncclResult_t (*closeListen)(void *listenComm);
} ncclNet_v5_t;

_Static_assert(sizeof(ncclNetProperties_v5_t) == 48, "v5 props are 48 bytes");
_Static_assert(offsetof(ncclNetProperties_v5_t, guid) == 16, "v5 props: guid at 16");
_Static_assert(offsetof(ncclNetProperties_v5_t, ptrSupport) == 24, "v5 props: ptrSupport at 24");
_Static_assert(offsetof(ncclNetProperties_v5_t, speed) == 28, "v5 props: speed at 28");
_Static_assert(offsetof(ncclNetProperties_v5_t, port) == 32, "v5 props: port at 32");
_Static_assert(offsetof(ncclNetProperties_v5_t, latency) == 36, "v5 props: latency at 36");
_Static_assert(offsetof(ncclNetProperties_v5_t, maxComms) == 40, "v5 props: maxComms at 40");
_Static_assert(offsetof(ncclNetProperties_v5_t, maxRecvs) == 44, "v5 props: maxRecvs at 44");

_Static_assert(sizeof(ncclNet_v5_t) == 128, "ncclNet_v5_t has 16 slots");
_Static_assert(offsetof(ncclNet_v5_t, connect) == 40, "v5: connect at 40");
_Static_assert(offsetof(ncclNet_v5_t, regMr) == 56, "v5: regMr at 56");
_Static_assert(offsetof(ncclNet_v5_t, deregMr) == 64, "v5: deregMr at 64 (no regMrDmaBuf)");
_Static_assert(offsetof(ncclNet_v5_t, isend) == 72, "v5: isend at 72");
_Static_assert(offsetof(ncclNet_v5_t, test) == 96, "v5: test at 96");
_Static_assert(offsetof(ncclNet_v5_t, closeListen) == 120, "v5: closeListen at 120");

#endif
