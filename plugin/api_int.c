/* SPDX-License-Identifier: Apache-2.0 */
/* The int-sized entry points of the tables before v9. An int carries at most
 * INT_MAX bytes; NCCL's own adapters refuse a larger size_t before they
 * convert, so a negative size here means a caller truncated one. It is
 * refused with both numbers named, never reinterpreted. */
#include <limits.h>

#include "common/log.h"
#include "plugin/api.h"

static int size_ok(int abi, const char *fn, const char *what, int size) {
  if (size >= 0) return 1;
  WARN("%s through ncclNetPlugin_v%d: %s of %d bytes refused: this table carries sizes as int, "
       "at most %d bytes, and a negative size is a larger request cut to 32 bits by the caller "
       "(perhaps %u bytes). Split the transfer below %d bytes, or use an NCCL that binds "
       "ncclNetPlugin_v9 or newer (2.24 and later), whose sizes are size_t",
       fn, abi, what, size, INT_MAX, (unsigned)size, INT_MAX);
  return 0;
}

ncclResult_t diag_isend_int(int abi, void *send_comm, void *data, int size, int tag, void *mhandle,
                            void **request) {
  *request = NULL;
  if (!size_ok(abi, "isend", "a message", size)) return ncclInternalError;
  return diag_isend(send_comm, data, (size_t)size, tag, mhandle, request);
}

ncclResult_t diag_irecv_int(int abi, void *recv_comm, int n, void **data, int *sizes, int *tags,
                            void **mhandles, void **request) {
  size_t wide[NCCL_NET_MAX_REQUESTS];
  *request = NULL;
  if (n < 1 || n > NCCL_NET_MAX_REQUESTS) {
    WARN("irecv through ncclNetPlugin_v%d: %d grouped receives, NCCL posts 1 to %d", abi, n,
         NCCL_NET_MAX_REQUESTS);
    return ncclInternalError;
  }
  for (int i = 0; i < n; i++) {
    if (!size_ok(abi, "irecv", "a receive buffer", sizes[i])) return ncclInternalError;
    wide[i] = (size_t)sizes[i];
  }
  return diag_irecv(recv_comm, n, data, wide, tags, mhandles, request);
}

ncclResult_t diag_reg_mr_int(int abi, void *comm, void *data, int size, int type, void **mhandle) {
  if (!size_ok(abi, "regMr", "a registration", size)) return ncclInternalError;
  return diag_reg_mr(comm, data, (size_t)size, type, mhandle);
}
