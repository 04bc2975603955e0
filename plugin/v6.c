/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v6, for NCCL 2.13-2.18: v5 plus regMrDmaBuf. Sizes are int,
 * connect/accept have no device handle, and the table has no getDeviceMr or
 * irecvConsumed slot. init runs once per process (NCCL 2.24+ adapters
 * ref-count it) and there is no finalize: the census is written at exit. */
#include <string.h>

#include "plugin/abi/net_v6.h"
#include "plugin/api.h"
#include "plugin/props_v6.h"

static ncclResult_t v6_init(ncclDebugLogger_t logger) { return diag_init(logger, 6); }

static ncclResult_t v6_get_properties(int dev, ncclNetProperties_v6_t *p) {
  struct diag_props d;
  ncclResult_t r = diag_get_properties(dev, &d);
  if (r != ncclSuccess) return r;
  memset(p, 0, sizeof(*p));
  DIAG_FILL_PROPS_V6(p, d);
  return ncclSuccess;
}

static ncclResult_t v6_listen(int dev, void *handle, void **listen_comm) {
  return diag_listen(NULL, dev, handle, listen_comm);
}

static ncclResult_t v6_connect(int dev, void *handle, void **send_comm) {
  return diag_connect(NULL, dev, handle, send_comm);
}

static ncclResult_t v6_reg_mr(void *comm, void *data, int size, int type, void **mhandle) {
  return diag_reg_mr_int(6, comm, data, size, type, mhandle);
}

static ncclResult_t v6_isend(void *send_comm, void *data, int size, int tag, void *mhandle,
                             void **request) {
  return diag_isend_int(6, send_comm, data, size, tag, mhandle, request);
}

static ncclResult_t v6_irecv(void *recv_comm, int n, void **data, int *sizes, int *tags,
                             void **mhandles, void **request) {
  return diag_irecv_int(6, recv_comm, n, data, sizes, tags, mhandles, request);
}

__attribute__((visibility("default"))) const ncclNet_v6_t ncclNetPlugin_v6 = {
  .name = DIAG_NET_NAME,
  .init = v6_init,
  .devices = diag_devices,
  .getProperties = v6_get_properties,
  .listen = v6_listen,
  .connect = v6_connect,
  .accept = diag_accept,
  .regMr = v6_reg_mr,
  .regMrDmaBuf = diag_reg_mr_dmabuf,
  .deregMr = diag_dereg_mr,
  .isend = v6_isend,
  .irecv = v6_irecv,
  .iflush = diag_iflush,
  .test = diag_test,
  .closeSend = diag_close_send,
  .closeRecv = diag_close_recv,
  .closeListen = diag_close_listen,
};
