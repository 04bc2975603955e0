/* SPDX-License-Identifier: Apache-2.0 */
/* The two engines a worker holds. Both take the same streams (buffers,
 * windows, per-message completion times) and fill in the same record, so
 * the parent compares like with like. */
#ifndef DIAG_BENCH_DRV_H
#define DIAG_BENCH_DRV_H

#include <stdbool.h>

#include "bench/bench.h"
#include "tools/netload.h"

/* --- drv_plugin.c: the plugin through its ABI, driven like NCCL's proxy --- */
struct plugin_driver {
  struct netload net;
  bool is_loaded, is_inited;
  int dev;
  int rank;
  int ncomms;
  char desc[600]; /* "path, ABI vN \"name\", device D name" */
  void *listen_comms[BENCH_MAX_COMMS];
  void *send_comms[BENCH_MAX_COMMS], *recv_comms[BENCH_MAX_COMMS];
  void *send_mhandles[BENCH_MAX_COMMS], *recv_mhandles[BENCH_MAX_COMMS];
};

/* Loads and initialises the plugin and picks the device. Returns 0, -1 on
 * error, or 1 when there is nothing to measure (err says why: a skip). */
int plugin_driver_open(struct plugin_driver *p, const struct worker_cfg *cfg, char *err,
                       size_t cap);
int plugin_driver_listen(struct plugin_driver *p, int ncomms, struct bench_handles *h, char *err,
                         size_t cap);
/* Connects to the peer's handles while accepting the peer's connections,
 * then registers each comm's pool as NCCL registers its buffers. */
int plugin_driver_connect(struct plugin_driver *p, const struct bench_handles *peer,
                          uint8_t *const *spool, uint8_t *const *rpool, size_t pool_len, char *err,
                          size_t cap);
int plugin_driver_run(struct plugin_driver *p, struct run_ctx *r);
void plugin_driver_close(struct plugin_driver *p);

/* --- drv_raw.c: plain TCP sockets, the baseline --- */
struct raw_driver {
  bool is_ready;
  int rank;
  int listen_fd;
  int ncomms, nsocks;
  int send_fds[BENCH_MAX_COMMS][BENCH_MAX_SOCKS]; /* this rank sends on them */
  int recv_fds[BENCH_MAX_COMMS][BENCH_MAX_SOCKS]; /* and receives on these */
};

int raw_listen(struct raw_driver *w, int rank, const char *addr, int ncomms, int nsocks,
               struct bench_handles *h, char *err, size_t cap);
int raw_connect(struct raw_driver *w, const struct bench_handles *peer, char *err, size_t cap);
int raw_run(struct raw_driver *w, struct run_ctx *r);
void raw_close(struct raw_driver *w);

#endif
