/* SPDX-License-Identifier: Apache-2.0 */
/* The two engines a worker holds. Both take the same streams (buffers,
 * windows, per-message completion times) and fill in the same record, so
 * the parent compares like with like. */
#ifndef DIAG_BENCH_DRV_H
#define DIAG_BENCH_DRV_H

#include "bench/bench.h"
#include "tools/netload.h"

/* --- drv_plugin.c: the plugin through its ABI, driven like NCCL's proxy --- */
struct plug {
  struct netload nl;
  int loaded, inited;
  int dev;
  int rank;
  int ncomms;
  char desc[600]; /* "path, ABI vN \"name\", device D name" */
  void *lc[BENCH_MAX_COMMS];
  void *sc[BENCH_MAX_COMMS], *rc[BENCH_MAX_COMMS];
  void *smh[BENCH_MAX_COMMS], *rmh[BENCH_MAX_COMMS];
};

/* Loads and initialises the plugin and picks the device. Returns 0, -1 on
 * error, or 1 when there is nothing to measure (err says why: a skip). */
int plug_open(struct plug *p, const struct worker_cfg *cfg, char *err, size_t cap);
int plug_listen(struct plug *p, int ncomms, struct bench_handles *h, char *err, size_t cap);
/* Connects to the peer's handles while accepting the peer's connections,
 * then registers each comm's pool as NCCL registers its buffers. */
int plug_connect(struct plug *p, const struct bench_handles *peer, uint8_t *const *spool,
                 uint8_t *const *rpool, size_t pool_len, char *err, size_t cap);
int plug_run(struct plug *p, struct run_ctx *r);
void plug_close(struct plug *p);

/* --- drv_raw.c: plain TCP sockets, the baseline --- */
struct raw {
  int ready;
  int rank;
  int lfd;
  int ncomms, nsocks;
  int sfd[BENCH_MAX_COMMS][BENCH_MAX_SOCKS]; /* this rank sends on them */
  int rfd[BENCH_MAX_COMMS][BENCH_MAX_SOCKS]; /* and receives on these */
};

int raw_listen(struct raw *w, int rank, const char *addr, int ncomms, int nsocks,
               struct bench_handles *h, char *err, size_t cap);
int raw_connect(struct raw *w, const struct bench_handles *peer, char *err, size_t cap);
int raw_run(struct raw *w, struct run_ctx *r);
void raw_close(struct raw *w);

#endif
