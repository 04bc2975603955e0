/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v5, for NCCL 2.12: int sizes, no dma-buf slot (so no
 * dma-buf bit in ptrSupport either), no device offload. init runs once per
 * process and there is no finalize: the census is written at exit. */
#include <string.h>

#include "plugin/abi/net_v5.h"
#include "plugin/api.h"
#include "plugin/props_v6.h"

static ncclResult_t v5_init(ncclDebugLogger_t logger) { return diag_init(logger, 5); }

static ncclResult_t v5_get_properties(int dev, ncclNetProperties_v5_t *p) {
  struct diag_props d;
  ncclResult_t r = diag_get_properties(dev, &d);
  if (r != ncclSuccess) return r;
  memset(p, 0, sizeof(*p));
  DIAG_FILL_PROPS_V6(p, d);
  p->ptrSupport &= NCCL_PTR_HOST | NCCL_PTR_CUDA; /* v5 has no regMrDmaBuf */
  return ncclSuccess;
}

static ncclResult_t v5_listen(int dev, void *handle, void **listen_comm) {
  return diag_listen(NULL, dev, handle, listen_comm);
}

static ncclResult_t v5_connect(int dev, void *handle, void **send_comm) {
  return diag_connect(NULL, dev, handle, send_comm);
}

static ncclResult_t v5_reg_mr(void *comm, void *data, int size, int type, void **mhandle) {
  return diag_reg_mr_int(5, comm, data, size, type, mhandle);
}

static ncclResult_t v5_isend(void *send_comm, void *data, int size, int tag, void *mhandle,
                             void **request) {
  return diag_isend_int(5, send_comm, data, size, tag, mhandle, request);
}

static ncclResult_t v5_irecv(void *recv_comm, int n, void **data, int *sizes, int *tags,
                             void **mhandles, void **request) {
  return diag_irecv_int(5, recv_comm, n, data, sizes, tags, mhandles, request);
}

__attribute__((visibility("default"))) const ncclNet_v5_t ncclNetPlugin_v5 = {
  .name = DIAG_NET_NAME,
  .init = v5_init,
  .devices = diag_devices,
  .getProperties = v5_get_properties,
  .listen = v5_listen,
  .connect = v5_connect,
  .accept = diag_accept,
  .regMr = v5_reg_mr,
  .deregMr = diag_dereg_mr,
  .isend = v5_isend,
  .irecv = v5_irecv,
  .iflush = diag_iflush,
  .test = diag_test,
  .closeSend = diag_close_send,
  .closeRecv = diag_close_recv,
  .closeListen = diag_close_listen,
};
