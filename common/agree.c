/* SPDX-License-Identifier: Apache-2.0 */
/* The must-agree table (agree.h). Read from NCCL 2.28.9's source; where a
 * later release changed a fact the entry says so. */
#include "common/agree.h"

#include <string.h>

static const struct agree_entry table[] = {
  {"NCCL_DEBUG*", AGREE_IGNORE, false, false, "logging only"},
  {"NCCL_DIAG_SYSFS_ROOT", AGREE_IGNORE, false, false, "this plugin's test hook"},
  {"NCCL_DIAG_IFADDRS", AGREE_IGNORE, false, false, "this plugin's test hook"},
  {"NCCL_DIAG_IBVERBS_LIB", AGREE_IGNORE, false, false, "this plugin's test hook"},
  {"NCCL_DIAG_LOG_FILE", AGREE_IGNORE, false, false, "this plugin's event file, per process"},
  {"NCCL_DIAG_PLUGIN_PATH", AGREE_IGNORE, false, false, "which build the tools load"},
  {"NCCL_HOSTID", AGREE_IGNORE, false, false, "src/misc/utils.cc: names this host only"},
  {"NCCL_RAS_ADDR", AGREE_IGNORE, false, false, "src/ras/ras.cc: this process's RAS socket"},
  {"NCCL_PROTO", AGREE_MUST, true, true,
   "src/graph/tuning.cc: each rank enables protocols by it; ranks that pick different "
   "protocols for one operation post different buffers: truncation or a hang"},
  {"NCCL_ALGO", AGREE_MUST, true, true,
   "src/graph/tuning.cc: each rank picks the algorithm by it; ranks on different algorithms "
   "wait for peers that never send: a hang"},
  {"NCCL_BUFFSIZE", AGREE_MUST, true, true,
   "src/init.cc (computeBuffSizes): the Simple buffer and its step size; a receiver with "
   "smaller steps than its sender truncates messages"},
  {"NCCL_LL_BUFFSIZE", AGREE_MUST, true, true,
   "src/init.cc (computeBuffSizes): the LL buffer; as NCCL_BUFFSIZE"},
  {"NCCL_LL128_BUFFSIZE", AGREE_MUST, true, true,
   "src/init.cc (computeBuffSizes): the LL128 buffer; as NCCL_BUFFSIZE"},
  {"NCCL_P2P_NET_CHUNKSIZE", AGREE_MUST, true, true,
   "src/init.cc: the chunk a network send/recv is cut into; the ends cut one message "
   "differently: truncation"},
  {"NCCL_NCHANNELS_PER_NET_PEER", AGREE_MUST, false, true,
   "src/init.cc: connections per peer for send/recv; the ends open different numbers and "
   "wait for connections never made"},
  {"NCCL_IB_SPLIT_DATA_ON_QPS", AGREE_MUST, false, true,
   "src/transport/net_ib.cc (isend/irecv): the sender splits a message over all its QPs by it, "
   "the receiver counts completions by its own value: a hang or an early completion"},
  {"NCCL_IB_RESILIENCY_PORT_FAILOVER", AGREE_MUST, false, true,
   "src/transport/net_ib/p2p_resiliency.cc (2.29.7 and later): each end builds its probing "
   "queue pairs and connection metadata by its own value; a port failure then strands the end "
   "that moves: the connection fails"},
  {"NCCL_IB_ADDR_FAMILY", AGREE_MUST, false, true,
   "src/transport/net_ib.cc (GID selection): both ends must pick GIDs of one family, or the "
   "queue pair never reaches RTR"},
  {"NCCL_IB_ROCE_VERSION_NUM", AGREE_MUST, false, true,
   "src/transport/net_ib.cc (GID selection): a RoCE v1 GID cannot reach a v2 one: RTR times "
   "out"},
  {"NCCL_SOCKET_FAMILY", AGREE_MUST, false, true,
   "src/misc/socket.cc: the family of bootstrap and socket addresses; an IPv4-only rank cannot "
   "reach an IPv6 address"},
  {"NCCL_COMM_ID", AGREE_MUST, false, false,
   "src/bootstrap.cc: the root every rank dials; ranks given different roots never meet"},
  {"NCCL_NET", AGREE_MUST, false, false,
   "src/plugin/net.cc: the network by name; ranks on different networks exchange handles "
   "neither can read"},
  {"NCCL_NET_PLUGIN", AGREE_MUST, false, false,
   "src/plugin/net.cc: the plugin whose handles the ranks exchange; another plugin's handle "
   "is refused (a name and a path to the same library agree)"},
  {"NCCL_IB_DISABLE", AGREE_MUST, false, false,
   "src/plugin/net.cc: one rank on IB and another on sockets exchange handles of different "
   "transports"},
  {"NCCL_DIAG_FALLBACK", AGREE_MUST, false, true,
   "this plugin: with auto one end moves a failed RDMA path to TCP while an end with off "
   "fails it"},
  {"NCCL_SOCKET_IFNAME", AGREE_PER_HOST, false, false,
   "src/misc/socket.cc: names this node's interfaces; nodes with other names may differ, but "
   "every node must pick the network the others reach"},
  {"NCCL_IB_HCA", AGREE_PER_HOST, false, false,
   "src/transport/net_ib.cc: names this node's HCAs; as NCCL_SOCKET_IFNAME"},
  {"NCCL_IB_GID_INDEX", AGREE_PER_HOST, false, false,
   "src/transport/net_ib.cc: an index into this node's GID table, whose layout is the "
   "node's own"},
  {"NCCL_IB_PKEY", AGREE_PER_HOST, false, false,
   "src/transport/net_ib.cc (INIT): an index into this node's P_Key table"},
  {"NCCL_IB_ADDR_RANGE", AGREE_PER_HOST, false, false,
   "src/transport/net_ib.cc (GID selection): filters this node's GIDs by subnet"},
  {"NCCL_TOPO_FILE", AGREE_PER_HOST, false, false, "src/graph/topo.cc: this node's topology"},
  {"NCCL_IB_TIMEOUT", AGREE_LOCAL, false, false,
   "src/transport/net_ib.cc (RTS): this end's retransmission timer only"},
  {"NCCL_IB_RETRY_CNT", AGREE_LOCAL, false, false,
   "src/transport/net_ib.cc (RTS): this end's retry count only"},
  {"NCCL_IB_SL", AGREE_LOCAL, false, false,
   "src/transport/net_ib.cc: the accepting end takes the connecting end's service level"},
  {"NCCL_IB_TC", AGREE_LOCAL, false, false,
   "src/transport/net_ib.cc: the accepting end takes the connecting end's traffic class"},
  {"NCCL_IB_QPS_PER_CONNECTION", AGREE_LOCAL, false, false,
   "src/transport/net_ib.cc (connect/accept): both ends take the larger of the two counts"},
  {"NCCL_NSOCKS_PERTHREAD", AGREE_LOCAL, false, false,
   "src/transport/net_socket.cc: the connecting end takes the listener's counts from its "
   "handle"},
  {"NCCL_SOCKET_NTHREADS", AGREE_LOCAL, false, false,
   "src/transport/net_socket.cc: as NCCL_NSOCKS_PERTHREAD"},
  {"NCCL_MIN_NCHANNELS", AGREE_LOCAL, false, false,
   "src/init.cc: ranks share their channel counts at init and all take the smallest"},
  {"NCCL_MAX_NCHANNELS", AGREE_LOCAL, false, false, "src/init.cc: as NCCL_MIN_NCHANNELS"},
  {"NCCL_CROSS_NIC", AGREE_LOCAL, false, false,
   "src/init.cc: ranks share their graph search results and take the largest crossNic"},
  {"NCCL_*", AGREE_DIFFERS, false, false,
   "not known to break a job when it differs; a difference between nodes is usually a "
   "mistake"},
};

static bool matches(const char *pattern, const char *name) {
  size_t n = strlen(pattern);
  return pattern[n - 1] == '*' ? !strncmp(name, pattern, n - 1) : !strcmp(name, pattern);
}

const struct agree_entry *agree_lookup(const char *name) {
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
    if (matches(table[i].name, name)) return &table[i];
  return NULL;
}

enum agree_class agree_classify(const char *name) {
  const struct agree_entry *e = agree_lookup(name);
  return e ? e->cls : AGREE_IGNORE;
}

const struct agree_entry *agree_table(size_t *n) {
  *n = sizeof(table) / sizeof(table[0]);
  return table;
}

const char *agree_class_name(enum agree_class cls) {
  switch (cls) {
  case AGREE_IGNORE: return "ignored";
  case AGREE_LOCAL: return "may differ";
  case AGREE_DIFFERS: return "worth a look";
  case AGREE_PER_HOST: return "per node";
  case AGREE_MUST: return "must agree";
  }
  return "?";
}
