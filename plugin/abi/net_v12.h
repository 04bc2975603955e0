/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNet_v12_t: what NCCL 2.30 binds first (it looks for v12 down to v6).
 * The v11 slots and calling conventions (per-communicator init/finalize with
 * a context), with two layout changes: a virtual NIC fuses up to 8 devices
 * (was 4), and the properties end with the device's rail and plane ids
 * (int16_t; NCCL_NET_ID_UNDEF when unknown, which is what NCCL's own v11
 * adapter reports). */
#ifndef DIAG_ABI_NET_V12_H
#define DIAG_ABI_NET_V12_H

#include "plugin/abi/nccl_common.h"

#define NCCL_NET_MAX_DEVS_PER_NIC_V12 8
#define NCCL_NET_ID_UNDEF (-1)

typedef ncclNetCommConfig_t ncclNetCommConfig_v12_t;

typedef struct {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12];
} ncclNetVDeviceProps_v12_t;

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
  ncclNetVDeviceProps_v12_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;
  int16_t railId;
  int16_t planeId;
} ncclNetProperties_v12_t;

typedef struct {
  int32_t maxConcurrentPeers;
  int32_t minConcurrentPeers;
  int32_t maxFlowsPerPeer;
  int32_t minFlowsPerPeer;
} ncclNetCommAttr_v12_t;

typedef struct {
  ncclNetCommAttr_v12_t sendCommAttr;
  ncclNetCommAttr_v12_t recvCommAttr;
  uint32_t op;
  uint32_t algo;
  uint32_t proto;
} ncclNetAttr_v12_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **ctx, uint64_t commId, ncclNetCommConfig_v12_t *config,
                       ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t *props);
  ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,
                          ncclNetDeviceHandle_v12_t **sendDevComm);
  ncclResult_t (*accept)(void *listenComm, void **recvComm,
                         ncclNetDeviceHandle_v12_t **recvDevComm);
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
  ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_v12_t *props);
  ncclResult_t (*finalize)(void *ctx);
  ncclResult_t (*setNetAttr)(void *ctx, ncclNetAttr_v12_t *netAttr);
} ncclNet_v12_t;

_Static_assert(sizeof(ncclNetVDeviceProps_v12_t) == 36, "v12 vProps are 36 bytes");
_Static_assert(sizeof(ncclNetProperties_v12_t) == 128, "v12 props are 128 bytes");
_Static_assert(offsetof(ncclNetProperties_v12_t, netDeviceVersion) == 60,
               "v12 props: netDeviceVersion at 60");
_Static_assert(offsetof(ncclNetProperties_v12_t, vProps) == 64, "v12 props: vProps at 64");
_Static_assert(offsetof(ncclNetProperties_v12_t, maxP2pBytes) == 104,
               "v12 props: maxP2pBytes at 104 (after 36 bytes of vProps and padding)");
_Static_assert(offsetof(ncclNetProperties_v12_t, maxCollBytes) == 112,
               "v12 props: maxCollBytes at 112");
_Static_assert(offsetof(ncclNetProperties_v12_t, maxMultiRequestSize) == 120,
               "v12 props: maxMultiRequestSize at 120");
_Static_assert(offsetof(ncclNetProperties_v12_t, railId) == 124, "v12 props: railId at 124");
_Static_assert(offsetof(ncclNetProperties_v12_t, planeId) == 126, "v12 props: planeId at 126");
_Static_assert(sizeof(ncclNetAttr_v12_t) == 44, "ncclNetAttr_v12_t is 44 bytes");

_Static_assert(sizeof(ncclNet_v12_t) == 176, "ncclNet_v12_t has 22 slots");
_Static_assert(offsetof(ncclNet_v12_t, listen) == 32, "v12: listen at 32");
_Static_assert(offsetof(ncclNet_v12_t, isend) == 80, "v12: isend at 80");
_Static_assert(offsetof(ncclNet_v12_t, makeVDevice) == 152, "v12: makeVDevice at 152");
_Static_assert(offsetof(ncclNet_v12_t, finalize) == 160, "v12: finalize at 160");
_Static_assert(offsetof(ncclNet_v12_t, setNetAttr) == 168, "v12: setNetAttr at 168");

#endif
