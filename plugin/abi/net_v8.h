/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNet_v8_t (NCCL 2.19-2.23 bind it first; later versions still accept it).
 * Layout from NCCL's ext-net v8 header, pinned by static asserts. */
#ifndef DIAG_ABI_NET_V8_H
#define DIAG_ABI_NET_V8_H

#include "plugin/abi/nccl_common.h"

typedef struct {
  char *name;
  char *pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
} ncclNetProperties_v8_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t *props);
  ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
                          ncclNetDeviceHandle_v8_t **sendDevComm);
  ncclResult_t (*accept)(void *listenComm, void **recvComm, ncclNetDeviceHandle_v8_t **recvDevComm);
  ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
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
} ncclNet_v8_t;

_Static_assert(sizeof(ncclNetProperties_v8_t) == 64, "v8 props are 64 bytes");
_Static_assert(offsetof(ncclNetProperties_v8_t, guid) == 16, "v8 props: guid at 16");
_Static_assert(offsetof(ncclNetProperties_v8_t, ptrSupport) == 24, "v8 props: ptrSupport at 24");
_Static_assert(offsetof(ncclNetProperties_v8_t, regIsGlobal) == 28, "v8 props: regIsGlobal at 28");
_Static_assert(offsetof(ncclNetProperties_v8_t, speed) == 32, "v8 props: speed at 32");
_Static_assert(offsetof(ncclNetProperties_v8_t, port) == 36, "v8 props: port at 36");
_Static_assert(offsetof(ncclNetProperties_v8_t, latency) == 40, "v8 props: latency at 40");
_Static_assert(offsetof(ncclNetProperties_v8_t, maxComms) == 44, "v8 props: maxComms at 44");
_Static_assert(offsetof(ncclNetProperties_v8_t, maxRecvs) == 48, "v8 props: maxRecvs at 48");
_Static_assert(offsetof(ncclNetProperties_v8_t, netDeviceType) == 52, "v8 props: type at 52");
_Static_assert(offsetof(ncclNetProperties_v8_t, netDeviceVersion) == 56, "v8 props: version at 56");

_Static_assert(sizeof(ncclNet_v8_t) == 152, "ncclNet_v8_t has 19 slots");
_Static_assert(offsetof(ncclNet_v8_t, init) == 8, "v8: init at 8");
_Static_assert(offsetof(ncclNet_v8_t, listen) == 32, "v8: listen at 32");
_Static_assert(offsetof(ncclNet_v8_t, regMr) == 56, "v8: regMr at 56");
_Static_assert(offsetof(ncclNet_v8_t, isend) == 80, "v8: isend at 80");
_Static_assert(offsetof(ncclNet_v8_t, test) == 104, "v8: test at 104");
_Static_assert(offsetof(ncclNet_v8_t, closeListen) == 128, "v8: closeListen at 128");
_Static_assert(offsetof(ncclNet_v8_t, irecvConsumed) == 144, "v8: irecvConsumed at 144");

#endif
