/* SPDX-License-Identifier: Apache-2.0 */
/* The conformance cases (one function per case, run in each side). */
#ifndef DIAG_TESTS_API_CASES_H
#define DIAG_TESTS_API_CASES_H

#include "harness.h"

void case_init_props(struct side *s);
void case_v11_context(struct side *s);
void case_bad_knobs(struct side *s);
void case_no_device(struct side *s);
void case_handle_bounds(struct side *s);
void case_reload(struct side *s);

void case_sizes(struct side *s);
void case_sizes_64m(struct side *s);
void case_sizes_1g(struct side *s);
void case_capacity(struct side *s);
void case_truncation(struct side *s);
void case_inflight(struct side *s);
void case_close_inflight(struct side *s);
void case_many_comms(struct side *s);
void case_socket_shape(struct side *s);
void case_caller_thread(struct side *s);
void case_default_shape(struct side *s);
void case_idle_wait(struct side *s);
void case_idle_two_comms(struct side *s);
void case_request_written(struct side *s);
void case_misuse(struct side *s);
void case_zero_bytes(struct side *s);
void case_stale_handle(struct side *s);

void case_oversized_sender(struct side *s);
void case_receiver_closes_inflight(struct side *s);
void case_notice_cut_at_sender(struct side *s);
void case_notice_cut_at_receiver(struct side *s);
void case_stall_names_message(struct side *s);
void case_helpers_sleep_for_caller_stripes(struct side *s);
void case_many_comms_cost(struct side *s);

void case_handle_format(struct side *s);
void case_hello_mismatch(struct side *s);
void case_strangers(struct side *s);
void case_bad_handle(struct side *s);
void case_sender_dies(struct side *s);
void case_receiver_dies(struct side *s);
void case_connector_dies(struct side *s);

void case_ifname_grammar(struct side *s);
void case_detour(struct side *s);

void case_offers_loopback(struct side *s);
void case_chosen_loopback(struct side *s);
void case_socket_family_v4(struct side *s);
void case_socket_family_v6(struct side *s);
void case_offers_link_local_v4(struct side *s);
void case_link_local_v6_pair(struct side *s);
void case_connect_causes(struct side *s);
void case_job_ifname(struct side *s);
void case_fd_exhaustion(struct side *s);
void case_size_mismatch_same(struct side *s);
void case_size_mismatch_proto(struct side *s);

void case_mixed_v6_v11(struct side *s);
void case_mixed_v12_v5(struct side *s);
void case_size_limits(struct side *s);
void case_census_at_exit(struct side *s);

void case_ib_failover_second_port(struct side *s);
void case_stripe_both_ports(struct side *s);
void case_stripe_split(struct side *s);
void case_stripe_flush(struct side *s);
void case_stripe_fatal_second(struct side *s);
void case_stripe_peer_unfused(struct side *s);
void case_stripe_port_down(struct side *s);
void case_ib_qp_log(struct side *s);
void case_ib_grouped(struct side *s);
void case_ib_qps(struct side *s);
void case_ib_qps_over(struct side *s);
void case_ib_flush(struct side *s);
void case_story5_fallback(struct side *s);
void case_story5_off(struct side *s);
void case_ib_ll_mismatch(struct side *s);
void case_ib_mtu_mismatch(struct side *s);
void case_ib_retry_exc(struct side *s);
void case_ib_ctrl_cut_header(struct side *s);
void case_ib_ctrl_cut_body(struct side *s);
void case_ib_rem_access(struct side *s);

/* cases_pattern_ib.c: the RDMA data path under NCCL's calling patterns */
void case_ib_done_after_sender_close(struct side *s);
void case_ib_done_after_receiver_close(struct side *s);
void case_ib_tag_waits(struct side *s);
void case_ib_stall_siblings(struct side *s);
void case_ib_qps2_one(struct side *s);
void case_ib_qps4_one(struct side *s);
void case_ib_qps2_split(struct side *s);
void case_ib_qps4_split(struct side *s);
void case_ib_qps4_split_ar(struct side *s);
void case_ib_qps1_ar(struct side *s);
void case_ib_wc_error_nonblocking(struct side *s);

/* cases_ibpair.c: RDMA pairs that cannot talk, named with cause and fix */
void case_ib_cross_rail(struct side *s);
void case_ib_gid_empty_on_peer(struct side *s);
/* cases_repair.c: a broken GID pair repaired to another GID of the same ports */
void case_repair_gid_empty(struct side *s);
void case_repair_roce_version(struct side *s);
void case_repair_link_local(struct side *s);
void case_repair_receiver_flush(struct side *s);
void case_repair_warn(struct side *s);
void case_repair_off_peer(struct side *s);
void case_repair_cross_rail(struct side *s);
void case_repair_storage_nic(struct side *s);
void case_repair_no_rail(struct side *s);
void case_repair_cross_rail_off(struct side *s);
void case_repair_cross_rail_older(struct side *s);
void case_repair_cross_rail_warn(struct side *s);
void case_repair_speed(struct side *s);
void case_repair_rtr(struct side *s);
void case_ib_pkey_limited(struct side *s);
void case_ib_pkey_mismatch(struct side *s);
void case_ib_pkey_full(struct side *s);
void case_ib_device_sets(struct side *s);
void case_ib_peer_without_rdma(struct side *s);
void case_ib_same_host(struct side *s);
void case_ib_same_host_rtr(struct side *s);
/* cases_ibhost.c: what an RDMA host offers NCCL */
void case_ib_pf_vf(struct side *s);
void case_ib_lanes_down(struct side *s);
void case_ib_host_unopenable(struct side *s);
void case_ib_host_no_verbs(struct side *s);
void case_ib_gdr_off(struct side *s);
void case_ib_gdr_on(struct side *s);
/* cases_ibdev.c: what the RDMA device and its host decide */
void case_ib_dmabuf_flush(struct side *s);
void case_ib_dmabuf_flush_off(struct side *s);
void case_ib_dmabuf_cache(struct side *s);
void case_ib_device_fatal(struct side *s);
void case_ib_port_flap(struct side *s);
void case_ib_port_flap_long(struct side *s);
void case_ib_fork_init(struct side *s);
void case_ib_fork_unneeded(struct side *s);
void case_ib_relaxed_ordering(struct side *s);
void case_ib_ece_unsupported(struct side *s);
void case_ib_ece_both(struct side *s);
void case_ib_ece_disjoint(struct side *s);
void case_ib_ece_one(struct side *s);
void case_ib_active_mtu(struct side *s);
void case_ib_sl_tc(struct side *s);
void case_ib_fifo_tc(struct side *s);
void case_ib_rtr_retry_recovers(struct side *s);
void case_ib_rtr_retry_spent(struct side *s);
/* cases_ibwc.c: the fix at failure time */
void case_ib_loc_prot_gpu(struct side *s);
void case_ib_loc_prot_host(struct side *s);
void case_ib_retry_forced_gid(struct side *s);
void case_ib_port_down_before_event(struct side *s);
void case_ib_port_event_after_error(struct side *s);
/* cases_ibdev.c: this process's softverbs event file (SOFTVERBS_PORT_EVENTS) */
const char *events_path(void);
void events_set(const char *words);
void case_ib_mtu_black_hole(struct side *s);
/* cases_msgs.c: what users read leads with the specific cause */
void case_ib_ipv6_only_warns(struct side *s);
/* cases_sockdiag.c, for the same */
void case_forced_link_local_if(struct side *s);
/* cases_pattern_tcp.c: NCCL's call patterns: clean closes, late accepts */
void case_send_done_after_clean_close(struct side *s);
void case_recv_done_after_clean_close(struct side *s);
void case_late_accept_then_another(struct side *s);
void case_late_accepts_many(struct side *s);
void case_accept_25s_late(struct side *s);
void case_listener_host_dies_before_accept(struct side *s);
/* Virtual devices: makeVDevice (tests/api/cases_vdev.c). */
void case_vdev_fuse(struct side *s);
void case_vdev_refused(struct side *s);
void case_vdev_merge_off(struct side *s);
void case_vdev_tcp(struct side *s);
void case_vdev_failover_knob(struct side *s);
/* Port fail-over (tests/api/cases_failover.c). */
void case_ib_failover_moves(struct side *s);
void case_ib_failover_recv_down(struct side *s);
void case_ib_failover_off(struct side *s);
void case_ib_failover_out_send(struct side *s);
void case_ib_failover_out_recv(struct side *s);
void case_ib_failover_out_stays(struct side *s);
void case_ib_failover_out_nowhere(struct side *s);

/* NCCL's profiler: network events (tests/api/cases_prof.c). */
void case_prof_events(struct side *s);
void case_prof_grouped(struct side *s);

/* This side reads another fixture host (a shared one or a softverbs peer). */
int use_fixture(struct side *s, int role, const char *host);

#endif
