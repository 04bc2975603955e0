/* SPDX-License-Identifier: Apache-2.0 */
/* The process's connections, open and closed, for readers off the data
 * path: the metrics file (metrics.c) and the end-of-job summary
 * (summary.c). A comm joins when it is handed to NCCL and leaves (its
 * figures kept) before its transport closes it; both take one lock, which
 * the data path never does. */
#ifndef DIAG_TRANSPORT_RUN_CONNS_H
#define DIAG_TRANSPORT_RUN_CONNS_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/run/evidence.h"
#include "transport/run/stats.h"

struct transport_comm;

/* One connection as the readers see it. */
struct run_conn_info {
  uint32_t id;
  bool is_send, is_open;
  char transport[8];  /* "tcp" or "ib" */
  char dev[64];       /* our device: interface, or RDMA device and port */
  char local[64];     /* this end's address: the device's interface address */
  int port;           /* RDMA: the port number */
  char peer_host[64]; /* the peer's host name, from its hello */
  char peer_addr[80]; /* "10.0.0.7<46417>" */
  char peer_desc[160];
  uint32_t peer_pid;
  uint64_t peer_token; /* the peer process's liveness token, from its hello; 0 none */
  struct run_stats_view v;
  struct run_tcp_evidence tcp; /* TCP connections: their sockets' TCP_INFO */
};

void run_conn_add(struct transport_comm *c);
void run_conn_remove(struct transport_comm *c);

/* A copy of every connection so far (the caller frees *out); NULL and 0
 * when there are none or no memory. open: how many are open. */
struct run_conn_info *run_conn_snapshot(int *n, int *open);

/* A stall diagnosed on this process, for the summary. */
void run_conn_note_stall(void);
int run_conn_stalls(void);

#endif
