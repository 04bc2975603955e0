/* SPDX-License-Identifier: Apache-2.0 */
/* The version-neutral plugin API. Each ncclNetPlugin_vN adapter is a thin
 * shell over these calls; they check every object NCCL hands back and
 * dispatch to the comm's transport. */
#ifndef DIAG_PLUGIN_API_H
#define DIAG_PLUGIN_API_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/abi/nccl_common.h"

#define DIAG_NET_NAME "diag"
#define DIAG_MAX_P2P_BYTES (1ULL << 30)
#define DIAG_MAX_COLL_BYTES (1ULL << 30)

/* Per-communicator context (v11/v12 init/finalize); v5-v10 use a shared one. */
struct diag_ctx {
  uint32_t obj;
  uint64_t comm_id;
  int traffic_class;
};

/* Everything any ABI version's property struct needs. */
struct diag_props {
  char *name;
  char *pci_path;
  uint64_t guid;
  int ptr_support;
  int reg_is_global;
  int force_flush;
  int speed;
  int port;
  float latency;
  int max_comms;
  int max_recvs;
  size_t max_p2p_bytes;
  size_t max_coll_bytes;
  int ndevs;             /* vProps: the physical devices behind it (itself for a physical one) */
  int devs[8];           /* DIAG_VDEV_MAX_DEVS */
  int rail_id, plane_id; /* v12; -1 unknown (plugin/vdev.h diag_dev_rail_plane) */
};

/* Never fails (NCCL 2.28.9 crashes on a failed v6-v10 init): an unusable
 * host reports 0 devices, with one WARN saying why. abi is the version of
 * the table whose init NCCL called: the first one is logged, since NCCL
 * 2.12-2.23 do not say which table they bound. */
ncclResult_t diag_init(ncclDebugLogger_t logger, int abi);
struct diag_ctx *diag_ctx_new(uint64_t comm_id, int traffic_class);
ncclResult_t diag_ctx_free(struct diag_ctx *ctx);

ncclResult_t diag_devices(int *ndev);
/* makeVDevice (v9+): plugin/vdev.c. */
ncclResult_t diag_make_vdevice(int *dev, int ndevs, const int *devs, int cap);
/* Once per process, when a v12 table reports properties (NCCL 2.30 reads
 * rails and planes): an INFO naming each device's and where they came from
 * (plugin/vdev.c). */
void diag_rails_note(void);
ncclResult_t diag_get_properties(int dev, struct diag_props *props);
ncclResult_t diag_listen(struct diag_ctx *ctx, int dev, void *handle, void **listen_comm);
ncclResult_t diag_connect(struct diag_ctx *ctx, int dev, void *handle, void **send_comm);
ncclResult_t diag_accept(void *listen_comm, void **recv_comm);
ncclResult_t diag_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle);
ncclResult_t diag_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
                                int fd, void **mhandle);
ncclResult_t diag_dereg_mr(void *comm, void *mhandle);
ncclResult_t diag_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                        void **request);
ncclResult_t diag_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                        void **mhandles, void **request);
ncclResult_t diag_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                         void **request);
ncclResult_t diag_test(void *request, int *done, int *sizes);

/* NCCL's profiler (v10+, plugin/api_prof.c): init's callback, and isend/irecv
 * with the per-request handles it reports network events under. */
void diag_set_profiler(ncclProfilerCallback_t fn);
ncclResult_t diag_isend_prof(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                             void *phandle, void **request);
ncclResult_t diag_irecv_prof(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                             void **mhandles, void **phandles, void **request);
ncclResult_t diag_close_send(void *send_comm);
ncclResult_t diag_close_recv(void *recv_comm);
ncclResult_t diag_close_listen(void *listen_comm);

/* The tables before v9 (v5-v8) carry message sizes as int, and v5-v7 the
 * registration size too: these check what an int cannot carry (a negative
 * value is what a larger size becomes when a caller truncates it) and refuse
 * it with a WARN naming the size and the table's limit, then call the
 * size_t API. abi names the table in that WARN. */
ncclResult_t diag_isend_int(int abi, void *send_comm, void *data, int size, int tag, void *mhandle,
                            void **request);
ncclResult_t diag_irecv_int(int abi, void *recv_comm, int n, void **data, int *sizes, int *tags,
                            void **mhandles, void **request);
ncclResult_t diag_reg_mr_int(int abi, void *comm, void *data, int size, int type, void **mhandle);

#endif
