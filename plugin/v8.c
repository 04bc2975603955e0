/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v8, for NCCL 2.20-2.23: int message sizes (size_t
 * registrations), no profiler, no per-comm context. */
#include <string.h>

#include "plugin/abi/net_v8.h"
#include "plugin/api.h"
#include "plugin/props_v6.h"

static ncclResult_t v8_init(ncclDebugLogger_t logger) { return diag_init(logger, 8); }

static ncclResult_t v8_get_properties(int dev, ncclNetProperties_v8_t *p) {
  struct diag_props d;
  ncclResult_t r = diag_get_properties(dev, &d);
  if (r != ncclSuccess) return r;
  memset(p, 0, sizeof(*p));
  DIAG_FILL_PROPS_V6(p, d);
  p->regIsGlobal = d.reg_is_global;
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  return ncclSuccess;
}

static ncclResult_t v8_listen(int dev, void *handle, void **listen_comm) {
  return diag_listen(NULL, dev, handle, listen_comm);
}

static ncclResult_t v8_connect(int dev, void *handle, void **send_comm,
                               ncclNetDeviceHandle_v8_t **dev_comm) {
  (void)dev_comm; /* host plugin: never offloads */
  return diag_connect(NULL, dev, handle, send_comm);
}

static ncclResult_t v8_accept(void *listen_comm, void **recv_comm,
                              ncclNetDeviceHandle_v8_t **dev_comm) {
  (void)dev_comm;
  return diag_accept(listen_comm, recv_comm);
}

static ncclResult_t v8_isend(void *send_comm, void *data, int size, int tag, void *mhandle,
                             void **request) {
  return diag_isend_int(8, send_comm, data, size, tag, mhandle, request);
}

static ncclResult_t v8_irecv(void *recv_comm, int n, void **data, int *sizes, int *tags,
                             void **mhandles, void **request) {
  return diag_irecv_int(8, recv_comm, n, data, sizes, tags, mhandles, request);
}

__attribute__((visibility("default"))) const ncclNet_v8_t ncclNetPlugin_v8 = {
  .name = DIAG_NET_NAME,
  .init = v8_init,
  .devices = diag_devices,
  .getProperties = v8_get_properties,
  .listen = v8_listen,
  .connect = v8_connect,
  .accept = v8_accept,
  .regMr = diag_reg_mr,
  .regMrDmaBuf = diag_reg_mr_dmabuf,
  .deregMr = diag_dereg_mr,
  .isend = v8_isend,
  .irecv = v8_irecv,
  .iflush = diag_iflush,
  .test = diag_test,
  .closeSend = diag_close_send,
  .closeRecv = diag_close_recv,
  .closeListen = diag_close_listen,
  .getDeviceMr = NULL,
  .irecvConsumed = NULL,
};
