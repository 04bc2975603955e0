/* SPDX-License-Identifier: Apache-2.0 */
/* api_suite: the conformance suite. Usage:
 *   api_suite [--abi 5..12] [--short] [--netns RECV_NS,SEND_NS] [--case SUBSTR]
 * --short runs the core cases only (for the tables that add little).
 * --verbs real: the RDMA cases run over the system's libibverbs and real
 * devices (tests/rxe), so cases that need softverbs' fixture hosts or its
 * fault hooks, or more memory than a small guest has, are left out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

/* The plugin looks up ncclGetVersion in the process, as it would inside
 * NCCL; tests choose the version each side reports. */
__attribute__((visibility("default"))) int ncclGetVersion(int *version);
int ncclGetVersion(int *version) {
  const char *v = getenv("TEST_NCCL_VERSION");
  if (!v) return 3; /* "no NCCL here" */
  *version = atoi(v);
  return 0;
}

#define TWO .two_sided = 1
#define ROOT .needs_root = 1
#define CORE .core = 1
#define TCP_ONLY .transports = T_TCP
#define IB_ONLY .transports = T_IB
#define NETNS .netns_only = 1
#define ONE_HOST .one_host = 1
#define SOFT_ONLY .soft_only = 1
#define IN_V6_RUN .abi_only = 6
/* Cases that build their own namespace hosts: one table, one placement. */
#define OWN_HOSTS .abi_only = 12, .one_host = 1, .needs_root = 1, .transports = T_TCP

static const struct api_case cases[] = {
  {"init, devices and properties", case_init_props, CORE, .timeout_s = 30},
  {"per-communicator context (v11, v12)", case_v11_context, CORE, .timeout_s = 30},
  {"sizes a table cannot carry are refused, never truncated", case_size_limits, CORE,
   .timeout_s = 30},
  {"closing census at exit, with or without finalize", case_census_at_exit, CORE, .timeout_s = 30},
  {"profiler network events (v10+): one per request, stopped by test()", case_prof_events, TWO,
   CORE, .timeout_s = 60},
  {"v6 table (NCCL 2.14.3) receives from a v11 table (NCCL 2.28.9)", case_mixed_v6_v11, TWO,
   IN_V6_RUN, .timeout_s = 60},
  {"v12 table (NCCL 2.30.7) receives from a v5 table (NCCL 2.12.12)", case_mixed_v12_v5, TWO,
   IN_V6_RUN, .timeout_s = 60},
  {"bad knob values are named", case_bad_knobs, .timeout_s = 30},
  {"no interface matches NCCL_SOCKET_IFNAME", case_no_device, TCP_ONLY, .timeout_s = 30},
  {"listen handle bounds and uniqueness", case_handle_bounds, .timeout_s = 30},
  {"dlclose and reload", case_reload, .timeout_s = 60},
  {"message sizes 0 B to 16 MiB", case_sizes, TWO, CORE, .timeout_s = 120},
  {"message of 64 MiB", case_sizes_64m, TWO, .timeout_s = 120},
  {"message of 1 GiB", case_sizes_1g, TWO, SOFT_ONLY, .timeout_s = 180},
  {"receive capacity larger than the message", case_capacity, TWO, CORE, .timeout_s = 60},
  {"message larger than the receive: ncclInvalidUsage", case_truncation, TWO, .timeout_s = 60},
  {"32 requests in flight, the 33rd refused", case_inflight, TWO, CORE, .timeout_s = 60},
  {"close with requests in flight", case_close_inflight, TWO, .timeout_s = 60},
  {"200 comms driven by 4 threads", case_many_comms, TWO, .timeout_s = 180},
  {"NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD", case_socket_shape, TWO, TCP_ONLY,
   .timeout_s = 60},
  {"no helper threads (NCCL_SOCKET_NTHREADS=0)", case_caller_thread, TWO, TCP_ONLY,
   .timeout_s = 60},
  {"default TCP shape: the caller's share follows where the peer is", case_default_shape, TWO,
   TCP_ONLY, .timeout_s = 60},
  {"test() waits instead of spinning when nothing arrives", case_idle_wait, TWO, TCP_ONLY,
   .timeout_s = 60},
  {"a message for one comm ends a wait in another comm's test()", case_idle_two_comms, TWO,
   TCP_ONLY, .timeout_s = 60},
  {"*request always written; misuse named", case_request_written, TWO, CORE, .timeout_s = 60},
  {"the sender of an oversized message hears the receiver's reason", case_oversized_sender, TWO,
   TCP_ONLY, .timeout_s = 60},
  {"a receiver that closes with data in flight fails the pending send by name",
   case_receiver_closes_inflight, TWO, TCP_ONLY, .timeout_s = 60},
  {"a receiver's notice cut short: no sender call waits, the send names it",
   case_notice_cut_at_sender, TWO, TCP_ONLY, .timeout_s = 60},
  {"a sender's notice cut short: no receiver call waits, its words so far named",
   case_notice_cut_at_receiver, TWO, TCP_ONLY, .timeout_s = 60},
  {"the no-progress warning names the stalled message", case_stall_names_message, TWO, TCP_ONLY,
   .timeout_s = 60},
  {"stripes the caller moves do not wake the helper threads", case_helpers_sleep_for_caller_stripes,
   TWO, TCP_ONLY, .timeout_s = 60},
  {"2,000 comms: shared helpers, descriptors and memory per comm", case_many_comms_cost, TWO,
   TCP_ONLY, .timeout_s = 600},
  {"stale, foreign and wild handles and requests are refused by name", case_misuse, CORE,
   .timeout_s = 60},
  {"0-byte registrations and messages, NULL buffers", case_zero_bytes, CORE, .timeout_s = 60},
  {"a stale handle's connector is told why and fails at once", case_stale_handle, TWO, CORE,
   .timeout_s = 60},
  {"handle format", case_handle_format, .timeout_s = 30},
  {"hosts that differ are named (field story 2)", case_hello_mismatch, TWO, .timeout_s = 60},
  {"strangers on the listening port", case_strangers, TWO, .timeout_s = 60},
  {"handles that are not ours", case_bad_handle, .timeout_s = 30},
  {"sender dies mid-transfer", case_sender_dies, TWO, .timeout_s = 60},
  {"receiver dies mid-transfer", case_receiver_dies, TWO, .timeout_s = 60},
  {"connector dies during setup", case_connector_dies, TWO, .timeout_s = 60},
  {"NCCL_SOCKET_IFNAME grammar and automatic choice", case_ifname_grammar, ROOT, TCP_ONLY,
   .timeout_s = 60},
  {"unreachable candidate address (field story 1)", case_detour, TWO, ROOT, TCP_ONLY,
   .timeout_s = 60},
  {"a listener that offers only its loopback address: both sides say so", case_offers_loopback, TWO,
   OWN_HOSTS, .timeout_s = 60},
  {"NCCL_SOCKET_IFNAME==lo: loopback chosen exactly is said, not warned", case_chosen_loopback, TWO,
   TCP_ONLY, ONE_HOST, .timeout_s = 30},
  {"NCCL_SOCKET_FAMILY=AF_INET on a dual-stack link: only IPv4 is offered and used",
   case_socket_family_v4, TWO, OWN_HOSTS, .timeout_s = 60},
  {"NCCL_SOCKET_FAMILY=AF_INET6 on a dual-stack link: only IPv6 is offered and used",
   case_socket_family_v6, TWO, OWN_HOSTS, .timeout_s = 60},
  {"a listener that offers only 169.254.x.x: it says only its link reaches it",
   case_offers_link_local_v4, TWO, OWN_HOSTS, .timeout_s = 60},
  {"IPv6 link-local only: connected through the local link", case_link_local_v6_pair, TWO,
   OWN_HOSTS, .timeout_s = 60},
  {"each connect failure names its own cause and fix", case_connect_causes, TWO, OWN_HOSTS,
   .timeout_s = 90},
  {"interfaces named differently: one NCCL_SOCKET_IFNAME for every node", case_job_ifname, TWO,
   OWN_HOSTS, .timeout_s = 60},
  {"out of file descriptors: counted, the limit to raise, both sides told", case_fd_exhaustion, TWO,
   OWN_HOSTS, .timeout_s = 90},
  {"message larger than its receive, same settings: the application's calls named",
   case_size_mismatch_same, TWO, IB_ONLY, ONE_HOST, .abi_only = 12, .timeout_s = 60},
  {"message larger than its receive, NCCL_PROTO on one host: the setting named",
   case_size_mismatch_proto, TWO, IB_ONLY, ONE_HOST, .abi_only = 12, .timeout_s = 60},
  {"RDMA connection: every QP transition logged and in the event file", case_ib_qp_log, TWO,
   IB_ONLY, CORE, .timeout_s = 60},
  {"grouped receives (up to maxRecvs), matched by tag", case_ib_grouped, TWO, IB_ONLY,
   .timeout_s = 60},
  {"several queue pairs per connection", case_ib_qps, TWO, IB_ONLY, .timeout_s = 60},
  {"NCCL_IB_QPS_PER_CONNECTION above 32: one WARN, then 32", case_ib_qps_over, TWO, IB_ONLY,
   SOFT_ONLY, .timeout_s = 60},
  {"iflush by RDMA read", case_ib_flush, TWO, IB_ONLY, .timeout_s = 60},
  {"cross-plane pair (field story 5) falls back to TCP", case_story5_fallback, TWO, IB_ONLY, NETNS,
   .timeout_s = 90},
  {"cross-plane pair (field story 5) with fallback off fails cleanly", case_story5_off, TWO,
   IB_ONLY, NETNS, .timeout_s = 90},
  {"InfiniBand against RoCE: named before RTR, then TCP", case_ib_ll_mismatch, TWO, IB_ONLY,
   ONE_HOST, SOFT_ONLY, .timeout_s = 60},
  {"different MTUs: both named, the smaller used", case_ib_mtu_mismatch, TWO, IB_ONLY, ONE_HOST,
   SOFT_ONLY, .timeout_s = 60},
  {"RETRY_EXC_ERR on the first write after RTR: the path named", case_ib_retry_exc, TWO, IB_ONLY,
   ONE_HOST, SOFT_ONLY, .timeout_s = 60},
  {"REM_ACCESS_ERR later on: rkey or registration named", case_ib_rem_access, TWO, IB_ONLY,
   ONE_HOST, SOFT_ONLY, .timeout_s = 60},
  /* cases_pattern_ib.c */
  {"rdma data path: a receive completed before the sender closed is done",
   case_ib_done_after_sender_close, TWO, IB_ONLY, .timeout_s = 60},
  {"rdma data path: a send completed before the receiver closed is done",
   case_ib_done_after_receiver_close, TWO, IB_ONLY, .timeout_s = 60},
  {"rdma data path: a send whose tag no posted receive carries waits", case_ib_tag_waits, TWO,
   IB_ONLY, .timeout_s = 60},
  {"rdma data path: a grouped send's stall names its missing siblings", case_ib_stall_siblings, TWO,
   IB_ONLY, .timeout_s = 60},
  {"rdma data path: 2 queue pairs, 2,400 messages", case_ib_qps2_one, TWO, IB_ONLY,
   .timeout_s = 180},
  {"rdma data path: 4 queue pairs, 2,400 messages", case_ib_qps4_one, TWO, IB_ONLY,
   .timeout_s = 180},
  {"rdma data path: 2 queue pairs, messages split over both", case_ib_qps2_split, TWO, IB_ONLY,
   .timeout_s = 180},
  {"rdma data path: 4 queue pairs, messages split over all", case_ib_qps4_split, TWO, IB_ONLY,
   .timeout_s = 180},
  {"rdma data path: 4 queue pairs, split, adaptive routing", case_ib_qps4_split_ar, TWO, IB_ONLY,
   .timeout_s = 180},
  {"rdma data path: 1 queue pair, adaptive routing", case_ib_qps1_ar, TWO, IB_ONLY,
   .timeout_s = 180},
  {"rdma data path: a completion error holds no call", case_ib_wc_error_nonblocking, TWO, IB_ONLY,
   SOFT_ONLY, .timeout_s = 60},
  /* cases_ibpair.c, cases_ibhost.c, cases_ibwc.c: fixture hosts (P_Key tables, PF and
   * VF, GPUs, peer memory) and injected completion errors that softverbs provides */
  /* cases_ibpair.c */
  {"cross-rail pair, repair off: NCCL_CROSS_NIC=0 advised on both sides, then TCP",
   case_ib_cross_rail, TWO, IB_ONLY, SOFT_ONLY, NETNS, .timeout_s = 90},
  {"forced GID index empty on the peer: named on both sides with its usable entries",
   case_ib_gid_empty_on_peer, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  /* cases_repair.c */
  {"repair: forced GID index empty on one host, RDMA on the right GID", case_repair_gid_empty, TWO,
   IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"repair: RoCE v1 against v2, RDMA on a v2 pair", case_repair_roce_version, TWO, IB_ONLY,
   SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"repair: link-local GID forced on one host, RDMA on its routable GID", case_repair_link_local,
   TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"repair: empty GID index on the receiver, with the flush queue pair", case_repair_receiver_flush,
   TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"repair: NCCL_DIAG_REPAIR=warn falls back and names the pair that works", case_repair_warn, TWO,
   IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"repair: a peer without alternatives (off, or an older release): as before",
   case_repair_off_peer, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  /* cases_repair_port.c */
  {"repair: cross-rail pair, RDMA on a port on the peer's rail", case_repair_cross_rail, TWO,
   IB_ONLY, SOFT_ONLY, NETNS, .timeout_s = 90},
  {"repair: a storage NIC paired with a rail, RDMA on the rail NIC", case_repair_storage_nic, TWO,
   IB_ONLY, SOFT_ONLY, NETNS, .timeout_s = 90},
  {"repair: no port on the peer's rail: no RDMA path, named, then TCP", case_repair_no_rail, TWO,
   IB_ONLY, SOFT_ONLY, NETNS, .timeout_s = 90},
  {"repair: cross-rail pair with NCCL_DIAG_REPAIR=off on one host: as before",
   case_repair_cross_rail_off, TWO, IB_ONLY, SOFT_ONLY, NETNS, .timeout_s = 90},
  {"repair: cross-rail pair with a peer that lists no ports: as before",
   case_repair_cross_rail_older, TWO, IB_ONLY, SOFT_ONLY, NETNS, .timeout_s = 90},
  {"repair: cross-rail pair with NCCL_DIAG_REPAIR=warn: TCP, the path named",
   case_repair_cross_rail_warn, TWO, IB_ONLY, SOFT_ONLY, NETNS, .timeout_s = 90},
  {"repair: a repaired pair's speed against a healthy one, in one run", case_repair_speed, TWO,
   IB_ONLY, SOFT_ONLY, NETNS, .timeout_s = 180},
  {"repair at RTR: the pair looks right and RTR fails, RDMA on the next pair", case_repair_rtr, TWO,
   IB_ONLY, SOFT_ONLY, NETNS, .timeout_s = 90},
  {"P_Key: two limited members named, NCCL_IB_PKEY advised", case_ib_pkey_limited, TWO, IB_ONLY,
   SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"P_Key: two partitions named", case_ib_pkey_mismatch, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST,
   .timeout_s = 60},
  {"makeVDevice makes a TCP interface alone a virtual device, quietly", case_vdev_tcp, TCP_ONLY,
   CORE, .timeout_s = 30},
  {"profiler events of a grouped receive: one per buffer, under its handle", case_prof_grouped, TWO,
   IB_ONLY, .timeout_s = 60},
  {"makeVDevice fuses the two ports of one card; data moves over the new device", case_vdev_fuse,
   TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"makeVDevice refuses what NCCL's IB transport refuses", case_vdev_refused, IB_ONLY, SOFT_ONLY,
   ONE_HOST, .timeout_s = 30},
  {"NCCL_IB_MERGE_NICS=0: makeVDevice refuses, quietly", case_vdev_merge_off, IB_ONLY, SOFT_ONLY,
   ONE_HOST, .timeout_s = 30},
  {"NCCL_IB_RESILIENCY_PORT_FAILOVER=1: said on a single port and on a virtual device",
   case_vdev_failover_knob, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"striping: a fused NIC cuts each message over both ports, both directions, grouped too",
   case_stripe_both_ports, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 120},
  {"striping: NCCL_IB_SPLIT_DATA_ON_QPS=1 over 2 queue pairs per port", case_stripe_split, TWO,
   IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 120},
  {"striping: a fatal event on the second port fails the striped connection, naming it",
   case_stripe_fatal_second, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"striping: the flush reads through each port of a striped receiver", case_stripe_flush, TWO,
   IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"striping: a peer that does not stripe keeps the connection on one port",
   case_stripe_peer_unfused, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 120},
  {"striping: a member port down mid-stream fails the connection naming the port",
   case_stripe_port_down, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 90},
  {"port fail-over: a port down mid-transfer, the connection moves, every message arrives once",
   case_ib_failover_moves, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 90},
  {"port fail-over: the receiver's port down, the writes in flight are sent again",
   case_ib_failover_recv_down, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 90},
  {"port fail-over: a striped connection's second port down (sender), it carries on over the "
   "first",
   case_ib_failover_second_port, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 90},
  {"control connection: a message cut in its header holds no call, fails the connection in 1 s",
   case_ib_ctrl_cut_header, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"control connection: a message cut in its body holds no call, fails the connection in 1 s",
   case_ib_ctrl_cut_body, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"port fail-over beyond a virtual NIC: the sender's single port down, both ends move to the "
   "other subnet's ports and back when it returns",
   case_ib_failover_out_send, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 90},
  {"port fail-over beyond a virtual NIC: the receiver's single port down, both ends move to "
   "the other subnet's ports and back when it returns",
   case_ib_failover_out_recv, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 90},
  {"port fail-over beyond a virtual NIC, port recovery off: the connection stays on the other "
   "port when its own returns, the setting named",
   case_ib_failover_out_stays, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 90},
  {"port fail-over beyond a virtual NIC: the host's other port down too, the failure says why "
   "it did not move",
   case_ib_failover_out_nowhere, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 90},
  {"port fail-over off: a port down mid-transfer fails the connection, the setting advised",
   case_ib_failover_off, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 90},
  {"P_Key: full members of one partition connect over RDMA", case_ib_pkey_full, TWO, IB_ONLY,
   SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"nodes with different device sets: both sides say NCCL may hang, with the fix",
   case_ib_device_sets, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"a peer without RDMA: the pair runs at TCP speed, both sides say so", case_ib_peer_without_rdma,
   TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"both ends on one host: said on the connection", case_ib_same_host, TWO, IB_ONLY, SOFT_ONLY,
   ONE_HOST, .timeout_s = 60},
  {"both ends on one host, RTR times out: neighbour resolution and NCCL_NET_DISABLE_INTRA=1",
   case_ib_same_host_rtr, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  /* cases_ibhost.c */
  {"PF and VF of one port: never numbered as two ports of one NIC, named once", case_ib_pf_vf,
   IB_ONLY, SOFT_ONLY, .timeout_s = 30},
  {"a port whose link lost half its lanes: offered at its speed, named once with the fix",
   case_ib_lanes_down, IB_ONLY, SOFT_ONLY, .timeout_s = 30},
  {"RDMA ports that cannot be opened: one WARN, then TCP", case_ib_host_unopenable, IB_ONLY,
   SOFT_ONLY, .timeout_s = 30},
  {"no libibverbs: one WARN, then TCP", case_ib_host_no_verbs, IB_ONLY, SOFT_ONLY, .timeout_s = 30},
  {"GPUDirect RDMA off on a GPU host: what was probed, once", case_ib_gdr_off, TWO, IB_ONLY,
   SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"GPUDirect RDMA on with nvidia_peermem: GPU memory offered, nothing said", case_ib_gdr_on,
   IB_ONLY, SOFT_ONLY, .timeout_s = 30},
  /* cases_ibdev.c */
  {"GPUDirect RDMA through dma-buf only: a receive is flushed", case_ib_dmabuf_flush, TWO, IB_ONLY,
   SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"dma-buf only with NCCL_GDR_FLUSH_DISABLE=1: no flush", case_ib_dmabuf_flush_off, TWO, IB_ONLY,
   SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"regMrDmaBuf of one GPU buffer again: pinned once, as host memory", case_ib_dmabuf_cache, TWO,
   IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"fatal device event: the next call fails on both sides, device and port named",
   case_ib_device_fatal, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"port flap, and a fatal event with NCCL_IB_RETURN_ASYNC_EVENTS=0: said, connections go on",
   case_ib_port_flap, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"port flap longer than the queue pairs' deadline: said with the timeout that rides it out",
   case_ib_port_flap_long, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"kernel without copy-on-fork: ibv_fork_init at init", case_ib_fork_init, IB_ONLY, SOFT_ONLY,
   .timeout_s = 30},
  {"kernel with copy-on-fork: no ibv_fork_init", case_ib_fork_unneeded, IB_ONLY, SOFT_ONLY,
   .timeout_s = 30},
  {"PCIe relaxed ordering: asked for, dropped once where refused, off with 0",
   case_ib_relaxed_ordering, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"ECE on, devices without it: RDMA, nothing said", case_ib_ece_unsupported, TWO, IB_ONLY,
   SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"ECE on both NICs: the acceptor takes the offer, the connector what it settled on",
   case_ib_ece_both, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"ECE on both NICs, no option in common: the connector takes the empty settled set",
   case_ib_ece_disjoint, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"ECE on one NIC only: nothing set", case_ib_ece_one, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST,
   .timeout_s = 60},
  {"InfiniBand: the port's active MTU from verbs, the smaller of both used", case_ib_active_mtu,
   TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"NCCL_IB_SL and NCCL_IB_TC of the connecting side on both sides' queue pairs", case_ib_sl_tc,
   TWO, IB_ONLY, .timeout_s = 60},
  {"NCCL_IB_FIFO_TC on the receiving side's queue pairs", case_ib_fifo_tc, TWO, IB_ONLY,
   .timeout_s = 60},
  {"RTR timing out three times: named at once, retried as NCCL does, then RDMA",
   case_ib_rtr_retry_recovers, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"RTR always timing out: named within a second, TCP only when the retries are spent",
   case_ib_rtr_retry_spent, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  /* cases_ibwc.c */
  {"LOC_PROT_ERR on GPU memory: PCIe ACS, confirmed with NCCL_NET_GDR_LEVEL", case_ib_loc_prot_gpu,
   TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"LOC_PROT_ERR on host memory: the registration", case_ib_loc_prot_host, TWO, IB_ONLY, SOFT_ONLY,
   ONE_HOST, .timeout_s = 60},
  {"RETRY_EXC_ERR with NCCL_IB_GID_INDEX forced: the GID index advice again",
   case_ib_retry_forced_gid, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"a port down mid-transfer, its event not yet read: the failure names the port",
   case_ib_port_down_before_event, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"a completion error, then its port's event: the failure names the port",
   case_ib_port_event_after_error, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  {"a path-MTU black hole: short messages pass, a large one never arrives; named with the MTU",
   case_ib_mtu_black_hole, TWO, IB_ONLY, SOFT_ONLY, ONE_HOST, .timeout_s = 60},
  /* cases_msgs.c */
  {"ports up, no usable GID (all-IPv6 RoCE): one WARN with the port, cause and fix",
   case_ib_ipv6_only_warns, IB_ONLY, SOFT_ONLY, .timeout_s = 30},
  {"NCCL_SOCKET_IFNAME on a link-local interface: both sides lead with it, eth0 named",
   case_forced_link_local_if, TWO, OWN_HOSTS, .timeout_s = 60},
  /* cases_pattern_tcp.c */
  {"a send delivered before the receiver's clean close completes", case_send_done_after_clean_close,
   TWO, .timeout_s = 60},
  {"a receive that arrived before the sender's clean close completes",
   case_recv_done_after_clean_close, TWO, .timeout_s = 60},
  {"accept 300 ms after connect, then another pair on the same listen comm",
   case_late_accept_then_another, TWO, .timeout_s = 60},
  {"8 connects accepted 300-600 ms late on one listen comm pair correctly", case_late_accepts_many,
   TWO, .timeout_s = 90},
  {"an accept 25 s after connect still connects", case_accept_25s_late, TWO, TCP_ONLY, ONE_HOST,
   .abi_only = 11, .timeout_s = 60},
  {"the listener's host goes silent before its accept: the connector ends, naming it",
   case_listener_host_dies_before_accept, TWO, TCP_ONLY, NETNS, ROOT, .abi_only = 11,
   .timeout_s = 60},
};

int main(int argc, char **argv) {
  int short_run = 0;
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--abi") && i + 1 < argc) abi_version = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--short")) short_run = 1;
    else if (!strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--transport") && i + 1 < argc)
      transport_ib = !strcmp(argv[++i], "ib");
    else if (!strcmp(argv[i], "--verbs") && i + 1 < argc) real_verbs = !strcmp(argv[++i], "real");
    else if (!strcmp(argv[i], "--env") && i + 1 < argc) {
      side_env_add(ROLE_RECV, argv[i + 1]);
      side_env_add(ROLE_SEND, argv[++i]);
    } else if (!strcmp(argv[i], "--env-recv") && i + 1 < argc) side_env_add(ROLE_RECV, argv[++i]);
    else if (!strcmp(argv[i], "--env-send") && i + 1 < argc) side_env_add(ROLE_SEND, argv[++i]);
    else if (!strcmp(argv[i], "--netns") && i + 1 < argc) {
      static char buf[256];
      snprintf(buf, sizeof(buf), "%s", argv[++i]);
      char *comma = strchr(buf, ',');
      if (!comma) return 2;
      *comma = 0;
      netns_recv = buf;
      netns_send = comma + 1;
    } else {
      fprintf(stderr,
              "usage: %s [--abi 5..12] [--short] [--transport tcp|ib] [--verbs soft|real]\n"
              "       [--netns RECV,SEND]\n"
              "       [--env K=V] [--env-recv K=V] [--env-send K=V] [--case TEXT]\n",
              argv[0]);
      return 2;
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  tap_diag("ABI v%d, %s, %s placement", abi_version,
           !transport_ib ? "TCP"
           : real_verbs  ? "RDMA (the system's libibverbs)"
                         : "RDMA (softverbs)",
           netns_recv ? "two network namespace hosts" : "one host (loopback)");
  warn_stats_begin();
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const struct api_case *c = &cases[i];
    char name[200];
    snprintf(name, sizeof(name), "v%d%s%s: %s", abi_version, transport_ib ? " ib" : "",
             netns_recv ? " netns" : "", c->name);
    if (only && !strstr(c->name, only)) continue;
    if (short_run && !c->core) continue;
    if (netns_recv && !c->two_sided) continue; /* single-process cases do not depend on placement */
    int want = transport_ib ? T_IB : T_TCP;
    if (c->transports && !(c->transports & want)) continue;
    if (c->netns_only && !netns_recv) continue;
    if (c->one_host && netns_recv) continue;
    if (c->soft_only && real_verbs) continue;
    if (c->abi_only && c->abi_only != abi_version) continue;
    if (c->needs_root && !is_root()) {
      tap_skip(name, "needs root");
      continue;
    }
    tap_begin();
    if (run_case(c)) tap_case_failed = 1;
    tap_end(name);
  }
  warn_stats_print();
  return tap_done();
}
