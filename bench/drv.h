/* SPDX-License-Identifier: Apache-2.0 */
/* The two engines a worker holds. Both take the same streams (buffers,
 * windows, per-message completion times) and fill in the same record, so
 * the parent compares like with like. */
#ifndef DIAG_BENCH_DRV_H
#define DIAG_BENCH_DRV_H

#include <stdbool.h>

#include "bench/bench.h"
#include "tools/netload.h"

/* --- drv_plugin.c: a plugin through its ABI, driven like NCCL's proxy --- */
struct plugin_driver {
  struct netload net;
  bool is_loaded, is_inited;
  int dev;
  int rank;
  int ncomms;
  char desc[600];      /* "path, ABI vN \"name\", device D name" */
  void **listen_comms; /* ncomms of each: listens, send and receive comms, registrations */
  void **send_comms, **recv_comms;
  void **send_mhandles, **recv_mhandles;
  bool has_send, has_recv; /* the directions this rank holds in the block */
};

/* Loads and initialises the plugin at path (NULL: this build's) through
 * table abi (0: its newest) and picks the device. Returns 0 or an errno
 * (err says why): ENODEV when the plugin offers no device, or with
 * cfg->is_rdma_only no RDMA device (then nothing to measure: a skip);
 * EINVAL for a device it does not offer; EIO when a plugin call failed. */
int plugin_driver_open(struct plugin_driver *p, const struct worker_cfg *cfg, const char *path,
                       int abi, char *err, size_t cap);
/* Closes the previous block's comms, then (when this rank receives)
 * listens ncomms times, writing ncomms handles of BENCH_HANDLE_LEN bytes.
 * The driver functions below return 0 or an errno, the why in err (or in
 * r->err): EIO when a plugin call failed, ENOMEM, ETIMEDOUT when the
 * plugin never completed. */
int plugin_driver_listen(struct plugin_driver *p, int ncomms, bool has_send, bool has_recv,
                         uint8_t *handles, char *err, size_t cap);
/* Connects to the peer's handles while accepting the peer's connections,
 * then registers the buffer regions with every comm, as NCCL registers its
 * buffers. */
int plugin_driver_connect(struct plugin_driver *p, const uint8_t *peer_handles, uint8_t *spool,
                          uint8_t *rpool, size_t pool_len, char *err, size_t cap);
int plugin_driver_run(struct plugin_driver *p, struct run_ctx *r);
/* Deregisters and closes the comms (the plugin stays loaded). */
void plugin_driver_close_comms(struct plugin_driver *p);
void plugin_driver_close(struct plugin_driver *p);

/* --- drv_raw.c: plain TCP sockets, the baseline --- */
struct raw_driver {
  bool is_ready;
  int rank;
  int listen_fd;
  int ncomms, nsocks;
  bool has_send, has_recv; /* the directions this rank holds in the block */
  int *send_fds;           /* [comm * nsocks + sock]: this rank sends on them */
  int *recv_fds;           /* and receives on these */
};

/* Closes the previous block's sockets, then listens for ncomms x nsocks.
 * These return 0 or an errno, the why in err (or r->err): the failed
 * socket call's, ETIMEDOUT, EPROTO for a stray connection, EINVAL for a
 * shape or address it cannot run. */
int raw_listen(struct raw_driver *w, int rank, const char *addr, int ncomms, int nsocks,
               bool has_send, bool has_recv, struct bench_offer *o, char *err, size_t cap);
int raw_connect(struct raw_driver *w, const struct bench_offer *peer, char *err, size_t cap);
int raw_run(struct raw_driver *w, struct run_ctx *r);
/* raw_event.c: the event shape (every comm on one thread, epoll). */
int raw_run_event(struct raw_driver *w, struct run_ctx *r);
void raw_close(struct raw_driver *w);

#endif
