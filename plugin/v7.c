/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v7, for NCCL 2.19: v6 plus the device-offload arguments and
 * slots, which a host plugin leaves unused (NULL getDeviceMr and
 * irecvConsumed, netDeviceType HOST). Sizes, regMr's included, are int. */
#include <string.h>

#include "plugin/abi/net_v7.h"
#include "plugin/api.h"
#include "plugin/props_v6.h"

static ncclResult_t v7_init(ncclDebugLogger_t logger) { return diag_init(logger, 7); }

static ncclResult_t v7_get_properties(int dev, ncclNetProperties_v7_t *p) {
  struct diag_props d;
  ncclResult_t r = diag_get_properties(dev, &d);
  if (r != ncclSuccess) return r;
  memset(p, 0, sizeof(*p));
  DIAG_FILL_PROPS_V6(p, d);
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  return ncclSuccess;
}

static ncclResult_t v7_listen(int dev, void *handle, void **listen_comm) {
  return diag_listen(NULL, dev, handle, listen_comm);
}

static ncclResult_t v7_connect(int dev, void *handle, void **send_comm,
                               ncclNetDeviceHandle_v7_t **dev_comm) {
  (void)dev_comm; /* host plugin: never offloads */
  return diag_connect(NULL, dev, handle, send_comm);
}

static ncclResult_t v7_accept(void *listen_comm, void **recv_comm,
                              ncclNetDeviceHandle_v7_t **dev_comm) {
  (void)dev_comm;
  return diag_accept(listen_comm, recv_comm);
}

static ncclResult_t v7_reg_mr(void *comm, void *data, int size, int type, void **mhandle) {
  return diag_reg_mr_int(7, comm, data, size, type, mhandle);
}

static ncclResult_t v7_isend(void *send_comm, void *data, int size, int tag, void *mhandle,
                             void **request) {
  return diag_isend_int(7, send_comm, data, size, tag, mhandle, request);
}

static ncclResult_t v7_irecv(void *recv_comm, int n, void **data, int *sizes, int *tags,
                             void **mhandles, void **request) {
  return diag_irecv_int(7, recv_comm, n, data, sizes, tags, mhandles, request);
}

__attribute__((visibility("default"))) const ncclNet_v7_t ncclNetPlugin_v7 = {
  .name = DIAG_NET_NAME,
  .init = v7_init,
  .devices = diag_devices,
  .getProperties = v7_get_properties,
  .listen = v7_listen,
  .connect = v7_connect,
  .accept = v7_accept,
  .regMr = v7_reg_mr,
  .regMrDmaBuf = diag_reg_mr_dmabuf,
  .deregMr = diag_dereg_mr,
  .isend = v7_isend,
  .irecv = v7_irecv,
  .iflush = diag_iflush,
  .test = diag_test,
  .closeSend = diag_close_send,
  .closeRecv = diag_close_recv,
  .closeListen = diag_close_listen,
  .getDeviceMr = NULL,
  .irecvConsumed = NULL,
};
