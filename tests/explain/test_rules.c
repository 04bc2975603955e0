/* SPDX-License-Identifier: Apache-2.0 */
/* The rule table: every rule has an id, a signature and a builder; every
 * rule that matches lines has lines it must and must not match here; and
 * small logs run through the whole engine give the finding, confidence and
 * cause the knowledge base promises (the corpus in tests/explain/corpus
 * does the same through the CLI with realistic logs). */
#include <string.h>

#include "tap.h"
#include "tests/explain/test_explain.h"
#include "tools/explain/rules.h"

static void table(void) {
  for (size_t i = 0; i < explain_nrules; i++) {
    const struct rule *r = &explain_rules[i];
    CHECK(r->id && r->id[0] && r->signature && r->signature[0] && r->build, "rule %zu", i);
    for (size_t k = 0; k < i; k++) CHECK(strcmp(explain_rules[k].id, r->id), "%s twice", r->id);
    CHECK(explain_rule(r->id) == r, "lookup %s", r->id);
  }
  CHECK(!explain_rule("no-such-rule"), "unknown id");
}

struct match_case {
  const char *rule, *line;
  bool is_match;
};

/* This plugin's WARN on the end whose port failed, as host h says it. */
#define FO_MOVED_LINE(h)                                                                           \
  h ":1:2 [0] NCCL WARN NET/diag send connection with b (10.0.0.2<41081>, eth0): mlx5_0 port 1 "   \
    "on " h ": the RDMA write of a message completed with IBV_WC_RETRY_EXC_ERR (12): mlx5_0 "      \
    "port 1 went down during the transfer; moved from mlx5_0 port 1 to mlx5_1 port 1, another "    \
    "port of this host on the peer's subnet, the receiver to mlx5_1 port 1 "                       \
    "(NCCL_IB_RESILIENCY_PORT_FAILOVER=1, move 1 of 1): 0 messages in flight had landed, 2 are "   \
    "sent again there"

static const struct match_case matches[] = {
  {"plugin-diagnosis", "h:1:2 [0] NET/diag WARN no usable network device", true},
  {"plugin-diagnosis", "h:1:2 [0] NCCL WARN NET/diag stall: waiting on b pid 7 (1.2.3.4<5>), x",
   false},
  {"wait-for", "h:1:2 [0] NCCL WARN NET/diag stall: waiting on b pid 7 (1.2.3.4<5>), x", true},
  {"wait-for", "h:1:2 [0] NCCL INFO NET/diag stall: waiting on b pid 7 (1.2.3.4<5>), x", false},
  {"slow-link", "h:1:2 [0] NCCL WARN NET/diag slow link: send to b (1.2.3.4<5>, eth0) pid 7 x",
   true},
  {"plugin-diagnosis",
   "h:1:2 [0] NCCL WARN NET/diag slow link: send to b (1.2.3.4<5>, eth0) pid 7 x", false},
  {"slow-link", "h:1:2 [0] NCCL INFO NET/diag slow link: send to b (1.2.3.4<5>) pid 7 runs as",
   false},
  {"plugin-diagnosis", "h:1:2 [0] NCCL INFO NET/diag using [0]lo", false},
  {"port-flap",
   "h:1:2 [0] NCCL WARN NET/diag device mlx5_0 port 1: port error (the link went down: "
   "connections on this port will fail with retry errors)",
   true},
  {"port-flap",
   "h:1:2 [0] NCCL WARN NET/diag device mlx5_0 port 1: port active again after 1.0 s down, x",
   true},
  {"plugin-diagnosis",
   "h:1:2 [0] NCCL WARN NET/diag device mlx5_0 port 1: port active again after 1.0 s down, x",
   false},
  {"port-flap",
   "h:1:2 [0] NCCL WARN NET/diag send connection with b (1.2.3.4<5>, eth0) on mlx5_0 port 1 "
   "(RDMA): ... IBV_WC_RETRY_EXC_ERR (12), ...: the peer's RDMA port (b's mlx5_0) has been down",
   true},
  {"port-flap",
   "h:1:2 [0] NCCL INFO NET/diag device mlx5_0 port 1: port active again after 1.0 s down, x",
   false},
  {"port-flap", FO_MOVED_LINE("a"), false},
  {"port-failover", FO_MOVED_LINE("a"), true},
  {"plugin-diagnosis", FO_MOVED_LINE("a"), false},
  {"port-failover",
   "h:1:2 [0] p2p_resiliency.cc:376 NCCL WARN NET/IB: Device 1 marked as failed. Initiating "
   "recovery? No (send comm=0x5, outstandingRecovery=0)",
   true},
  {"port-failover",
   "h:1:2 [0] p2p_resiliency.cc:64 NCCL WARN NET/IB: The error is fatal (No functional devices "
   "left). Cannot continue.",
   true},
  {"port-failover", "h:1:2 [0] NCCL INFO NET/IB: Device 1 marked as failed", false},
  {"repaired-pair",
   "h:1:2 [0] NET/diag WARN RDMA path from mlx5_0 port 1 to b (10.0.0.7): GID index 5 is empty on b (10.0.0.7), mlx5_0 port 1. Repaired, not moved to TCP: the connection runs on GID 7",
   true},
  {"repaired-pair", "h:1:2 [0] NET/diag WARN no usable network device", false},
  {"plugin-diagnosis",
   "h:1:2 [0] NET/diag WARN RDMA path from mlx5_0 port 1 to b (10.0.0.7): GID index 5 is empty on b (10.0.0.7), mlx5_0 port 1. Repaired, not moved to TCP: the connection runs on GID 7",
   false},
  {"resources",
   "h:1:2 [0] misc/socket.cc:725 NCCL WARN ncclSocketInit: Socket creation failed : Too many open files",
   true},
  {"resources",
   "h:1:2 [3] proxy.cc:1490 NCCL WARN [Service thread] Accept failed Resource temporarily unavailable",
   true},
  {"resources", "h:1:2 [0] NCCL INFO Call to recv returned Resource temporarily unavailable",
   false},
  {"ifname", "h:1:2 [0] bootstrap.cc:63 NCCL WARN Bootstrap : no socket interface found", true},
  {"ifname", "h:1:2 [0] transport/net_ib.cc:159 NCCL WARN NET/IB : No IP interface found.", true},
  {"ifname", "h:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:1.2.3.4<0>", false},
  {"addr-family",
   "h:1:2 [0] misc/socket.cc:484 NCCL WARN ncclSocketInit: connecting to address  with family 59936 is neither AF_INET(2) nor AF_INET6(10)",
   true},
  {"addr-family", "h:1:2 [0] NCCL INFO NCCL_SOCKET_FAMILY set by environment to AF_INET", false},
  {"ib-fallback",
   "h:1:2 [0] transport/net_ib.cc:588 NCCL WARN NET/IB : Unable to open device mlx5_0", true},
  {"ib-fallback", "h:1:2 [0] NCCL INFO NET/IB : No device found.", true},
  {"ib-fallback", "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB", false},
  {"gid-index",
   "h:1:2 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 4471 mtu 5 GID 0 (80FE/7A1B03FEFF9F59BA)", true},
  {"gid-index", "h:1:2 [0] NCCL INFO NET/IB: Dev 0 Port 1 qpn 4471 mtu 5 GID 3 (0/504010AFFFF0000)",
   false},
  {"gid-index", "h:1:2 [0] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.", true},
  {"rtr",
   "h:1:2 [0] misc/ibvwrap.cc:198 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out errno 110",
   true},
  {"rtr", "h:1:2 [0] NET/diag WARN device mlx5_0 qp 0x1: Call to ibv_modify_qp failed with 110",
   false},
  {"async-event",
   "h:1:2 [0] transport/net_ib.cc:199 NCCL WARN NET/IB : mlx5_0:1 Got async error event: port error",
   true},
  {"async-event",
   "h:1:2 [0] transport/net_ib.cc:102 NCCL WARN NET/IB : mlx5_2:1 Got async event : port error",
   true},
  {"async-event", "h:1:2 [0] NCCL INFO NET/IB : mlx5_2:1 Got async event : port active", false},
  {"completion",
   "h:1:2 [0] transport/net_ib.cc:1198 NCCL WARN NET/IB : Got completion from peer 1.2.3.4<5> with error 12, opcode 0, len 0, vendor err 129",
   true},
  {"completion",
   "h:1:2 [0] 1.5 ncclIbTest:33 NCCL TRACE Got completion from peer 1.2.3.4<5> with status=0 opcode=0 len=8 wr_id=1",
   false},
  {"gdr-disabled", "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'",
   true},
  {"gdr-disabled",
   "h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 0 / HCA 3 (distance 6 > 5)", false},
  {"gdr-disabled", "h:1:2 [0] NCCL INFO NET/Socket : GPU Direct RDMA Disabled for HCA 0 'eth0'",
   false},
  {"truncated",
   "h:1:2 [0] transport/net_socket.cc:485 NCCL WARN NET/Socket : peer 1.2.3.4<5> message truncated : receiving 8 bytes instead of 4.",
   true},
  {"truncated", "h:1:2 [0] NCCL INFO truncated nothing", false},
  {"connect",
   "h:1:2 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 1.2.3.4<5> failed : Software caused connection abort",
   true},
  {"connect", "h:1:2 [0] NCCL INFO Connected to proxy localRank 0 -> connection 0x1", false},
  {"closed-by-peer",
   "h:1:2 [0] misc/socket.cc:64 NCCL WARN socketProgress: Connection closed by remote peer node-a<53244>",
   true},
  {"closed-by-peer", "h:1:2 [0] NCCL INFO [Service thread] Connection closed by localRank 1",
   false},
  {"watchdog-timeout",
   "[rank1]:[E1218 20:27:21.433063423 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST)",
   true},
  {"watchdog-timeout", "[rank1]: Watchdog thread started", false},
  {"ras", "  1 job process is considered dead (unreachable via the RAS network)", true},
  {"ras", "  Rank 21 -- GPU 5 managed by process 48213 on node gpu-node-03", true},
  {"ras", "#0-0 (7f21c6a0b3e95d44) MISMATCH", true},
  {"ras", "  Rank 0 has not launched any operations -- GPU 0 managed by process 100 on node a1",
   true},
  {"ras", "  Communicator ranks have different AllReduce operation counts", true},
  /* RAS's own INFO lines and a job summary row are not its report */
  {"ras", "h:1:2 [0] NCCL INFO RAS client listening socket at 127.0.0.1<28028>", false},
  {"ras", "      4          8            1         32       32", false},
  {"ras", "#0 RUNNING", false},
  {"rank-behind",
   "[rank6]:[E703 21:51:54.112142364 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) Rank 6] Received a dump signal due to a collective timeout from  rank 7 and we will try our best to dump the debug info. Last enqueued NCCL work: 56116, last completed NCCL work: 56116.",
   true},
  {"rank-behind",
   "[rank0]:[E709 17:05:38.162895613 ProcessGroupNCCL.cpp:2106] [PG ID 0 PG GUID 0(default_pg) Rank 0] First PG on this rank to signal dumping.",
   false},
  {"flight-recorder", "Not all ranks joining collective, sequence number: 1843", true},
  {"flight-recorder", "Collective sequence number: 212 has errors", true},
  {"flight-recorder", "Input/output mismatch in the collective sequence number: 7", true},
  {"flight-recorder",
   "error msg: Culprit rank 3; Error type: COLLECTIVE_TYPE_MISMATCH, Expected collective type: 'all_reduce' does not match found collective type: 'all_gather'",
   true},
  {"flight-recorder", "missing ranks: {5}", true},
  /* the same words inside NCCL's or PyTorch's own lines are not the analyzer's */
  {"flight-recorder", "Collective sequence number: 212 completed", false},
  {"flight-recorder", "h:1:2 [0] NCCL INFO group info: 0", false},
  {"flight-recorder", "the missing ranks: {5} said nothing", false},
  {"unexplained-warn", "h:1:2 [0] init.cc:1 NCCL WARN Cuda failure 'out of memory'", true},
  {"unexplained-warn",
   "torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled system error", true},
  {"unexplained-warn", "h:1:2 [0] NCCL INFO Init COMPLETE", false},
  {"unexplained-warn", "ncclUnhandledCudaError: Call to CUDA function failed.", true},
  {"unexplained-warn", "[rank0]: ncclRemoteError: A call failed possibly due to a network error",
   true},
  {"unexplained-warn", "the model has an internal error budget", false},
  {"launcher",
   "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 77) of binary: /usr/bin/python",
   true},
  {"launcher", "  exitcode  : -9 (pid: 77)", true},
  {"launcher", "srun: error: node12: task 0: Out Of Memory", true},
  {"launcher",
   "slurmstepd: error: *** JOB 42 ON node3 CANCELLED AT 2024-01-01T00:00:00 DUE TO TIME LIMIT ***",
   true},
  {"launcher",
   "prterun noticed that process rank 5 with PID 9 on node n7 exited on signal 6 (Aborted).", true},
  {"launcher",
   "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR", true},
  {"launcher", "[h:1] [ 2] /usr/lib/x86_64-linux-gnu/libnccl.so.2(+0x2b136)[0x7ff2bf5c3136]", true},
  {"launcher", "srun: job 42 queued and waiting for resources", false},
  {"launcher", "[ 1234.5678] Out of memory: Killed process 4321 (python) total-vm:1000kB", true},
  {"launcher", "    Reason:       OOMKilled", true},
  {"launcher", "slurmstepd: error: *** STEP 4242.0 ON gpu17 CANCELLED AT 2024-05-01T10:00:00 ***",
   true},
  {"launcher", "Primary job  terminated normally, but 1 process returned a non-zero exit code.",
   true},
  {"launcher",
   "torch.distributed.elastic.multiprocessing.api.SignalException: Process 1 got signal: 15", true},
  {"launcher", "  traceback : Signal 9 (SIGKILL) received by PID 1234", true},
  {"launcher",
   "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 1/2 clients joined.",
   true},
  {"launcher",
   "[W socket.cpp:601] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot assign requested address).",
   true},
  {"launcher", "[I socket.cpp:] [c10d] The server socket has started to listen on [::]:29500.",
   false},
  {"launcher",
   "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
   false},
  {"launcher", "INFO:torch.distributed.elastic.agent.server.api:[default] Starting worker group",
   false},
  {"nccl-tests", "# Out of bounds values : 248 FAILED", true},
  {"nccl-tests", "# Out of bounds values : 0 OK", false},
  {"nccl-tests",
   "     1048576        262144     float     sum      -1    51.20   20.48   38.40      3    50.10   20.93   39.24      0",
   true},
  {"nccl-tests",
   "[1,0]<stdout>:     1048576        262144     float     sum      -1    51.20   20.48   38.40      0    50.10   20.93   39.24      0",
   false},
  {"nccl-tests", "#  Rank  0 Group  0 Pid   8756 on     Meowth device  0 [0x01] NVIDIA GeForce",
   false},
  {"shm",
   "h:1:2 [0] misc/shmutils.cc:87 NCCL WARN Error: failed to extend /dev/shm/nccl-AbC to 9637892 bytes, error: No space left on device (28)",
   true},
  {"shm", "h:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct", false},
  {"memlock",
   "h:1:2 [0] misc/ibvwrap.cc:188 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory",
   true},
  {"memlock", "h:1:2 [0] misc/ibvwrap.cc:188 NCCL WARN Call to ibv_reg_mr failed", false},
  {"invalid-rank", "h:1:2 [0] init.cc:1987 NCCL WARN Invalid rank requested : 8/8", true},
  {"invalid-rank", "h:1:2 [0] NCCL INFO comm 0x1 rank 7 nranks 8", false},
  {"transport-mismatch",
   "h:1:2 [0] misc/socket.cc:538 NCCL WARN socketFinalizeAccept from 1.2.3.4<5>: wrong type 4 != 3",
   true},
  {"transport-mismatch", "h:1:2 [0] NCCL INFO type 4", false},
  {"socket-create",
   "h:1:2 [0] include/socket.h:332 NCCL WARN Net : Socket creation failed : Address family not supported by protocol",
   true},
  {"socket-create",
   "h:1:2 [0] include/socket.h:332 NCCL WARN Net : Socket creation failed : Too many open files",
   false},
  {"net-plugin-missing",
   "h:1:2 [0] NCCL INFO NET/Plugin: Could not find: diag libnccl-net-diag.so. Using internal network plugin.",
   true},
  {"net-plugin-missing",
   "h:1:2 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
   false},
  {"ofi", "h:1:2 [0] nccl_ofi_net.c:1 NCCL WARN NET/OFI Couldn't find any optimal provider", true},
  {"ofi", "h:1:2 [0] NCCL INFO NET/OFI Selected Provider is efa", false},
  {"ofi", "h:1:2 [0] NCCL INFO NET/OFI Setting FI_EFA_FORK_SAFE failed, using defaults", false},
  {"cuda",
   "h:1:2 [0] init.cc:904 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000",
   true},
  {"cuda", "Cuda failure 802 'system not yet initialized'", true},
  {"cuda", "h:1:2 [0] misc/cudawrap.cc:33 NCCL WARN Cuda failure 'initialization error'", false},
  {"gid-default",
   "h:1:2 [0] transport/net_ib.cc:1198 NCCL WARN NET/IB : Got completion from peer 1.2.3.4<5> with error 12, opcode 0, len 0, vendor err 129",
   true},
  {"gid-default",
   "h:1:2 [0] transport/net_ib.cc:1198 NCCL WARN NET/IB : Got completion from peer 1.2.3.4<5> with error 5, opcode 0, len 0, vendor err 249",
   false},
};

static void match_table(void) {
  for (size_t i = 0; i < sizeof(matches) / sizeof(matches[0]); i++) {
    const struct match_case *c = &matches[i];
    const struct rule *r = explain_rule(c->rule);
    char buf[512];
    struct rec rec;
    snprintf(buf, sizeof(buf), "%s", c->line);
    explain_parse_line(buf, &rec);
    CHECK(r && r->match && r->match(&rec) == c->is_match, "%s %s: %s", c->rule,
          c->is_match ? "misses" : "matches", c->line);
  }
  for (size_t k = 0; k < explain_nrules; k++) {
    bool has_pos = false, has_neg = false;
    for (size_t i = 0; i < sizeof(matches) / sizeof(matches[0]); i++)
      if (!strcmp(matches[i].rule, explain_rules[k].id))
        has_pos |= matches[i].is_match, has_neg |= !matches[i].is_match;
    CHECK(!explain_rules[k].match || (has_pos && has_neg), "rule %s has no match cases",
          explain_rules[k].id);
  }
}

struct engine_case {
  const char *name;
  const char *logs[3]; /* one string per file */
  const char *rule;    /* NULL: no finding */
  enum confidence conf;
  const char *cause, *fix;
};

#define RTR(err, l, r)                                                                             \
  "x:1:2 [0] misc/ibvwrap.cc:1 NCCL WARN Call to ibv_modify_qp failed with " err                   \
  ", on dev mlx5_1:1, curr state INIT, next state RTR, local GID index 3, local GID " l            \
  ", remote GID " r "\n"
#define USING                                                                                      \
  "x:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE; OOB eth0:10.0.0.1<0>\n"
#define QP0                                                                                        \
  "x:1:2 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 1 mtu 5 GID 3 (0/100000AFFFF0000) fifoRkey=0x1\n"

#define WF(self, pid, tail) self ":" #pid ":1 [0] NCCL WARN NET/diag stall: " tail "\n"

#define SL(self, pid, ends, ratio)                                                                 \
  self                                                                                             \
    ":" #pid ":1 [0] NCCL WARN NET/diag slow link: " ends " moves 36.3 MiB/s while busy, " ratio   \
    "x the median 1.7 GiB/s of its 2 tcp send siblings in this process, for 15 s; its sockets: "   \
    "5903 retransmits in 15 s (4.1 % of its 143980 data segments; siblings' median 2), 0 lost now\n"

#define SL_IB(self, pid, ends)                                                                     \
  self ":" #pid ":1 [0] NCCL WARN NET/diag slow link: " ends                                       \
       " moves 2.5 MiB/s while busy, 0.27x the median 9.1 MiB/s of its 2 ib receive siblings in "  \
       "this process, for 15 s; its port: mlx5_0 port 1 counted 33 ACK timeouts in 15 s; 2 "       \
       "siblings on this port run at their rate, so it is this connection's path\n"

static const struct engine_case engine_cases[] = {
  {"wait-for: a chain of busy ranks ends at the one that does not answer",
   {WF("a", 11, "waiting on b pid 22 (10.0.0.2<1>), which answers and is busy itself, so ...")
      WF("b", 22, "waiting on c pid 33 (10.0.0.3<1>), which answers and is busy itself, so ..."),
    WF("c", 33,
       "waiting on d pid 44 (10.0.0.4<1>), whose process has not answered liveness "
       "checks for 9 s: it is stopped ...")},
   "wait-for",
   CONF_HIGH,
   "root is d pid 44 (10.0.0.4<1>): its process stopped answering",
   "ps -o stat,cmd -p 44"},
  {"wait-for: only some ranks' logs, the chain ends at the last one named",
   {WF("a", 11, "waiting on b pid 22 (10.0.0.2<1>), which answers and is busy itself, so ...")},
   "wait-for",
   CONF_HIGH,
   "ends, as far as these logs show, at b pid 22",
   "add the log of b pid 22"},
  {"wait-for: a rank that took its peer's root names it when the chain leaves the logs",
   {WF("a", 11,
       "the root is pid 44 at 10.0.0.4: it does not answer liveness checks (stopped, "
       "frozen, dead or cut off) (this rank is waiting on b pid 22 (10.0.0.2<1>), which "
       "is busy itself and reports it); here ...")},
   "wait-for",
   CONF_HIGH,
   "root is pid 44 at 10.0.0.4",
   "ps -o stat,cmd -p 44"},
  {"wait-for: a root passed along with an IPv6 address",
   {WF("a", 11,
       "the root is pid 44 at fd00:7::4: it does not answer liveness checks (stopped, "
       "frozen, dead or cut off) (this rank is waiting on b pid 22 ([fd00:7::2]<1>), which "
       "is busy itself and reports it); here ...")},
   "wait-for",
   CONF_HIGH,
   "root is pid 44 at fd00:7::4",
   "ps -o stat,cmd -p 44"},
  {"wait-for: both ends say the other does not answer: the path",
   {WF("a", 11, "waiting on b pid 22 (10.0.0.2<1>), whose process has not answered ..."),
    WF("b", 22, "waiting on a pid 11 (10.0.0.1<1>), whose process has not answered ...")},
   "wait-for",
   CONF_HIGH,
   "network path between",
   "firewall rules"},
  {"wait-for: the idle rank's own line names it, across a busy one",
   {WF("a", 11, "waiting on b pid 22 (10.0.0.2<1>), which answers and is busy itself, so ..."),
    WF("b", 22, "this process (pid 22) is the one its peers wait on: its caller has ...")},
   "wait-for",
   CONF_HIGH,
   "root is b pid 22",
   "py-spy dump --pid 22 on b"},
  {"wait-for: a port that is down, its own process's line names it across the waiters",
   {WF("a", 11,
       "waiting on b pid 22 (10.0.0.2<1>), whose RDMA port is down (for 9 s, as its liveness "
       "answers say): nothing moves ...")
      WF("c", 33, "waiting on b pid 22 (10.0.0.2<2>), which answers and is busy itself, so ..."),
    WF("b", 22,
       "this host's RDMA port mlx5_1 port 1 is down (for 9 s, since its port error event), so "
       "nothing moves on the connection with a pid 11 (10.0.0.1<1>) ...")},
   "wait-for",
   CONF_HIGH,
   "root is RDMA port mlx5_1 port 1 of b pid 22 (10.0.0.2<1>) that is down",
   "bring that link back on b"},
  {"wait-for: a port that is down, as the waiters heard it, without that process's log",
   {WF("a", 11,
       "waiting on b pid 22 (10.0.0.2<1>), whose RDMA port is down (for 9 s, as its liveness "
       "answers say): nothing moves ...")},
   "wait-for",
   CONF_HIGH,
   "root is a network link of b pid 22 (10.0.0.2<1>) that is down: nothing moves",
   "bring that link back on b"},
  {"wait-for: a port that is down, passed along by a busy rank",
   {WF("a", 11,
       "the root is pid 44 at 10.0.0.4: a network link of its process is down (an RDMA port or "
       "an interface), so nothing moves through it (this rank is waiting on b pid 22 "
       "(10.0.0.2<1>), which is busy itself and reports it); here ...")},
   "wait-for",
   CONF_HIGH,
   "root is pid 44 at 10.0.0.4",
   "the port or interface pid 44's log names"},
  {"wait-for: an interface with no carrier, its process's line read across the waiters' paths",
   {WF("a", 11,
       "the path between this host and b pid 22 (10.0.0.2<1>) drops everything: its process "
       "does not answer ...")
      WF("c", 33,
         "the path between this host and b pid 22 (10.0.0.2<2>) drops everything: its process "
         "does not answer ..."),
    WF("b", 22,
       "this host's interface eth0 has no carrier (the link is down: its cable, transceiver or "
       "switch port), so nothing moves on the connection with a pid 11 (10.0.0.1<1>) ...")},
   "wait-for",
   CONF_HIGH,
   "root is interface eth0 of b pid 22 (10.0.0.2<1>) that is down",
   "ip link show eth0, ethtool eth0"},
  {"port-flap: the port's own lines and its peers' retry errors, one finding, port first",
   {"b:22:1 [0] NCCL WARN NET/diag device mlx5_1 port 1: port error (the link went down: "
    "connections on this port will fail with retry errors)\n"
    "b:22:1 [0] NCCL WARN NET/diag device mlx5_1 port 1: port active again after 4.004 s down, "
    "longer than its queue pairs' deadline of 2.1 s (NCCL_IB_TIMEOUT=16, NCCL_IB_RETRY_CNT=7): "
    "no connection of this process on it failed while it was down (...); to ride out flaps this "
    "long set NCCL_IB_TIMEOUT=18 (9 s)\n",
    "a:11:1 [0] NCCL WARN NET/diag send connection with b (10.0.0.2<1>, eth0) on mlx5_0 port 1 "
    "(RDMA): the RDMA write of a message (host memory) completed with IBV_WC_RETRY_EXC_ERR (12), "
    "qp 0x1, vendor_err 0x81: the peer's RDMA port (b's mlx5_1) has been down for 2 s, as its "
    "process's liveness answers say: ...\n"
    "c:33:1 [0] NCCL WARN NET/diag receive connection with b (10.0.0.2<2>, eth0) on mlx5_0 port "
    "1 (RDMA): the sending side ended the connection: the RDMA write of a message (host memory) "
    "completed with IBV_WC_RETRY_EXC_ERR (12), qp 0x2, vendor_err 0x81: mlx5_1 port 1 went down "
    "during the transfer (a port error event; check its netdev eth1 and its link)\n"},
   "port-flap",
   CONF_HIGH,
   "RDMA port mlx5_1 port 1 on b went down while the job ran and came back after 4.0 s, longer "
   "than its queue pairs' deadline of 2.1 s (NCCL_IB_TIMEOUT=16, NCCL_IB_RETRY_CNT=7): the 2 "
   "connection failures named with it (1 retry-exceeded on its peers, 1 on its own host) are its "
   "consequence",
   "set NCCL_IB_TIMEOUT=18 on every rank"},
  {"port-flap: only a peer's retry error, which its liveness answers explained",
   {"a:11:1 [0] NCCL WARN NET/diag send connection with b (10.0.0.2<1>, eth0) on mlx5_0 port 1 "
    "(RDMA): the RDMA write of a message (host memory) completed with IBV_WC_RETRY_EXC_ERR (12), "
    "qp 0x1, vendor_err 0x81: the peer's RDMA port (b's mlx5_1) was down until 3 s ago, as its "
    "process's liveness answers say: ...\n"},
   "port-flap",
   CONF_HIGH,
   "RDMA port of mlx5_1 on b went down while the job ran, as its process told its peers",
   "the link of mlx5_1 on b"},
  {"port-flap: back within the deadline, nothing failed",
   {"b:22:1 [0] NCCL WARN NET/diag device mlx5_0 port 1: port error (the link went down: "
    "connections on this port will fail with retry errors)\n"
    "b:22:1 [0] NCCL WARN NET/diag device mlx5_0 port 1: port active again after 0.996 s down, "
    "within its queue pairs' deadline of 2.1 s (NCCL_IB_TIMEOUT=16, NCCL_IB_RETRY_CNT=7): no "
    "connection of this process on it failed: its connections survived the flap\n"},
   "port-flap",
   CONF_HIGH,
   "came back after 1.0 s, within its queue pairs' deadline of 2.1 s (NCCL_IB_TIMEOUT=16, "
   "NCCL_IB_RETRY_CNT=7): its connections rode it out",
   "the link of mlx5_0 on b"},
  {"port-flap: back within the deadline, its link retrained with lanes down",
   {"b:22:1 [0] NCCL WARN NET/diag device mlx5_0 port 1: port error (the link went down: "
    "connections on this port will fail with retry errors)\n"
    "b:22:1 [0] NCCL WARN NET/diag device mlx5_0 port 1: port active again after 0.996 s down, "
    "within its queue pairs' deadline of 2.1 s (NCCL_IB_TIMEOUT=16, NCCL_IB_RETRY_CNT=7): no "
    "connection of this process on it failed: its connections survived the flap; and it came "
    "back at 200 Gb/sec (2X NDR), below the 400 Gb/sec it linked at when the job started: its "
    "link retrained with lanes down or at a lower speed (...)\n"},
   "port-flap",
   CONF_HIGH,
   "its connections rode it out; its link came back at 200 Gb/sec (2X NDR), below the 400 Gb/sec "
   "it had: every ring and tree through it now moves at that rate",
   "reseat or replace its cable or transceiver"},
  {"slow-link: both ends of one path, one finding naming it",
   {SL("a", 11, "send to b (10.0.0.2<41043>, eth0) pid 22 from a (10.0.0.1<54864>, eth0)", "0.03"),
    SL("b", 22, "receive from a (10.0.0.1<54862>, eth0) pid 11 from b (10.0.0.2<41043>, eth0)",
       "0.02")},
   "slow-link",
   CONF_HIGH,
   "path between 10.0.0.1 and 10.0.0.2 runs well below the other links of the same processes "
   "(down to 0.02x",
   "ip -s link on both interfaces"},
  {"slow-link: only the receiving end's log, which names the path from what the sender measured",
   {"b:22:1 [0] NCCL WARN NET/diag slow link: receive from a (10.0.0.1<54862>, eth0) pid 11 from "
    "b (10.0.0.2<41043>, eth0) moves 1.1 MiB/s while busy, 0.29x the median of its siblings at "
    "the other end, for 20 s; the other end names this path (its send to this host, 0.29x its "
    "siblings there): its messages take four times its siblings' round trip, so a queue builds "
    "on this path (a shaped or congested link, or one at a lower speed); its log has the "
    "counters. Fix: check that path on both hosts\n"},
   "slow-link",
   CONF_HIGH,
   "path between 10.0.0.1 and 10.0.0.2 runs well below the other links of the same processes "
   "(down to 0.29x",
   "ip -s link on both interfaces"},
  {"slow-link: an RDMA path named by both ends (address and port), one finding naming it",
   {SL_IB("a", 11,
          "receive from b (10.0.0.2<41043>, eth0) pid 22 from a (10.0.0.1, mlx5_0 port 1)"),
    SL_IB("b", 22,
          "receive from a (10.0.0.1<54862>, eth0) pid 11 from b (10.0.0.2, mlx5_0 port 1)")},
   "slow-link",
   CONF_HIGH,
   "path between 10.0.0.1 and 10.0.0.2 runs well below the other links of the same processes "
   "(down to 0.27x",
   "PFC on both hosts"},
  {"slow-link: an RDMA port that loses with its connections alike, said twice: one finding",
   {"a:11:1 [0] NCCL WARN NET/diag lossy port: mlx5_0 port 1 on a (10.0.0.1) counted 41 ACK "
    "timeouts in 15 s, 27.0 per 1000 of the 1518 requests its 2 connections completed (send to "
    "b (10.0.0.2<41043>, eth0), receive from b (10.0.0.2<41044>, eth0)), and they run alike\n"
    "a:11:1 [0] NCCL WARN NET/diag lossy port: mlx5_0 port 1 on a (10.0.0.1) counted 50 ACK "
    "timeouts in 20 s, 20.0 per 1000 of the 2500 requests its 2 connections completed (...)\n"},
   "slow-link",
   CONF_HIGH,
   "the RDMA port mlx5_0 port 1 on a (10.0.0.1) lost packets while the job ran (it counted 41 "
   "ACK timeouts)",
   "PFC on that host"},
  {"slow-link: three peers each name their link to one host: one finding names that end",
   {SL("a", 11, "send to c (10.0.0.3<41043>, eth0) pid 33 from a (10.0.0.1<54864>, eth0)", "0.41"),
    SL("b", 22, "send to c (10.0.0.3<41044>, eth0) pid 33 from b (10.0.0.2<54865>, eth0)", "0.38"),
    SL("d", 44, "send to c (10.0.0.3<41045>, eth0) pid 33 from d (10.0.0.4<54866>, eth0)", "0.45")},
   "slow-link",
   CONF_HIGH,
   "3 slow links were named and every one has 10.0.0.3 at one end (to 10.0.0.1, 10.0.0.2, "
   "10.0.0.4; down to 0.38x",
   "on the host at 10.0.0.3: ip -s link and ethtool -S"},
  {"port fail-over: this plugin's move, said by both ends: one finding naming the port and host",
   {FO_MOVED_LINE("a") "\n",
    "b:1:2 [0] NCCL WARN NET/diag receive connection with a (10.0.0.1<5>, eth0): the "
    "connection's port failed (mlx5_0 port 1 on a: mlx5_0 port 1 went down during the "
    "transfer); moved from mlx5_0 port 1 to mlx5_1 port 1, another port of this host on the "
    "peer's subnet, the sender to mlx5_1 port 1 (NCCL_IB_RESILIENCY_PORT_FAILOVER=1, move 1 of "
    "1): 7 receives still waiting are posted again there\n"},
   "port-failover",
   CONF_HIGH,
   "mlx5_0 port 1 on a failed during the job; NCCL_IB_RESILIENCY_PORT_FAILOVER moved its "
   "connections to another port (said on 2 connection ends)",
   "check the link on a"},
  {"port fail-over: NCCL's own, and no port left: the job could not be saved",
   {"c:1:2 [0] p2p_resiliency.cc:376 NCCL WARN NET/IB: Device 1 marked as failed. Initiating "
    "recovery? No (send comm=0x5, outstandingRecovery=0)\n"
    "c:1:2 [0] p2p_resiliency.cc:64 NCCL WARN NET/IB: The error is fatal (No functional devices "
    "left). Cannot continue.\n"},
   "port-failover",
   CONF_HIGH,
   "a port of the virtual NIC on c failed during the job and port fail-over could not save its "
   "connections: no port of the virtual NIC was left",
   "NCCL_IB_RESILIENCY_PORT_RECOVERY=1"},
  {"cross-rail: another local port is on the remote subnet",
   {USING QP0 RTR("110 Connection timed out", "::ffff:10.1.1.1", "::ffff:10.0.0.9")},
   "rtr",
   CONF_HIGH,
   "reaches 10.0.0.0/24 through mlx5_0, not through mlx5_1",
   "NCCL_CROSS_NIC=0"},
  {"cross-subnet: no local port on the remote subnet",
   {USING RTR("110 Connection timed out", "::ffff:10.1.1.1", "::ffff:10.7.0.9")},
   "rtr",
   CONF_MEDIUM,
   "different subnets",
   "NCCL_IB_HCA"},
  {"same subnet: no confident cause",
   {USING RTR("110 Connection timed out", "::ffff:10.1.1.1", "::ffff:10.1.1.9")},
   "rtr",
   CONF_LOW,
   "no confident cause",
   "ip neigh show 10.1.1.9"},
  {"remote link-local",
   {RTR("110 Connection timed out", "::ffff:10.1.1.1", "fe80::1")},
   "rtr",
   CONF_HIGH,
   "is link-local",
   "NCCL_IB_GID_INDEX=-1"},
  {"local link-local is the GID rule's",
   {RTR("110 Connection timed out", "fe80::2", "::ffff:10.1.1.9")},
   "gid-index",
   CONF_MEDIUM,
   "link-local GID fe80::2",
   "NCCL_IB_ADDR_FAMILY"},
  {"remote all-zero GID",
   {RTR("22 Invalid argument", "::ffff:10.1.1.1", "::")},
   "rtr",
   CONF_HIGH,
   "all-zero GID",
   "show_gids"},
  {"retries only, the job was killed",
   {"x:1:2 [0] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_1:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.1.1.1, remote GID ::ffff:10.7.0.9, retrying 4/35 after 400 msec of sleep\n"},
   "rtr",
   CONF_MEDIUM,
   "different subnets",
   "route between"},
  {"version skew names the odd host",
   {"a:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n",
    "b:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n",
    "c:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n"},
   "version-skew",
   CONF_HIGH,
   "c runs a different NCCL version",
   "one NCCL version"},
  {"same version, other CUDA builds: nothing",
   {"a:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n",
    "b:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda11.8\n"},
   NULL,
   CONF_LOW,
   NULL,
   NULL},
  {"one host on loopback alone is a single-node run",
   {"a:1:1 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n"},
   NULL,
   CONF_LOW,
   NULL,
   NULL},
  {"a WARN no rule knows, and nothing else",
   {"a:1:1 [0] x.cc:1 NCCL WARN something new\n"},
   "unexplained-warn",
   CONF_LOW,
   "no confident cause: NCCL warned \"something new\"",
   "nccl-net-diag doctor"},
  {"closed by a peer whose error has a finding: one finding",
   {"a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\na:1:1 [0] x.cc:1 NCCL WARN ncclSocketInit: Socket creation failed : Too many open files\n",
    "b:1:1 [0] x.cc:1 NCCL WARN socketProgress: Connection closed by remote peer 10.0.0.1<55>\n"},
   "resources",
   CONF_HIGH,
   "b only saw the connection closed by a",
   "ulimit -n"},
};

static void run_engine_case(const struct engine_case *c) {
  struct logset ls = {0};
  for (int i = 0; i < 3 && c->logs[i]; i++) {
    char name[16];
    snprintf(name, sizeof(name), "f%d.log", i);
    CHECK(!logset_read_buffer(&ls, name, c->logs[i], strlen(c->logs[i])), "%s: read", c->name);
  }
  logset_finish(&ls);
  struct corr corr;
  struct findings fs;
  CHECK(!explain_analyse(&ls, &corr, &fs), "%s: analyse", c->name);
  if (!c->rule)
    CHECK(fs.n == 0, "%s: %d findings, first %s", c->name, fs.n, fs.n ? fs.v[0]->cause : "");
  else {
    CHECK(fs.n == 1, "%s: %d findings", c->name, fs.n);
    const struct finding *f = fs.n ? fs.v[0] : NULL;
    CHECK(f && !strcmp(f->rule, c->rule) && f->conf == c->conf, "%s: %s/%d", c->name,
          f ? f->rule : "-", f ? (int)f->conf : -1);
    CHECK(f && strstr(f->cause, c->cause), "%s: cause '%s'", c->name, f ? f->cause : "");
    CHECK(f && strstr(f->fix, c->fix), "%s: fix '%s'", c->name, f ? f->fix : "");
  }
  findings_free(&fs);
  corr_free(&corr);
  logset_free(&ls);
}

static void engine(void) {
  for (size_t i = 0; i < sizeof(engine_cases) / sizeof(engine_cases[0]); i++)
    run_engine_case(&engine_cases[i]);
}

static void split(void) {
  struct corr c = {0};
  struct corr_host hosts[4] = {{.name = "a"}, {.name = "b"}, {.name = "c"}, {.name = "d"}};
  c.hosts = hosts, c.nhosts = 4;
  const char *v[4] = {"1", "1", NULL, "2"};
  bool odd[4];
  char buf[256];
  CHECK(corr_split(&c, v, odd, buf, sizeof(buf)) == 2 && !odd[0] && !odd[2] && odd[3],
        "majority: %s", buf);
  CHECK(!strcmp(buf, "1 on a, b; 2 on d"), "text: %s", buf);
  const char *tie[4] = {"1", "2", NULL, NULL};
  CHECK(corr_split(&c, tie, odd, buf, sizeof(buf)) == 2 && !odd[0] && !odd[1],
        "a tie names no odd host");
  const char *same[4] = {"1", "1", "1", NULL};
  CHECK(corr_split(&c, same, odd, buf, sizeof(buf)) == 1, "agreement");
}

/* Each form of a line's time, and what is not one. */
static void timestamps(void) {
  static const struct {
    const char *line;
    enum ts_kind kind;
    double sec; /* seconds into the day */
  } cases[] = {
    {"[2025-03-04 10:00:02] node1:1:9 [0] net.cc:1 NCCL WARN x", TS_DATE, 36002},
    {"[2025-03-04 10:00:02.250] node1:1:9 [0] NCCL WARN x", TS_DATE, 36002.25},
    {"2025-06-02 03:14:07,512 [default0]:a:1:2 [0] NCCL WARN x", TS_DATE, 11647.512},
    {"2025-06-02T03:14:07.5Z a:1:2 [0] NCCL INFO x", TS_DATE, 11647.5},
    {"[rank1]:[E1128 10:41:07.118203874 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog", TS_MONTHDAY,
     38467.118203874},
    {"[09:02:11] gpu7:55:61 [0] NCCL WARN x", TS_CLOCK, 32531},
    {"node1:12:34 [0] NCCL WARN x", TS_NONE, 0},
    {"gpu:10:20:30 [0] NCCL WARN x", TS_NONE, 0}, /* a host:pid:tid is not a time */
    {"NCCL WARN at [10:00:00]", TS_NONE, 0},      /* after NCCL's words: the message's */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    double t = -1;
    enum ts_kind k = log_timestamp(cases[i].line, &t);
    double day = k == TS_NONE ? 0 : t - 86400.0 * (double)(long)(t / 86400);
    CHECK(k == cases[i].kind &&
            (k == TS_NONE || (day - cases[i].sec < 1e-3 && cases[i].sec - day < 1e-3)),
          "%s: kind %d, %.3f s into the day", cases[i].line, (int)k, day);
  }
  double a, b;
  log_timestamp("[2025-02-28 23:59:50] x", &a), log_timestamp("[2025-03-01 00:00:05] x", &b);
  CHECK(b - a > 14.9 && b - a < 15.1, "across midnight and a month's end: %.1f s", b - a);
}

int main(void) {
  TAP_CASE("the rule table: ids, signatures, builders", table);
  TAP_CASE("each rule's lines: what it must and must not match", match_table);
  TAP_CASE("small logs through the engine: finding, confidence, cause, fix", engine);
  TAP_CASE("splitting hosts by a value: majority, tie, agreement", split);
  TAP_CASE("a line's own time: NCCL's, a collector's, PyTorch's, time only", timestamps);
  readers_cases();
  return tap_done();
}
