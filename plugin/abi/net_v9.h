/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNet_v9_t: v8 plus makeVDevice, size_t send/recv sizes, and a larger
 * property struct (spec section 6.1). */
#ifndef DIAG_ABI_NET_V9_H
#define DIAG_ABI_NET_V9_H

#include "plugin/abi/nccl_common.h"

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
} ncclNetProperties_v9_t;

/* v10 keeps the v9 property layout unchanged. */
typedef ncclNetProperties_v9_t ncclNetProperties_v10_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t *props);
  ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
                          ncclNetDeviceHandle_v9_t **sendDevComm);
  ncclResult_t (*accept)(void *listenComm, void **recvComm, ncclNetDeviceHandle_v9_t **recvDevComm);
  ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
  ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
                              int fd, void **mhandle);
  ncclResult_t (*deregMr)(void *comm, void *mhandle);
  ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle,
                        void **request);
  ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,
                        void **mhandles, void **request);
  ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
                         void **request);
  ncclResult_t (*test)(void *request, int *done, int *sizes);
  ncclResult_t (*closeSend)(void *sendComm);
  ncclResult_t (*closeRecv)(void *recvComm);
  ncclResult_t (*closeListen)(void *listenComm);
  ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
  ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_t *props);
} ncclNet_v9_t;

_Static_assert(sizeof(ncclNetProperties_v9_t) == 104, "v9 props are 104 bytes");
_Static_assert(offsetof(ncclNetProperties_v9_t, forceFlush) == 32, "v9 props: forceFlush at 32");
_Static_assert(offsetof(ncclNetProperties_v9_t, speed) == 36, "v9 props: speed at 36");
_Static_assert(offsetof(ncclNetProperties_v9_t, latency) == 44, "v9 props: latency at 44");
_Static_assert(offsetof(ncclNetProperties_v9_t, maxRecvs) == 52, "v9 props: maxRecvs at 52");
_Static_assert(offsetof(ncclNetProperties_v9_t, netDeviceVersion) == 60, "v9 props: version at 60");
_Static_assert(offsetof(ncclNetProperties_v9_t, vProps) == 64, "v9 props: vProps at 64");
_Static_assert(offsetof(ncclNetProperties_v9_t, maxP2pBytes) == 88, "v9 props: maxP2pBytes at 88");
_Static_assert(offsetof(ncclNetProperties_v9_t, maxCollBytes) == 96,
               "v9 props: maxCollBytes at 96");

_Static_assert(sizeof(ncclNet_v9_t) == 160, "ncclNet_v9_t has 20 slots");
_Static_assert(offsetof(ncclNet_v9_t, isend) == 80, "v9: isend at 80");
_Static_assert(offsetof(ncclNet_v9_t, makeVDevice) == 152, "v9: makeVDevice at 152");

#endif
