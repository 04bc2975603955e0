/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNet_v7_t: what NCCL 2.19 binds (it looks for v7, v6, v5); 2.20-2.30
 * still accept it. v6 plus device offload: a device handle argument in
 * connect/accept, netDeviceType/netDeviceVersion in the properties, and the
 * getDeviceMr and irecvConsumed slots. Sizes are still int (regMr too). */
#ifndef DIAG_ABI_NET_V7_H
#define DIAG_ABI_NET_V7_H

#include "plugin/abi/nccl_common.h"

typedef struct {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
} ncclNetProperties_v7_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v7_t *props);
  ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
                          ncclNetDeviceHandle_v7_t **sendDevComm);
  ncclResult_t (*accept)(void *listenComm, void **recvComm, ncclNetDeviceHandle_v7_t **recvDevComm);
  ncclResult_t (*regMr)(void *comm, void *data, int size, int type, void **mhandle);
  ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
                              int fd, void **mhandle);
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
  ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
} ncclNet_v7_t;

_Static_assert(sizeof(ncclNetProperties_v7_t) == 56, "v7 props are 56 bytes");
_Static_assert(offsetof(ncclNetProperties_v7_t, speed) == 28, "v7 props: speed at 28");
_Static_assert(offsetof(ncclNetProperties_v7_t, maxRecvs) == 44, "v7 props: maxRecvs at 44");
_Static_assert(offsetof(ncclNetProperties_v7_t, netDeviceType) == 48, "v7 props: type at 48");
_Static_assert(offsetof(ncclNetProperties_v7_t, netDeviceVersion) == 52, "v7 props: version at 52");

_Static_assert(sizeof(ncclNet_v7_t) == 152, "ncclNet_v7_t has 19 slots");
_Static_assert(offsetof(ncclNet_v7_t, regMr) == 56, "v7: regMr at 56");
_Static_assert(offsetof(ncclNet_v7_t, isend) == 80, "v7: isend at 80");
_Static_assert(offsetof(ncclNet_v7_t, closeListen) == 128, "v7: closeListen at 128");
_Static_assert(offsetof(ncclNet_v7_t, getDeviceMr) == 136, "v7: getDeviceMr at 136");
_Static_assert(offsetof(ncclNet_v7_t, irecvConsumed) == 144, "v7: irecvConsumed at 144");

#endif
