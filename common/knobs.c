/* SPDX-License-Identifier: Apache-2.0 */
#include "common/knobs.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"

static const char *const fallback_choices[] = {"auto", "off", NULL};
static const char *const family_choices[] = {"AF_INET", "AF_INET6", NULL};
static const char *const planes_choices[] = {"auto", "off", NULL};
static const char *const repair_choices[] = {"auto", "off", "warn", NULL};

static const struct knob_def knobs[K_COUNT] = {
  [K_SOCKET_IFNAME] =
    {"NCCL_SOCKET_IFNAME", KT_STR, NULL, 0, 0, NULL,
     "interfaces for TCP traffic and for the control connection: a comma list of name prefixes; "
     "'=' before the list makes names exact, '^' excludes them (e.g. bond0, =eth0, ^docker,lo). "
     "Unset: automatic choice, skipping lo, docker, veth and link-local-only interfaces"},
  [K_SOCKET_FAMILY] = {"NCCL_SOCKET_FAMILY", KT_ENUM, NULL, 0, 0, family_choices,
                       "address family of the interfaces to use: AF_INET or AF_INET6. Unset: both"},
  [K_NSOCKS_PERTHREAD] =
    {"NCCL_NSOCKS_PERTHREAD", KT_INT, "-2", -2, 64, NULL,
     "TCP data sockets per helper thread (NCCL's meaning); -2 = automatic (1). "
     "Sockets per connection = NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD, at most 64"},
  [K_SOCKET_NTHREADS] =
    {"NCCL_SOCKET_NTHREADS", KT_INT, "-2", -2, 16, NULL,
     "helper threads per TCP connection (NCCL's meaning: with NCCL_NSOCKS_PERTHREAD it sets the "
     "data sockets per connection, and socket k is served by helper k modulo this); 0 = the "
     "caller's thread moves all data; -2 = automatic (2). The helpers are not the connection's "
     "own: every connection on a device shares at most NCCL_DIAG_SOCKET_POOL of them, so "
     "thousands of connections cost no threads"},
  [K_IB_DISABLE] = {"NCCL_IB_DISABLE", KT_BOOL, "0", 0, 1, NULL,
                    "1 = do not use RDMA at all; every device is a TCP interface"},
  [K_IB_HCA] =
    {"NCCL_IB_HCA", KT_STR, NULL, 0, 0, NULL,
     "RDMA devices and ports to use, NCCL's grammar: name[:port] entries, comma separated; "
     "prefix match unless the list starts with '='; '^' excludes (e.g. =mlx5_2:1,mlx5_3:1, "
     "^mlx5_bond_0)"},
  [K_IB_GID_INDEX] =
    {"NCCL_IB_GID_INDEX", KT_INT, "-1", -1, 1023, NULL,
     "RoCE GID index to use; -1 = automatic (IPv4-mapped RoCE v2, following NCCL_IB_ADDR_FAMILY, "
     "NCCL_IB_ADDR_RANGE and NCCL_IB_ROCE_VERSION_NUM)"},
  [K_IB_ADDR_FAMILY] = {"NCCL_IB_ADDR_FAMILY", KT_ENUM, "AF_INET", 0, 0, family_choices,
                        "address family of the RoCE GID chosen automatically: AF_INET or AF_INET6"},
  [K_IB_ADDR_RANGE] =
    {"NCCL_IB_ADDR_RANGE", KT_STR, NULL, 0, 0, NULL,
     "only choose RoCE GIDs inside this CIDR range (e.g. 10.1.0.0/16 or fd00::/64)"},
  [K_IB_ROCE_VERSION_NUM] = {"NCCL_IB_ROCE_VERSION_NUM", KT_INT, "2", 1, 2, NULL,
                             "RoCE version of the GID chosen automatically: 1 or 2"},
  [K_IB_TIMEOUT] = {"NCCL_IB_TIMEOUT", KT_INT, "20", 1, 31, NULL,
                    "QP local ACK timeout exponent: 4.096 us x 2^value (20 = about 4.3 s per try)"},
  [K_IB_RETRY_CNT] = {"NCCL_IB_RETRY_CNT", KT_INT, "7", 0, 7, NULL,
                      "QP transport retry count before a send completes with RETRY_EXC_ERR"},
  [K_IB_SL] = {"NCCL_IB_SL", KT_INT, "-1", -1, 15, NULL,
               "InfiniBand service level; -1 = the communicator's traffic class, else 0"},
  [K_IB_TC] = {"NCCL_IB_TC", KT_INT, "-1", -1, 255, NULL,
               "RoCE traffic class (GRH); -1 = the communicator's traffic class, else 0"},
  [K_IB_FIFO_TC] = {"NCCL_IB_FIFO_TC", KT_INT, "-1", -1, 255, NULL,
                    "RoCE traffic class of the receiving side's queue pairs, which carry the "
                    "clear-to-send messages (and the acknowledgements); -1 = NCCL_IB_TC's"},
  [K_IB_PKEY] = {"NCCL_IB_PKEY", KT_INT, "0", 0, 65535, NULL,
                 "index into the port's P_Key table (not a P_Key value); RoCE uses index 0"},
  [K_IB_QPS_PER_CONNECTION] =
    {"NCCL_IB_QPS_PER_CONNECTION", KT_INT, "1", 1, 128, NULL,
     "RC queue pairs per connection; requests are spread over them round-robin; at most 32 "
     "here (NCCL's IB transport takes 128): a larger value is used as 32, said once"},
  [K_IB_SPLIT_DATA_ON_QPS] =
    {"NCCL_IB_SPLIT_DATA_ON_QPS", KT_INT, "0", 0, 1, NULL,
     "1 = every message is split over all the connection's queue pairs; 0 = each message goes "
     "on one queue pair, the next message on the next (the sender's setting rules)"},
  [K_IB_ADAPTIVE_ROUTING] =
    {"NCCL_IB_ADAPTIVE_ROUTING", KT_INT, "-2", -2, 1, NULL,
     "1 = the fabric may reorder packets: a message above NCCL_IB_AR_THRESHOLD is written apart "
     "from its completion notice; -2 = on for InfiniBand, off for RoCE"},
  [K_IB_AR_THRESHOLD] =
    {"NCCL_IB_AR_THRESHOLD", KT_INT, "8192", 0, 2147483647, NULL,
     "with adaptive routing, messages above this many bytes are written apart from their "
     "completion notice"},
  [K_IB_PCI_RELAXED_ORDERING] =
    {"NCCL_IB_PCI_RELAXED_ORDERING", KT_INT, "2", 0, 2, NULL,
     "PCIe relaxed ordering on the registrations of NCCL's buffers: 0 = off; 1 or 2 = on where "
     "libibverbs can ask for it (ibv_reg_mr_iova2, rdma-core 28+); a device that refuses it is "
     "used without"},
  [K_IB_MQP_RETRY_CNT] =
    {"NCCL_IB_MQP_RETRY_CNT", KT_INT, "34", 0, 1000, NULL,
     "times a queue pair's RTR that timed out is retried before the connection falls back to "
     "TCP or fails (34 with 100 ms steps: about a minute); 0 = decide at the first timeout"},
  [K_IB_MQP_RETRY_SLEEP_MSEC] = {"NCCL_IB_MQP_RETRY_SLEEP_MSEC", KT_INT, "100", 0, 60000, NULL,
                                 "wait before RTR retry k: k times this many milliseconds"},
  [K_IB_MQP_RETRY_ALL] = {"NCCL_IB_MQP_RETRY_ALL", KT_BOOL, "0", 0, 1, NULL,
                          "1 = retry RTR on any error, not only a timeout (ETIMEDOUT)"},
  [K_IB_ECE_ENABLE] = {"NCCL_IB_ECE_ENABLE", KT_BOOL, "1", 0, 1, NULL,
                       "1 = negotiate enhanced connection establishment options (ibv_query_ece / "
                       "ibv_set_ece) with the peer when both NICs offer them"},
  [K_IB_RETURN_ASYNC_EVENTS] =
    {"NCCL_IB_RETURN_ASYNC_EVENTS", KT_BOOL, "1", 0, 1, NULL,
     "1 = a fatal device, queue pair or completion queue event fails every connection it "
     "affects at its next call; 0 = only logged"},
  [K_GDR_FLUSH_DISABLE] = {"NCCL_GDR_FLUSH_DISABLE", KT_BOOL, "0", 0, 1, NULL,
                           "1 = no flush read after receives into GPU memory (GPUDirect RDMA "
                           "through nvidia_peermem or dma-buf)"},
  [K_IB_MERGE_NICS] =
    {"NCCL_IB_MERGE_NICS", KT_BOOL, "1", 0, 1, NULL,
     "1 = makeVDevice fuses the RDMA ports NCCL groups (the ports of one dual-port NIC) into "
     "one virtual device; 0 = refuse, so NCCL uses each port on its own"},
  [K_IB_RESILIENCY_PORT_FAILOVER] =
    {"NCCL_IB_RESILIENCY_PORT_FAILOVER", KT_BOOL, "0", 0, 1, NULL,
     "1 = a connection whose port fails moves to another port that is up: one of its virtual "
     "NIC (makeVDevice, NCCL_IB_MERGE_NICS) first, else any port NCCL_IB_HCA offers on the "
     "peer's subnet; what landed completes, the rest is sent again there. Set it on every node"},
  [K_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS] =
    {"NCCL_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS", KT_INT, "1", 0, 1000, NULL,
     "how many times one connection may move to another port (counted again from 0 once it "
     "moves back to its first, NCCL_IB_RESILIENCY_PORT_RECOVERY=1); a failure after that fails "
     "it"},
  [K_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY] =
    {"NCCL_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY", KT_INT, "10", 0, 60000, NULL,
     "NCCL waits this many ms before reading the receiver's completion records over a working "
     "port; this plugin asks the receiver on the control connection at once, so it is read and "
     "not used"},
  [K_IB_RESILIENCY_PORT_RECOVERY] =
    {"NCCL_IB_RESILIENCY_PORT_RECOVERY", KT_BOOL, "0", 0, 1, NULL,
     "1 = a connection that moved off a failed port (NCCL_IB_RESILIENCY_PORT_FAILOVER=1) moves "
     "back once the port is active again; 0 = it stays where it moved"},
  [K_IB_RESILIENCY_PORT_RECOVERY_START_DELAY] =
    {"NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY", KT_INT, "200", 0, 3600000, NULL,
     "ms a returned port must stay active before a connection moves back to it"},
  [K_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX] =
    {"NCCL_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX", KT_INT, "5", 0, 1000, NULL,
     "how many times one connection may move back to a returned port; a port that keeps "
     "failing is left after that"},
  [K_DIAG_FALLBACK] =
    {"NCCL_DIAG_FALLBACK", KT_ENUM, "auto", 0, 0, fallback_choices,
     "what a connection does when its RDMA path fails: auto = carry on over TCP and say why; "
     "off = fail the connection with the same diagnosis"},
  [K_DIAG_LOG_FILE] =
    {"NCCL_DIAG_LOG_FILE", KT_STR, NULL, 0, 0, NULL,
     "append JSON-lines events (choices, handshakes, QP transitions, failures, census) to this "
     "file; %h = hostname, %p = pid"},
  [K_DIAG_SYSFS_ROOT] =
    {"NCCL_DIAG_SYSFS_ROOT", KT_STR, "/sys", 0, 0, NULL,
     "where sysfs is read from: another root holds a copy of a host's /sys (to read a host offline)"},
  [K_DIAG_IFADDRS] =
    {"NCCL_DIAG_IFADDRS", KT_STR, "auto", 0, 0, NULL,
     "where interface addresses come from: 'live' (this host), a file of '<if> <state> "
     "<addr>/<prefix>...' lines, or 'auto' (an ifaddrs file beside a copied sysfs root, else live)"},
  [K_DIAG_IBVERBS_LIB] = {"NCCL_DIAG_IBVERBS_LIB", KT_STR, "libibverbs.so.1", 0, 0, NULL,
                          "the verbs library to dlopen (a path, or a name the loader finds); "
                          "when set, the only one tried (NCCL_IBVERBS_LIB and the defaults are "
                          "not)"},
  [K_IBVERBS_LIB] = {"NCCL_IBVERBS_LIB", KT_STR, NULL, 0, 0, NULL,
                     "NCCL's meaning: the verbs library to dlopen first (a path, or a name the "
                     "loader finds); if it does not open, libibverbs.so then libibverbs.so.1"},
  [K_DIAG_CONNECT_TIMEOUT_MS] =
    {"NCCL_DIAG_CONNECT_TIMEOUT_MS", KT_INT, "60000", 100, 3600000, NULL,
     "how long connect keeps trying the listener's addresses before it fails"},
  [K_DIAG_HANDSHAKE_TIMEOUT_MS] =
    {"NCCL_DIAG_HANDSHAKE_TIMEOUT_MS", KT_INT, "20000", 50, 3600000, NULL,
     "how long an incoming connection may take to identify itself before it is refused"},
  [K_DIAG_SOCKET_INLINE] =
    {"NCCL_DIAG_SOCKET_INLINE", KT_INT, "-2", -2, 16777216, NULL,
     "TCP messages up to this size travel on the control socket, moved by the caller's thread "
     "(lowest latency); larger ones are striped over the data sockets. -2 = automatic: "
     "512 KiB when the peer is on this host (loopback), 64 KiB otherwise"},
  [K_DIAG_MIN_CHUNK] = {"NCCL_DIAG_MIN_CHUNK", KT_INT, "131072", 4096, 1073741824, NULL,
                        "smallest piece of a TCP message given to one data socket"},
  [K_DIAG_SPIN_US] =
    {"NCCL_DIAG_SPIN_US", KT_INT, "50", 0, 1000000, NULL,
     "how long test() keeps returning at once (NCCL's proxy spins) before it waits, when this "
     "thread's requests make no progress"},
  [K_DIAG_IDLE_WAIT_US] =
    {"NCCL_DIAG_IDLE_WAIT_US", KT_INT, "200", 0, 100000, NULL,
     "the longest one such wait: test() sleeps on its sockets and on helper threads' completions "
     "instead of spinning, which leaves the CPU to the threads moving data; 0 = always spin"},
  [K_DIAG_FORCE_FLUSH] =
    {"NCCL_DIAG_FORCE_FLUSH", KT_BOOL, "0", 0, 1, NULL,
     "1 = give every RDMA receive connection a flush queue pair even without GPU memory support, "
     "so iflush's RDMA read runs (for testing that path)"},
  [K_DIAG_CALLER_MAX] =
    {"NCCL_DIAG_CALLER_MAX", KT_INT, "-2", -2, 1073741824, NULL,
     "with helper threads, TCP stripes up to this size are still moved by the caller's thread "
     "(a hand-off costs more than they take); larger ones by the helpers. -2 = automatic: "
     "4 MiB when the peer is on this host (loopback), 1 MiB otherwise"},
  [K_DIAG_SOCKET_POOL] =
    {"NCCL_DIAG_SOCKET_POOL", KT_INT, "2", 1, 16, NULL,
     "helper threads per device, shared by every TCP connection on it: they move the large "
     "stripes of all its connections' data sockets, waiting in epoll; a connection uses "
     "min(NCCL_SOCKET_NTHREADS, this) of them. Started with the device's first connection, "
     "stopped with its last"},
  [K_DIAG_STALL_WARN_SEC] =
    {"NCCL_DIAG_STALL_WARN_SEC", KT_INT, "60", 0, 86400, NULL,
     "warn once when a request makes no progress for this many seconds (0 = never)"},
  [K_DIAG_STALL_SEC] =
    {"NCCL_DIAG_STALL_SEC", KT_INT, "20", 0, 3600, NULL,
     "when a connection has requests pending and nothing moved for this many seconds, say once "
     "on that rank whom it waits for (the peer's host, pid and address, and whether that process "
     "answers, posted nothing, or neither end moves bytes), and write a stall event. 0 = never. "
     "The default stays well above the longest quiet gap of a healthy step and below PyTorch's "
     "30 s heartbeat and 10 min collective timeout, and below NCCL_DIAG_PEER_TIMEOUT_SEC"},
  [K_DIAG_SLOW_PERCENT] =
    {"NCCL_DIAG_SLOW_PERCENT", KT_INT, "50", 0, 100, NULL,
     "warn once when a connection moves, while busy, under this percentage of the median rate "
     "of its siblings (same process, transport and direction) over its last four 5 s windows, "
     "and shows why: TCP, 0.5 % or more of its segments retransmitted, lost or received out of "
     "order, or a round trip four times its siblings' (twice under a tenth of their rate); RDMA, "
     "its port's resends or congestion marks four times its siblings' ports', a link rate under "
     "three quarters of theirs, or a sender's writes twice its siblings' time to complete. 0 = "
     "never. Rate alone is not enough: healthy connections of one job spread to a third of "
     "their median"},
  [K_DIAG_PEER_TIMEOUT_SEC] =
    {"NCCL_DIAG_PEER_TIMEOUT_SEC", KT_INT, "120", 0, 86400, NULL,
     "fail every request of a connection with ncclRemoteError when the peer's process has not "
     "answered this plugin's liveness checks for this many seconds (its process stopped, frozen "
     "or gone, its host down, or the network partitioned); a peer that is only slow to reach "
     "its next operation keeps answering and is waited for. 0 = never. The default rides out "
     "link flaps and spanning-tree reconvergence and still fails well before a framework's "
     "collective timeout (PyTorch: 10 minutes); raise it to outlast a switch reboot on TCP"},
  [K_DIAG_HWLOC] =
    {"NCCL_DIAG_HWLOC", KT_BOOL, "1", 0, 1, NULL,
     "1 = read GPUs and CPU locality through hwloc when libhwloc.so.15 is installed (it honours "
     "HWLOC_XMLFILE); 0 = sysfs PCI paths only, as NCCL itself does"},
  [K_DIAG_PLANES] =
    {"NCCL_DIAG_PLANES", KT_ENUM, "auto", 0, 0, planes_choices,
     "auto = set apart RDMA ports on another plane: on the bootstrap interface's subnet while "
     "other ports form an RDMA fabric, far from every GPU while each GPU has a near port, or of "
     "the minority link layer (each is reported with its reason); off = keep every usable port, "
     "as NCCL does"},
  [K_DIAG_REPAIR] =
    {"NCCL_DIAG_REPAIR", KT_ENUM, "auto", 0, 0, repair_choices,
     "what a connection does when the GID pair NCCL chose cannot reach the peer (a forced "
     "NCCL_IB_GID_INDEX empty, link-local or of the other RoCE version on one node; a "
     "cross-rail pair; a NIC on the storage network; an RTR that fails) while another GID, port "
     "or NIC of the two hosts can: auto = carry it there at RDMA speed and say how to fix the "
     "setting; warn = "
     "fall back as before and name the path that would work; off = fall back or fail as before. "
     "Repair needs auto on both nodes"},
  [K_DIAG_REPAIR_PORTS] =
    {"NCCL_DIAG_REPAIR_PORTS", KT_BOOL, "1", 0, 1, NULL,
     "0 = the handshake lists no other port of this host, as releases before it did, so a "
     "repair stays on the ports NCCL chose (for testing a mixed-release job)"},
  [K_DIAG_METRICS] =
    {"NCCL_DIAG_METRICS", KT_STR, NULL, 0, 0, NULL,
     "a directory: every few seconds and when its last connection closes, each process writes "
     "its per-connection figures (bytes, busy time, completions, latency) there as "
     "nccl_diag_<host>_<pid>.prom, in Prometheus' text format, for node_exporter's textfile "
     "collector; unset = no file"},
  [K_DIAG_RUN_STATS] =
    {"NCCL_DIAG_RUN_STATS", KT_BOOL, "1", 0, 1, NULL,
     "1 = keep per-connection figures (bytes, busy time, completion latency) for the end-of-job "
     "summary and NCCL_DIAG_METRICS: a few stores per request, a clock read on one request in "
     "16 and when a connection goes busy or idle; 0 = keep none (the summary and the metrics "
     "file then show zeros)"},
};

struct knob_val {
  int set;
  int64_t ival;
  const char *sval;
  const char *raw;
};

static struct knob_val vals[K_COUNT];
static pthread_mutex_t knob_lock = PTHREAD_MUTEX_INITIALIZER;
static int knobs_loaded;
static atomic_uint generation;

const struct knob_def *knob_def(enum knob_id id) { return &knobs[id]; }

static int parse_int(const char *text, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(text, &end, 0);
  if (errno || end == text) return -1;
  while (*end == ' ' || *end == '\t') end++;
  if (*end) return -1;
  *out = v;
  return 0;
}

int knob_parse(const struct knob_def *k, const char *text, int64_t *out, char *why, int whylen) {
  int64_t v = 0;
  switch (k->type) {
  case KT_INT:
    if (parse_int(text, &v)) {
      snprintf(why, whylen, "not an integer; accepted: %" PRId64 "..%" PRId64, k->min, k->max);
      return -1;
    }
    if (v < k->min || v > k->max) {
      snprintf(why, whylen, "out of range; accepted: %" PRId64 "..%" PRId64, k->min, k->max);
      return -1;
    }
    break;
  case KT_BOOL:
    if (parse_int(text, &v) || (v != 0 && v != 1)) {
      snprintf(why, whylen, "accepted: 0 or 1");
      return -1;
    }
    break;
  case KT_ENUM: {
    int i;
    for (i = 0; k->choices[i]; i++)
      if (!strcasecmp(text, k->choices[i])) break;
    if (!k->choices[i]) {
      int n = snprintf(why, whylen, "accepted:");
      for (int j = 0; k->choices[j] && n < whylen; j++)
        n += snprintf(why + n, whylen - n, "%s %s", j ? "," : "", k->choices[j]);
      return -1;
    }
    v = i;
    break;
  }
  case KT_STR: break;
  }
  if (out) *out = v;
  return 0;
}

static void load_one(enum knob_id id) {
  const struct knob_def *k = &knobs[id];
  struct knob_val *kv = &vals[id];
  const char *env = getenv(k->name);
  memset(kv, 0, sizeof(*kv));
  kv->raw = env;
  /* NCCL ignores empty values and treats them as unset; so do we. */
  const char *text = (env && *env) ? env : k->def;
  kv->ival = k->type == KT_ENUM ? -1 : 0;
  if (!text) return;
  char why[160];
  int64_t v = 0;
  if (knob_parse(k, text, &v, why, sizeof(why)) != 0) {
    char shown[400], why_shown[200];
    WARN("%s=\"%s\" is not valid (%s); using the default %s", k->name,
         log_clean(shown, sizeof(shown), env, strlen(env)),
         log_clean(why_shown, sizeof(why_shown), why, strlen(why)), k->def ? k->def : "(unset)");
    text = k->def;
    if (!text || knob_parse(k, text, &v, why, sizeof(why)) != 0) {
      kv->ival = k->type == KT_ENUM ? -1 : 0;
      return;
    }
    env = NULL;
  }
  kv->ival = v;
  kv->sval = k->type == KT_ENUM ? k->choices[v] : text;
  kv->set = env && *env;
  char shown[400];
  if (kv->set)
    INFO(LOG_ENV, "%s set by environment to %s", k->name,
         log_clean(shown, sizeof(shown), env, strlen(env)));
}

void knob_load(int force) {
  pthread_mutex_lock(&knob_lock);
  if (!knobs_loaded || force) {
    for (int i = 0; i < K_COUNT; i++) load_one((enum knob_id)i);
    knobs_loaded = 1;
    atomic_fetch_add(&generation, 1);
  }
  pthread_mutex_unlock(&knob_lock);
}

unsigned knob_generation(void) { return atomic_load(&generation); }

static const struct knob_val *val(enum knob_id id) {
  if (!knobs_loaded) knob_load(0);
  return &vals[id];
}

int64_t knob_int(enum knob_id id) { return val(id)->ival; }
const char *knob_str(enum knob_id id) { return val(id)->sval; }
int knob_enum(enum knob_id id) { return (int)val(id)->ival; }
int knob_is_set(enum knob_id id) { return val(id)->set; }
const char *knob_raw(enum knob_id id) { return val(id)->raw; }
