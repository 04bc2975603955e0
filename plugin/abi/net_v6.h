/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNet_v6_t: what NCCL 2.13-2.18 bind (they look for v6, v5, v4), and
 * what 2.19-2.30 still accept through their adapters. v5 plus regMrDmaBuf;
 * sizes are still int, connect/accept have no device-offload argument, and
 * there is no getDeviceMr or irecvConsumed. NCCL then needed 8 requests in
 * flight per comm (NCCL_NET_MAX_REQUESTS_V6). */
#ifndef DIAG_ABI_NET_V6_H
#define DIAG_ABI_NET_V6_H

#include "plugin/abi/net_v5.h"

typedef ncclNetProperties_v5_t ncclNetProperties_v6_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int *ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v6_t *props);
  ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
  ncclResult_t (*connect)(int dev, void *handle, void **sendComm);
  ncclResult_t (*accept)(void *listenComm, void **recvComm);
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
} ncclNet_v6_t;

_Static_assert(sizeof(ncclNet_v6_t) == 136, "ncclNet_v6_t has 17 slots");
_Static_assert(offsetof(ncclNet_v6_t, regMr) == 56, "v6: regMr at 56");
_Static_assert(offsetof(ncclNet_v6_t, regMrDmaBuf) == 64, "v6: regMrDmaBuf at 64");
_Static_assert(offsetof(ncclNet_v6_t, deregMr) == 72, "v6: deregMr at 72");
_Static_assert(offsetof(ncclNet_v6_t, isend) == 80, "v6: isend at 80");
_Static_assert(offsetof(ncclNet_v6_t, test) == 104, "v6: test at 104");
_Static_assert(offsetof(ncclNet_v6_t, closeListen) == 128, "v6: closeListen at 128");

#endif
