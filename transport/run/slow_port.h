/* SPDX-License-Identifier: Apache-2.0 */
/* What an RDMA port's own counters say over the slow-link judge's span
 * (slow.h): the kernel's ports/<n>/hw_counters read once per window, off
 * the data path, and the port's link rate. A port's counters are shared
 * by every connection on it, so they show that a port sees loss or
 * congestion, not which connection does; the judge pairs them with the
 * one connection that runs slow while its siblings on the same port do
 * not. */
#ifndef DIAG_TRANSPORT_RUN_SLOW_PORT_H
#define DIAG_TRANSPORT_RUN_SLOW_PORT_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/run/conns.h"

struct slow_port_view {
  bool has;               /* its counters were read at least twice */
  uint64_t retries;       /* loss: resends, sequence errors, ACK timeouts over the span */
  uint64_t congestion;    /* CNPs and ECN marks over the span */
  int retry_windows;      /* windows of the span in which retries rose */
  int congestion_windows; /* windows in which congestion counters rose */
  double gbps;            /* the port's link rate (0: unknown) */
  char words[200];        /* the counters that rose: "412 sequence NAKs, 37 ACK timeouts" */
};

/* Once per judged window: reads the counters of every RDMA port the open
 * connections among all[0..n) use. */
void slow_port_window(const struct run_conn_info *all, int n);

/* The span's figures of dev's port; false when the port was never read. */
bool slow_port_of(const char *dev, int port, struct slow_port_view *out);

/* After the connections s[0..n) were judged (slow.c): a port that loses
 * packets while its connections run alike, none named (a job of two
 * hosts: every connection on the one path), is named itself, once per
 * episode. Loss must persist (RUN_SLOW_WINDOWS windows) and be a share of
 * the requests its connections completed: SLOW_PORT_PER_MILLE resends per
 * thousand, at least SLOW_PORT_MIN. */
#define SLOW_PORT_MIN 10
#define SLOW_PORT_PER_MILLE 5
struct slow_sample;
void slow_port_judge(const struct slow_sample *s, int n);
/* Lossy ports named so far (under slow.c's lock: run_slow_port_count). */
int slow_port_named(void);

#endif
