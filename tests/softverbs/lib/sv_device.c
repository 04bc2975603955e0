/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: the device list, contexts and device attributes. */
#include "sv.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

SV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices) {
  if (num_devices) *num_devices = 0;
  int err = sv_fault_nodev();
  struct sv_device **devs = NULL;
  int n = 0;
  if (!err) err = sv_fixture_scan(sv_sysfs_root(), &devs, &n);
  if (err) {
    sv_log("ibv_get_device_list fails with %s", strerror(err));
    errno = err;
    return NULL;
  }
  struct ibv_device **list = calloc((size_t)n + 1, sizeof *list);
  for (int i = 0; i < n; i++) {
    if (list) list[i] = &devs[i]->ibdev;
    else sv_device_put(devs[i]);
  }
  free(devs);
  if (!list) {
    errno = ENOMEM;
    return NULL;
  }
  if (num_devices) *num_devices = n;
  return list;
}

SV_EXPORT void ibv_free_device_list(struct ibv_device **list) {
  if (!list) return;
  for (int i = 0; list[i]; i++) sv_device_put((struct sv_device *)list[i]);
  free(list);
}

SV_EXPORT const char *ibv_get_device_name(struct ibv_device *device) { return device->name; }

SV_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device) {
  return htobe64(((struct sv_device *)device)->node_guid);
}

SV_EXPORT int ibv_get_device_index(struct ibv_device *device) {
  return ((struct sv_device *)device)->index;
}

static void ctx_free(struct sv_ctx *ctx) {
  if (ctx->ibctx.async_fd >= 0) close(ctx->ibctx.async_fd);
  if (ctx->async_wfd >= 0) close(ctx->async_wfd);
  pthread_mutex_destroy(&ctx->qp_lock);
  pthread_mutex_destroy(&ctx->grave_lock);
  sv_async_free_all(ctx);
  pthread_mutex_destroy(&ctx->ev_lock);
  pthread_mutex_destroy(&ctx->ibctx.mutex);
  pthread_rwlock_destroy(&ctx->mr_lock);
  free(ctx->mrs);
  sv_device_put(ctx->dev);
  free(ctx);
}

SV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device) {
  struct sv_device *d = (struct sv_device *)device;
  int fault = sv_fault_open(d->ibdev.name);
  if (fault) {
    errno = fault;
    return NULL;
  }
  struct sv_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  atomic_fetch_add(&d->refs, 1);
  ctx->dev = d;
  ctx->ibctx.device = device;
  ctx->ibctx.ops.poll_cq = sv_poll_cq;
  ctx->ibctx.ops.req_notify_cq = sv_req_notify_cq;
  ctx->ibctx.ops.post_send = sv_post_send;
  ctx->ibctx.ops.post_recv = sv_post_recv;
  ctx->ibctx.cmd_fd = -1;
  ctx->ibctx.num_comp_vectors = 1;
  ctx->wake_kind = SV_EV_WAKE;
  pthread_mutex_init(&ctx->ibctx.mutex, NULL);
  pthread_mutex_init(&ctx->qp_lock, NULL);
  pthread_mutex_init(&ctx->grave_lock, NULL);
  pthread_mutex_init(&ctx->ev_lock, NULL);
  pthread_rwlock_init(&ctx->mr_lock, NULL);
  int fds[2];
  /* One byte per queued async event (sv_event.c); a socket, so that events
   * can be taken back without blocking whatever mode the application sets. */
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds)) {
    ctx->ibctx.async_fd = ctx->async_wfd = -1;
    ctx_free(ctx);
    return NULL;
  }
  ctx->ibctx.async_fd = fds[0];
  ctx->async_wfd = fds[1];
  for (int i = 0; i < d->nports; i++) ctx->net[d->ports[i].num] = sv_port_wants_net(&d->ports[i]);
  int err = sv_progress_start(ctx);
  if (err) {
    ctx_free(ctx);
    errno = err;
    return NULL;
  }
  sv_hostcaps_open(ctx);
  sv_log("device %s opened (port 1 %s)", device->name, ctx->net[1] ? "net" : "loopback");
  return &ctx->ibctx;
}

SV_EXPORT int ibv_close_device(struct ibv_context *context) {
  struct sv_ctx *ctx = sv_ctx_of(context);
  sv_hostcaps_close(ctx);
  sv_progress_stop(ctx);
  ctx_free(ctx);
  return 0;
}

SV_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *a) {
  struct sv_device *d = sv_ctx_of(context)->dev;
  memset(a, 0, sizeof *a);
  snprintf(a->fw_ver, sizeof a->fw_ver, "%s", d->fw_ver);
  a->node_guid = htobe64(d->node_guid);
  a->sys_image_guid = htobe64(d->sys_image_guid);
  a->max_mr_size = UINT64_MAX;
  a->page_size_cap = ~4095ull;
  a->vendor_id = d->vendor_id;
  a->vendor_part_id = d->vendor_part_id;
  a->max_qp = 65536 * SV_QP_SLOTS / 2;
  a->max_qp_wr = SV_MAX_WR;
  a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT;
  a->max_sge = a->max_sge_rd = SV_MAX_SGE;
  a->max_cq = 1 << 24;
  a->max_cqe = SV_MAX_CQE;
  a->max_mr = 1 << 24;
  a->max_pd = 1 << 24;
  a->max_qp_rd_atom = a->max_qp_init_rd_atom = SV_MAX_RD_ATOM;
  a->max_res_rd_atom = SV_MAX_RD_ATOM * 65536;
  a->atomic_cap = IBV_ATOMIC_NONE;
  a->max_pkeys = d->nports ? (uint16_t)d->ports[0].npkeys : 0;
  a->local_ca_ack_delay = 16;
  a->phys_port_cnt = (uint8_t)d->nports;
  return 0;
}
