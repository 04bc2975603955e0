/* SPDX-License-Identifier: Apache-2.0 */
/* ncclNetPlugin_v9: size_t sizes, virtual-device properties. */
#include <string.h>

#include "plugin/abi/net_v9.h"
#include "plugin/api.h"
#include "plugin/props_v9.h"

static ncclResult_t v9_init(ncclDebugLogger_t logger) { return diag_init(logger, 9); }

static ncclResult_t v9_get_properties(int dev, ncclNetProperties_v9_t *p) {
  struct diag_props d;
  ncclResult_t r = diag_get_properties(dev, &d);
  if (r != ncclSuccess) return r;
  memset(p, 0, sizeof(*p));
  DIAG_FILL_PROPS_V9(p, d, dev);
  return ncclSuccess;
}

static ncclResult_t v9_listen(int dev, void *handle, void **listen_comm) {
  return diag_listen(NULL, dev, handle, listen_comm);
}

static ncclResult_t v9_connect(int dev, void *handle, void **send_comm,
                               ncclNetDeviceHandle_v9_t **dev_comm) {
  (void)dev_comm;
  return diag_connect(NULL, dev, handle, send_comm);
}

static ncclResult_t v9_accept(void *listen_comm, void **recv_comm,
                              ncclNetDeviceHandle_v9_t **dev_comm) {
  (void)dev_comm;
  return diag_accept(listen_comm, recv_comm);
}

static ncclResult_t v9_make_vdevice(int *d, ncclNetVDeviceProps_t *props) {
  if (!d || !props) return ncclInvalidArgument;
  int cap = (int)(sizeof(props->devs) / sizeof(props->devs[0]));
  return diag_make_vdevice(d, props->ndevs, props->devs, cap);
}

__attribute__((visibility("default"))) const ncclNet_v9_t ncclNetPlugin_v9 = {
  .name = DIAG_NET_NAME,
  .init = v9_init,
  .devices = diag_devices,
  .getProperties = v9_get_properties,
  .listen = v9_listen,
  .connect = v9_connect,
  .accept = v9_accept,
  .regMr = diag_reg_mr,
  .regMrDmaBuf = diag_reg_mr_dmabuf,
  .deregMr = diag_dereg_mr,
  .isend = diag_isend,
  .irecv = diag_irecv,
  .iflush = diag_iflush,
  .test = diag_test,
  .closeSend = diag_close_send,
  .closeRecv = diag_close_recv,
  .closeListen = diag_close_listen,
  .getDeviceMr = NULL,
  .irecvConsumed = NULL,
  .makeVDevice = v9_make_vdevice,
};
