/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v11: init and finalize per communicator, with a context
 * that carries the communicator's traffic class. finalize takes NULL (NCCL
 * calls it on its init-failure path with whatever it holds). */
#include <string.h>

#include "plugin/abi/net_v11.h"
#include "plugin/api.h"
#include "plugin/props_v9.h"

static ncclResult_t v11_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_v11_t *config,
                             ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  diag_set_profiler(prof);
  diag_init(logger, 11);
  if (ctx)
    *ctx = diag_ctx_new(comm_id, config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF);
  return ncclSuccess;
}

static ncclResult_t v11_finalize(void *ctx) { return diag_ctx_free(ctx); }

static ncclResult_t v11_get_properties(int dev, ncclNetProperties_v11_t *p) {
  struct diag_props d;
  ncclResult_t r = diag_get_properties(dev, &d);
  if (r != ncclSuccess) return r;
  memset(p, 0, sizeof(*p));
  DIAG_FILL_PROPS_V9(p, d, dev);
  p->maxMultiRequestSize = 1;
  return ncclSuccess;
}

static ncclResult_t v11_listen(void *ctx, int dev, void *handle, void **listen_comm) {
  return diag_listen(ctx, dev, handle, listen_comm);
}

static ncclResult_t v11_connect(void *ctx, int dev, void *handle, void **send_comm,
                                ncclNetDeviceHandle_v11_t **dev_comm) {
  (void)dev_comm;
  return diag_connect(ctx, dev, handle, send_comm);
}

static ncclResult_t v11_accept(void *listen_comm, void **recv_comm,
                               ncclNetDeviceHandle_v11_t **dev_comm) {
  (void)dev_comm;
  return diag_accept(listen_comm, recv_comm);
}

static ncclResult_t v11_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                              void *phandle, void **request) {
  return diag_isend_prof(send_comm, data, size, tag, mhandle, phandle, request);
}

static ncclResult_t v11_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                              void **mhandles, void **phandles, void **request) {
  return diag_irecv_prof(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
}

static ncclResult_t v11_make_vdevice(int *d, ncclNetVDeviceProps_t *props) {
  if (!d || !props) return ncclInvalidArgument;
  int cap = (int)(sizeof(props->devs) / sizeof(props->devs[0]));
  return diag_make_vdevice(d, props->ndevs, props->devs, cap);
}

__attribute__((visibility("default"))) const ncclNet_v11_t ncclNetPlugin_v11 = {
  .name = DIAG_NET_NAME,
  .init = v11_init,
  .devices = diag_devices,
  .getProperties = v11_get_properties,
  .listen = v11_listen,
  .connect = v11_connect,
  .accept = v11_accept,
  .regMr = diag_reg_mr,
  .regMrDmaBuf = diag_reg_mr_dmabuf,
  .deregMr = diag_dereg_mr,
  .isend = v11_isend,
  .irecv = v11_irecv,
  .iflush = diag_iflush,
  .test = diag_test,
  .closeSend = diag_close_send,
  .closeRecv = diag_close_recv,
  .closeListen = diag_close_listen,
  .getDeviceMr = NULL,
  .irecvConsumed = NULL,
  .makeVDevice = v11_make_vdevice,
  .finalize = v11_finalize,
  .setNetAttr = NULL,
};
