/* SPDX-License-Identifier: Apache-2.0 */
/* Every setting NCCL 2.30.7's network transports read, and what this
 * plugin does with it (knobs.h nccl_knobs). Read at v2.30.7-1 from the
 * NCCL_PARAM and ncclGetEnv calls of src/transport/net_ib/,
 * src/transport/net_socket.cc, src/misc/socket.cc, src/misc/ibvwrap.cc
 * and src/misc/ibvsymbols.cc (GIN's and GDAKI's device-side settings
 * aside: this plugin offers no device API). Honoured ones are in the knob
 * table with NCCL's meaning. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/knobs.h"
#include "common/log.h"

#define HONOURED(n)                                                                                \
  { n, NK_HONOURED, NULL }
#define SOCKET_PART "NCCL's bootstrap setting, not the network plugin's"
/* NCCL proves a returned port with "alive" messages on probe queue pairs;
 * here the move back is the proof: its queue pairs reach RTS towards the
 * peer's, and a failure there moves the connection off again. */
#define RECOVERY_PROBE                                                                             \
  "NCCL probes a returned port with batches of alive messages; this plugin moves back with its "   \
  "fail-over handshake, which checks the path itself, so this is read and not used"

static const struct nccl_knob table[] = {
  HONOURED("NCCL_GDR_FLUSH_DISABLE"),
  HONOURED("NCCL_IBVERBS_LIB"),
  HONOURED("NCCL_IB_ADAPTIVE_ROUTING"),
  HONOURED("NCCL_IB_ADDR_FAMILY"),
  HONOURED("NCCL_IB_ADDR_RANGE"),
  HONOURED("NCCL_IB_AR_THRESHOLD"),
  {"NCCL_IB_DATA_DIRECT", NK_IGNORED,
   "data direct (a GPU buffer reached past the PCIe switch, mlx5dv_reg_dmabuf_mr) is not "
   "used: GPU memory is registered through the NIC's PCIe path (peer memory or dma-buf)"},
  {"NCCL_IB_DEVICE_PCI_ORDER", NK_IGNORED,
   "devices are always listed in PCI order (NCCL's default 1), so every node numbers them "
   "alike; 0 (the verbs library's order) is not followed"},
  HONOURED("NCCL_IB_DISABLE"),
  HONOURED("NCCL_IB_ECE_ENABLE"),
  HONOURED("NCCL_IB_FIFO_TC"),
  HONOURED("NCCL_IB_GID_INDEX"),
  HONOURED("NCCL_IB_HCA"),
  HONOURED("NCCL_IB_MERGE_NICS"),
  {"NCCL_IB_MERGE_VFS", NK_IGNORED,
   "SR-IOV virtual functions stay devices of their own (as with 0): a function is never "
   "taken for another port of its physical function"},
  HONOURED("NCCL_IB_MQP_RETRY_ALL"),
  HONOURED("NCCL_IB_MQP_RETRY_CNT"),
  HONOURED("NCCL_IB_MQP_RETRY_SLEEP_MSEC"),
  {"NCCL_IB_OOO_RQ", NK_IGNORED,
   "out-of-order receive queues (mlx5dv) are not used: every queue pair delivers in order"},
  HONOURED("NCCL_IB_PCI_RELAXED_ORDERING"),
  HONOURED("NCCL_IB_PKEY"),
  {"NCCL_IB_PREPOST_RECEIVE_WORK_REQUESTS", NK_IGNORED,
   "a setting of NCCL's own receive path, which this plugin does not share"},
  {"NCCL_IB_QPS_PER_CONNECTION", NK_CLAMPED,
   "at most 32 queue pairs per connection here (NCCL takes 128): a larger value is used as 32, "
   "said once"},
  {"NCCL_IB_QUERY_PORT_SPEED", NK_IGNORED,
   "the port speed always comes from the port's rate, never from ibv_query_port_speed, so 0 "
   "changes nothing"},
  {"NCCL_IB_RECEIVER_SIDE_MATCHING_SCHEME", NK_IGNORED,
   "NCCL's own matching of sends to receives; this plugin matches them by its clear-to-send "
   "records"},
  HONOURED("NCCL_IB_RESILIENCY_PORT_FAILOVER"),
  HONOURED("NCCL_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS"),
  HONOURED("NCCL_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY"),
  HONOURED("NCCL_IB_RESILIENCY_PORT_RECOVERY"),
  {"NCCL_IB_RESILIENCY_PORT_RECOVERY_ACK_TIMEOUT", NK_IGNORED, RECOVERY_PROBE},
  {"NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_INTERVAL", NK_IGNORED, RECOVERY_PROBE},
  {"NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_BATCH_SIZE", NK_IGNORED, RECOVERY_PROBE},
  {"NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_SEQUENCE_SIZE", NK_IGNORED, RECOVERY_PROBE},
  {"NCCL_IB_RESILIENCY_PORT_RECOVERY_ALIVE_MSG_TIMEOUT", NK_IGNORED, RECOVERY_PROBE},
  HONOURED("NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX"),
  HONOURED("NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY"),
  HONOURED("NCCL_IB_RETRY_CNT"),
  HONOURED("NCCL_IB_RETURN_ASYNC_EVENTS"),
  HONOURED("NCCL_IB_ROCE_VERSION_NUM"),
  {"NCCL_IB_ROUTABLE_FLID_GID_INDEX", NK_IGNORED,
   "the GID is chosen by NCCL_IB_GID_INDEX or this plugin's scoring; across InfiniBand subnets "
   "the remote GID's FLID is used as the destination LID whatever its index"},
  HONOURED("NCCL_IB_SL"),
  HONOURED("NCCL_IB_SPLIT_DATA_ON_QPS"),
  {"NCCL_IB_SUBNET_AWARE_ROUTING", NK_IGNORED,
   "a connection starts on the device NCCL asked for; it is not re-chosen by the peer's subnet"},
  {"NCCL_IB_SUBNET_PREFIX_LEN", NK_IGNORED,
   "read by NCCL only with NCCL_IB_SUBNET_AWARE_ROUTING, which this plugin does not follow"},
  HONOURED("NCCL_IB_TC"),
  HONOURED("NCCL_IB_TIMEOUT"),
  {"NCCL_IB_USE_INLINE", NK_IGNORED,
   "no payload is inlined in a send work request (NCCL's default 0): data always goes by RDMA "
   "write from registered memory"},
  {"NCCL_IB_WARN_RAIL_LOCAL", NK_IGNORED,
   "a fused device is not narrowed to the ports both ends share (each connection takes one "
   "member port), so there is nothing to warn of"},
  {"NCCL_COMM_ID", NK_IGNORED, SOCKET_PART},
  HONOURED("NCCL_NSOCKS_PERTHREAD"),
  HONOURED("NCCL_SOCKET_FAMILY"),
  HONOURED("NCCL_SOCKET_IFNAME"),
  {"NCCL_SOCKET_INLINE", NK_IGNORED,
   "TCP messages up to NCCL_DIAG_SOCKET_INLINE (64 KiB) travel on the control socket; "
   "NCCL's 128-byte inline header is not used"},
  {"NCCL_SOCKET_MAGIC", NK_IGNORED, SOCKET_PART},
  {"NCCL_SOCKET_MIN_TASKSIZE", NK_IGNORED,
   "a TCP message is cut into pieces of at least NCCL_DIAG_MIN_CHUNK (128 KiB) per data socket"},
  {"NCCL_SOCKET_NTHREADS", NK_CLAMPED,
   "honoured up to 16 helper threads per connection, but a device's connections share at most "
   "NCCL_DIAG_SOCKET_POOL helpers, so more than that many threads are not started"},
  {"NCCL_SOCKET_POLL_TIMEOUT_MSEC", NK_IGNORED,
   "this plugin's sockets never block in poll: each call returns at once and test() steps them"},
  {"NCCL_SOCKET_RCVBUF", NK_IGNORED,
   "socket buffers are left to the kernel's autotuning (net.ipv4.tcp_rmem)"},
  {"NCCL_SOCKET_RETRY_CNT", NK_IGNORED,
   "connect keeps trying the listener's addresses for NCCL_DIAG_CONNECT_TIMEOUT_MS instead"},
  {"NCCL_SOCKET_RETRY_SLEEP_MSEC", NK_IGNORED,
   "connect keeps trying the listener's addresses for NCCL_DIAG_CONNECT_TIMEOUT_MS instead"},
  {"NCCL_SOCKET_SNDBUF", NK_IGNORED,
   "socket buffers are left to the kernel's autotuning (net.ipv4.tcp_wmem)"},
};

const struct nccl_knob *nccl_knobs(int *n) {
  *n = (int)(sizeof(table) / sizeof(table[0]));
  return table;
}

const struct nccl_qos_defaults *nccl_qos_defaults(void) {
  static const struct nccl_qos_defaults d = {.tc = 0, .sl = 0, .fifo_tc_since = "2.22"};
  return &d;
}

const char *nccl_knob_state_name(enum nccl_knob_state s) {
  switch (s) {
  case NK_HONOURED: return "honoured";
  case NK_CLAMPED: return "clamped";
  default: return "ignored";
  }
}

void nccl_knobs_note(void) {
  static atomic_bool has_said;
  if (atomic_exchange(&has_said, true)) return;
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
    const char *v = getenv(table[i].name);
    if (!v || table[i].state != NK_IGNORED) continue;
    char shown[256];
    INFO(LOG_INIT | LOG_ENV, "%s=%s is ignored by this plugin: %s", table[i].name,
         log_clean(shown, sizeof(shown), v, strlen(v)), table[i].why);
  }
}
