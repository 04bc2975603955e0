/* SPDX-License-Identifier: Apache-2.0 */
/* Every setting the transport layer uses, read once from the knob table
 * (common/knobs.h) into one struct, as libfabric's providers read theirs at
 * init. The plugin's init reads it; a process that reloads the knobs (the
 * tools, after applying their options) gets the new values at its next
 * transport_prefs(). Values keep the knob's own units and meaning. */
#ifndef DIAG_TRANSPORT_PREFS_H
#define DIAG_TRANSPORT_PREFS_H

#include <stdbool.h>
#include <stdint.h>

struct transport_prefs {
  /* interfaces and sockets */
  const char *socket_ifname; /* NCCL_SOCKET_IFNAME; NULL when unset */
  int socket_family;         /* NCCL_SOCKET_FAMILY: 0 AF_INET, 1 AF_INET6, -1 unset */
  int64_t socket_nthreads, nsocks_perthread; /* -2 = automatic */
  int64_t socket_inline;                     /* -2 = automatic */
  int64_t min_chunk, caller_max, socket_pool;
  /* connection setup and liveness */
  int64_t connect_timeout_ms, handshake_timeout_ms, peer_timeout_sec;
  int fallback;         /* FALLBACK_* */
  int repair;           /* REPAIR_* */
  bool is_repair_ports; /* NCCL_DIAG_REPAIR_PORTS: the hello lists every port */
  /* waiting, stalls and run-time figures */
  int64_t spin_us, idle_wait_us, stall_warn_sec, stall_sec;
  const char *metrics_dir; /* NULL when unset or empty */
  bool is_run_stats;
  int64_t slow_percent; /* NCCL_DIAG_SLOW_PERCENT */
  /* RDMA devices */
  const char *diag_ibverbs_lib;  /* NCCL_DIAG_IBVERBS_LIB when set, else NULL */
  const char *ibverbs_lib;       /* NCCL_IBVERBS_LIB; NULL when unset */
  const char *ib_gid_index_text; /* NCCL_IB_GID_INDEX as written, NULL when not set */
  int64_t ib_relaxed_ordering;
  bool is_gdr_flush_disabled, is_flush_forced, is_ece_enabled, is_async_events_returned;
  /* RDMA queue pairs */
  int64_t ib_timeout, ib_retry_cnt, ib_sl, ib_tc, ib_fifo_tc, ib_pkey, ib_qps_per_connection;
  bool is_split_data_on_qps;
  int64_t ib_adaptive_routing, ib_ar_threshold;
  int64_t ib_mqp_retry_cnt, ib_mqp_retry_sleep_msec;
  bool is_mqp_retry_all;
  /* port fail-over */
  bool is_merge_nics; /* NCCL_IB_MERGE_NICS: makeVDevice may fuse ports */
  bool is_port_failover;
  int64_t port_failover_max_attempts;
  bool is_port_recovery;          /* NCCL_IB_RESILIENCY_PORT_RECOVERY: move back */
  int64_t port_recovery_delay_ms; /* the port active this long first */
  int64_t port_recovery_max;      /* moves back per connection */
};

/* Reads every field from the knobs (loading them if nothing has yet). */
void transport_prefs_read(void);
/* The settings; read at the first call, again after the knobs reload. */
const struct transport_prefs *transport_prefs(void);

#endif
