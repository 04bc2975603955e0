/* SPDX-License-Identifier: Apache-2.0 */
/* Memory registration on a TCP connection: host memory only; a
 * registration is its range, so isend/irecv can check a buffer lies in it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "transport/tcp/tcp.h"

struct tcp_mr {
  uint32_t obj;
  uint8_t *base;
  size_t size;
  struct transport_comm *comm;
};

ncclResult_t tcp_reg_mr(struct transport_comm *xc, void *data, size_t size, int type,
                        void **mhandle) {
  if (type != NCCL_PTR_HOST) {
    WARN("regMr on the TCP connection with %s: memory type %d is not host memory; this device "
         "only advertises NCCL_PTR_HOST",
         xc->peer.desc, type);
    return ncclInternalError;
  }
  struct tcp_mr *mr = calloc(1, sizeof(*mr));
  if (!mr) {
    WARN("regMr on the TCP connection with %s: out of memory", xc->peer.desc);
    return ncclSystemError;
  }
  mr->obj = OBJ_MR;
  mr->base = data;
  mr->size = size;
  mr->comm = xc;
  *mhandle = mr;
  return ncclSuccess;
}

ncclResult_t tcp_dereg_mr(struct transport_comm *xc, void *mhandle) {
  struct tcp_mr *mr = mhandle;
  if (!mr) return ncclSuccess;
  if (mr->obj != OBJ_MR) {
    WARN("deregMr on the connection with %s: %p is not a registration of this plugin (already "
         "deregistered?)",
         xc->peer.desc, mhandle);
    return ncclInternalError;
  }
  mr->obj = OBJ_DEAD;
  free(mr);
  return ncclSuccess;
}

bool tcp_mr_covers(const void *mhandle, const void *data, size_t size, char *why, size_t cap) {
  const struct tcp_mr *mr = mhandle;
  if (!mr) return true; /* NCCL may leave it NULL (bootstrap); nothing to check */
  if (mr->obj != OBJ_MR) {
    snprintf(why, cap, "memory handle %p is not a live registration", mhandle);
    return false;
  }
  const uint8_t *p = data;
  if (p < mr->base || size > mr->size || (size_t)(p - mr->base) > mr->size - size) {
    snprintf(why, cap, "buffer %p + %zu bytes lies outside its registration %p + %zu bytes", data,
             size, (void *)mr->base, mr->size);
    return false;
  }
  return true;
}
