/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNet_v11_t: the newest ABI NCCL 2.28/2.29 bind, without an adapter.
 * init/finalize are per communicator and carry a context (spec section 6.3). */
#ifndef DIAG_ABI_NET_V11_H
#define DIAG_ABI_NET_V11_H

#include "plugin/abi/nccl_common.h"

typedef ncclNetCommConfig_t ncclNetCommConfig_v11_t;

typedef struct {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  ncclNetVDeviceProps_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
} ncclNetProperties_v11_t;

typedef struct {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
} ncclNetCommAttr_v11_t;

typedef struct {
  ncclNetCommAttr_v11_t sendCommAttr;
  ncclNetCommAttr_v11_t recvCommAttr;
  uint32_t op;
  uint32_t algo;
  uint32_t proto;
} ncclNetAttr_v11_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, ncclNetCommConfig_v11_t *config,
                       ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t *props);
  ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,
                          ncclNetDeviceHandle_v11_t **sendDevComm);
  ncclResult_t (*accept)(void *listenComm, void **recvComm,
                         ncclNetDeviceHandle_v11_t **recvDevComm);
  ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
  ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
                              int fd, void **mhandle);
  ncclResult_t (*deregMr)(void *comm, void *mhandle);
  ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle,
                        void *phandle, void **request);
  ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                        void **mhandles, void **phandles, void **request);
  ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                         void **request);
  ncclResult_t (*test)(void *request, int *done, int *sizes);
  ncclResult_t (*closeSend)(void *sendComm);
  ncclResult_t (*closeRecv)(void *recvComm);
  ncclResult_t (*closeListen)(void *listenComm);
  ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
  ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_t *props);
  ncclResult_t (*finalize)(void *ctx);
  ncclResult_t (*setNetAttr)(void *ctx, ncclNetAttr_v11_t *netAttr);
} ncclNet_v11_t;

_Static_assert(sizeof(ncclNetProperties_v11_t) == 112, "v11 props are 112 bytes");
_Static_assert(offsetof(ncclNetProperties_v11_t, vProps) == 64, "v11 props: vProps at 64");
_Static_assert(offsetof(ncclNetProperties_v11_t, maxP2pBytes) == 88,
               "v11 props: maxP2pBytes at 88");
_Static_assert(offsetof(ncclNetProperties_v11_t, maxMultiRequestSize) == 104,
               "v11 props: maxMultiRequestSize at 104");
_Static_assert(sizeof(ncclNetAttr_v11_t) == 44, "ncclNetAttr_v11_t is 44 bytes");

_Static_assert(sizeof(ncclNet_v11_t) == 176, "ncclNet_v11_t has 22 slots");
_Static_assert(offsetof(ncclNet_v11_t, listen) == 32, "v11: listen at 32");
_Static_assert(offsetof(ncclNet_v11_t, makeVDevice) == 152, "v11: makeVDevice at 152");
_Static_assert(offsetof(ncclNet_v11_t, finalize) == 160, "v11: finalize at 160");
_Static_assert(offsetof(ncclNet_v11_t, setNetAttr) == 168, "v11: setNetAttr at 168");

#endif
