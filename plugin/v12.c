/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v12, for NCCL 2.30: v11's calls (init and finalize per
 * communicator, with a context) over v12's layouts: railId and planeId as
 * NCCL 2.30's IB transport reports them (NCCL_IB_HCA's rail and plane
 * fields; a fused device's common rail and plane bits, plugin/vdev.c),
 * and virtual devices of up to 8 ports. */
#include <string.h>

#include "plugin/abi/net_v12.h"
#include "plugin/api.h"
#include "plugin/props_v9.h"

static ncclResult_t v12_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_v12_t *config,
                             ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  diag_set_profiler(prof);
  diag_init(logger, 12);
  if (ctx)
    *ctx = diag_ctx_new(comm_id, config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF);
  return ncclSuccess;
}

static ncclResult_t v12_finalize(void *ctx) { return diag_ctx_free(ctx); }

static ncclResult_t v12_get_properties(int dev, ncclNetProperties_v12_t *p) {
  struct diag_props d;
  ncclResult_t r = diag_get_properties(dev, &d);
  if (r != ncclSuccess) return r;
  memset(p, 0, sizeof(*p));
  DIAG_FILL_PROPS_V9(p, d, dev);
  p->maxMultiRequestSize = 1;
  p->railId = (int16_t)d.rail_id;
  p->planeId = (int16_t)d.plane_id;
  diag_rails_note();
  return ncclSuccess;
}

static ncclResult_t v12_listen(void *ctx, int dev, void *handle, void **listen_comm) {
  return diag_listen(ctx, dev, handle, listen_comm);
}

static ncclResult_t v12_connect(void *ctx, int dev, void *handle, void **send_comm,
                                ncclNetDeviceHandle_v12_t **dev_comm) {
  (void)dev_comm;
  return diag_connect(ctx, dev, handle, send_comm);
}

static ncclResult_t v12_accept(void *listen_comm, void **recv_comm,
                               ncclNetDeviceHandle_v12_t **dev_comm) {
  (void)dev_comm;
  return diag_accept(listen_comm, recv_comm);
}

static ncclResult_t v12_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                              void *phandle, void **request) {
  return diag_isend_prof(send_comm, data, size, tag, mhandle, phandle, request);
}

static ncclResult_t v12_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                              void **mhandles, void **phandles, void **request) {
  return diag_irecv_prof(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
}

static ncclResult_t v12_make_vdevice(int *d, ncclNetVDeviceProps_v12_t *props) {
  if (!d || !props) return ncclInvalidArgument;
  int cap = (int)(sizeof(props->devs) / sizeof(props->devs[0]));
  return diag_make_vdevice(d, props->ndevs, props->devs, cap);
}

__attribute__((visibility("default"))) const ncclNet_v12_t ncclNetPlugin_v12 = {
  .name = DIAG_NET_NAME,
  .init = v12_init,
  .devices = diag_devices,
  .getProperties = v12_get_properties,
  .listen = v12_listen,
  .connect = v12_connect,
  .accept = v12_accept,
  .regMr = diag_reg_mr,
  .regMrDmaBuf = diag_reg_mr_dmabuf,
  .deregMr = diag_dereg_mr,
  .isend = v12_isend,
  .irecv = v12_irecv,
  .iflush = diag_iflush,
  .test = diag_test,
  .closeSend = diag_close_send,
  .closeRecv = diag_close_recv,
  .closeListen = diag_close_listen,
  .getDeviceMr = NULL,
  .irecvConsumed = NULL,
  .makeVDevice = v12_make_vdevice,
  .finalize = v12_finalize,
  .setNetAttr = NULL,
};
