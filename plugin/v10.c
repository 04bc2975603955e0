/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v10: profiler callback and per-request profiler handles
 * (network events, transport/prof.h), comm config in connect. */
#include <string.h>

#include "plugin/abi/net_v10.h"
#include "plugin/api.h"
#include "plugin/props_v9.h"
#include "transport/transport.h" /* OBJ_CTX */

static ncclResult_t v10_init(ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  diag_set_profiler(prof);
  return diag_init(logger, 10);
}

static ncclResult_t v10_get_properties(int dev, ncclNetProperties_v10_t *p) {
  struct diag_props d;
  ncclResult_t r = diag_get_properties(dev, &d);
  if (r != ncclSuccess) return r;
  memset(p, 0, sizeof(*p));
  DIAG_FILL_PROPS_V9(p, d, dev);
  return ncclSuccess;
}

static ncclResult_t v10_listen(int dev, void *handle, void **listen_comm) {
  return diag_listen(NULL, dev, handle, listen_comm);
}

static ncclResult_t v10_connect(int dev, ncclNetCommConfig_v10_t *config, void *handle,
                                void **send_comm, ncclNetDeviceHandle_v10_t **dev_comm) {
  (void)dev_comm;
  struct diag_ctx ctx = {OBJ_CTX, 0, config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF};
  return diag_connect(&ctx, dev, handle, send_comm);
}

static ncclResult_t v10_accept(void *listen_comm, void **recv_comm,
                               ncclNetDeviceHandle_v10_t **dev_comm) {
  (void)dev_comm;
  return diag_accept(listen_comm, recv_comm);
}

static ncclResult_t v10_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                              void *phandle, void **request) {
  return diag_isend_prof(send_comm, data, size, tag, mhandle, phandle, request);
}

static ncclResult_t v10_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                              void **mhandles, void **phandles, void **request) {
  return diag_irecv_prof(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
}

static ncclResult_t v10_make_vdevice(int *d, ncclNetVDeviceProps_t *props) {
  if (!d || !props) return ncclInvalidArgument;
  int cap = (int)(sizeof(props->devs) / sizeof(props->devs[0]));
  return diag_make_vdevice(d, props->ndevs, props->devs, cap);
}

__attribute__((visibility("default"))) const ncclNet_v10_t ncclNetPlugin_v10 = {
  .name = DIAG_NET_NAME,
  .init = v10_init,
  .devices = diag_devices,
  .getProperties = v10_get_properties,
  .listen = v10_listen,
  .connect = v10_connect,
  .accept = v10_accept,
  .regMr = diag_reg_mr,
  .regMrDmaBuf = diag_reg_mr_dmabuf,
  .deregMr = diag_dereg_mr,
  .isend = v10_isend,
  .irecv = v10_irecv,
  .iflush = diag_iflush,
  .test = diag_test,
  .closeSend = diag_close_send,
  .closeRecv = diag_close_recv,
  .closeListen = diag_close_listen,
  .getDeviceMr = NULL,
  .irecvConsumed = NULL,
  .makeVDevice = v10_make_vdevice,
};
