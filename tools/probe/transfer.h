/* SPDX-License-Identifier: Apache-2.0 */
/* One side of a pair test through the plugin, as NCCL drives it: each side
 * listens, learns the other's handle through rank 0, then connects to it
 * while accepting the other's connection, so each side holds a send and a
 * receive connection. Then the first side streams to the second, the
 * second to the first (every byte checked), and the first measures the
 * round trip of small messages. Every wait is bounded and may be stopped
 * (rank 0 gave up the task, or the peer died). */
#ifndef DIAG_TOOLS_PROBE_TRANSFER_H
#define DIAG_TOOLS_PROBE_TRANSFER_H

#include <stddef.h>
#include <stdint.h>

#include "tools/netload.h"

#define XFER_INFLIGHT 4
#define XFER_CHUNK_MAX (4u << 20)

/* Returns 1 when the task must stop now, with the reason in why. */
typedef int (*xfer_stop_fn)(void *arg, char *why, size_t cap);

struct xfer {
  struct netload *nl;
  int dev;
  void *lc, *sc, *rc;
  size_t chunk;
  uint8_t *sbuf[XFER_INFLIGHT], *rbuf[XFER_INFLIGHT], *ref[XFER_INFLIGHT];
  void *smh[XFER_INFLIGHT], *rmh[XFER_INFLIGHT];
  xfer_stop_fn stop;
  void *stop_arg;
  int64_t deadline_ns;
  size_t watch_bytes; /* messages of this size must move within 10 s, 0 no watch */
  int64_t stall_at;   /* when the watched messages count as stalled */
  int stall_bytes;    /* that size stalled while small messages passed */
  char peer[80];      /* the peer host, for messages */
  char error[1024];   /* what failed, for the result */
};

/* Buffers for messages of up to chunk bytes; 0 or ENOMEM. */
int xfer_init(struct xfer *x, struct netload *nl, int dev, size_t chunk, const char *peer);
/* listen: the handle to send to the peer. */
int xfer_listen(struct xfer *x, void *handle);
/* Connects to the peer's handle while accepting its connection. */
int xfer_connect(struct xfer *x, void *peer_handle);
/* Streams bytes one way: the sender and the receiver call it with the
 * same seed; the receiver verifies and times it. */
int xfer_send_stream(struct xfer *x, uint64_t bytes, uint64_t seed);
int xfer_recv_stream(struct xfer *x, uint64_t bytes, uint64_t seed, uint64_t *ns);
/* One round trip of 8 bytes, then one of a full-size message (64 KiB, or
 * the chunk when smaller). A large message that does not move for 10 s
 * after the small ones passed sets stall_bytes and fails the transfer: a
 * path MTU black hole drops every frame above a hop's MTU. */
int xfer_size_check(struct xfer *x, int first);
/* pings round trips of 8 bytes; the first side measures (median, ns). */
int xfer_pingpong(struct xfer *x, int first, int pings, uint64_t *rtt_ns);
/* Releases everything, requests in flight included. */
void xfer_done(struct xfer *x);

#endif
