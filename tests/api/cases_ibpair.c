/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA pairs that cannot talk, rebuilt from field failures (over
 * softverbs): each side's WARN must name the cause and the fix in one
 * message, and the connection carries on over TCP. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"

static void close_comm(struct side *s, void *comm) {
  if (!comm) return;
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
}

/* Points this side at a fixture host, a shared one or a softverbs peer,
 * found beside the roce-story5 host the suite runs with (both sides stay in
 * one namespace: softverbs carries the traffic over loopback). */
int use_fixture(struct side *s, int role, const char *host) {
  if (s->role != role) return 0;
  const char *root = getenv("NCCL_DIAG_SYSFS_ROOT");
  const char *at = root ? strstr(root, "/roce-story5/") : NULL;
  if (!at) {
    CHECK(0, "NCCL_DIAG_SYSFS_ROOT is not the roce-story5 fixture: %s", root ? root : "unset");
    return -1;
  }
  char base[4096], p[4200];
  snprintf(base, sizeof(base), "%.*s/%s", (int)(at - root), root, host);
  if (access(base, F_OK))
    snprintf(base, sizeof(base), "%.*s/../../softverbs/fixtures/%s", (int)(at - root), root, host);
  snprintf(p, sizeof(p), "%s/sysfs", base);
  setenv("NCCL_DIAG_SYSFS_ROOT", p, 1);
  snprintf(p, sizeof(p), "%s/topo.xml", base);
  setenv("HWLOC_XMLFILE", p, 1);
  return 0;
}

/* Each side its own host name, so messages can be told apart (as root). */
static const char *name_host(struct side *s, const char *recv, const char *send) {
  if (is_root()) private_uts(s->role == ROLE_RECV ? recv : send);
  static char host[64];
  gethostname(host, sizeof(host) - 1);
  return host;
}

/* A fallback pair: the data still moves, over TCP. */
static void tcp_transfer(struct side *s, void *comm) {
  CHECK(log_find(NCCL_LOG_INFO, ": TCP,"), "the connection is not TCP");
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 5) == 0, "transfer over the TCP fallback");
}

/* A rail-optimised fabric (field story 5's host on two nodes, one subnet per
 * rail): the receiver's mlx5_2 meets the sender's mlx5_3. With repair off,
 * both sides name the cross-rail pair and advise NCCL_CROSS_NIC=0, not
 * excluding a rail NIC. */
void case_ib_cross_rail(struct side *s) {
  if (is_root()) private_uts(s->role == ROLE_RECV ? "host-a" : "host-b");
  s->dev = s->role == ROLE_RECV ? 0 : 1;
  setenv("NCCL_IB_MQP_RETRY_CNT", "1", 1); /* RTR never succeeds here: one retry, not a minute */
  setenv("NCCL_DIAG_REPAIR", "off", 1);    /* the diagnosis alone; cases_repair_port.c repairs it */
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *mine = s->role == ROLE_RECV ? "mlx5_2" : "mlx5_3";
  const char *rail = s->role == ROLE_RECV ? "reaches 10.1.3.0/24 through its mlx5_3:1"
                                          : "reaches 10.1.2.0/24 through its mlx5_2:1";
  const char *w = log_find(NCCL_LOG_WARN, "RDMA path from");
  CHECK(w && strstr(w, mine) && strstr(w, rail), "the rail this host has on the peer's subnet: %s",
        w ? w : "none");
  CHECK(w && warn_leads_with(w, "cross-rail pair", 200) && strstr(w, "NCCL_CROSS_NIC=0") &&
          strstr(w, "NCCL_P2P_PXN_LEVEL"),
        "the cause (cross-rail) and the fix (NCCL_CROSS_NIC=0, PXN): %s", w ? w : "none");
  CHECK(w && !strstr(w, "NCCL_IB_HCA=^"), "a rail NIC must not be excluded: %s", w ? w : "none");
  CHECK(w && strstr(w, "at TCP speed"), "the fallback's consequence: %s", w ? w : "none");
  tcp_transfer(s, comm);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* A job template forces NCCL_IB_GID_INDEX=5: right on pod-a (its pod
 * address), empty on pod-b, whose table starts at 6. Both sides name the
 * empty entry on pod-b with pod-b's usable entries, not a RoCE version
 * mismatch, and the fix. */
void case_ib_gid_empty_on_peer(struct side *s) {
  if (use_fixture(s, ROLE_RECV, "roce-pod-a") || use_fixture(s, ROLE_SEND, "roce-pod-b")) return;
  name_host(s, "pod-a", "pod-b");
  setenv("NCCL_IB_GID_INDEX", "5", 1);
  setenv("NCCL_DIAG_REPAIR", "off", 1); /* the diagnosis alone; cases_repair.c repairs it */
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *w = log_find(NCCL_LOG_WARN, "RDMA path from");
  CHECK(w && strstr(w, "NCCL_IB_GID_INDEX=5 is empty on pod-b (") &&
          strstr(w, "usable entries: 6 RoCE v1 10.50.0.22, 7 RoCE v2 10.50.0.22"),
        "the empty entry, on which host, and that host's usable entries: %s", w ? w : "none");
  CHECK(w && strstr(w, "Unset NCCL_IB_GID_INDEX") && strstr(w, "per node"), "the fix: %s",
        w ? w : "none");
  CHECK(w && !strstr(w, "RoCE v1 GID") && !strstr(w, "do not interoperate"),
        "an empty entry is not a RoCE version mismatch: %s", w ? w : "none");
  CHECK(!log_find(NCCL_LOG_INFO, "INIT -> RTR"), "RTR was attempted with an empty GID entry");
  if (s->role == ROLE_SEND) { /* pod-b's init warning, repair off: RTR fails */
    const char *i = log_find(NCCL_LOG_WARN, "points at an empty GID entry");
    CHECK(i && strstr(i, "RTR fails") && !strstr(i, "repairs"), "the init warning: %s",
          i ? i : "none");
  }
  tcp_transfer(s, comm);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* P_Keys on a partitioned InfiniBand fabric (cn-017 and cn-018: index 0
 * holds 0x7fff, a limited member of the default partition; index 1 holds
 * 0x8005, a full member of the job's partition). */
static void pkey_pair(struct side *s, const char *recv_host, const char *send_host,
                      const char *recv_index, const char *send_index) {
  if (use_fixture(s, ROLE_RECV, recv_host) || use_fixture(s, ROLE_SEND, send_host)) return;
  name_host(s, "cn-017", "cn-018");
  setenv("NCCL_IB_PKEY", s->role == ROLE_RECV ? recv_index : send_index, 1);
}

/* Both at the default index 0: two limited members. The init warning and
 * the pair's both name it and advise NCCL_IB_PKEY=1. */
void case_ib_pkey_limited(struct side *s) {
  pkey_pair(s, "ib-pkey", "ib-pkey-b", "0", "0");
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *i = log_find(NCCL_LOG_WARN, "NCCL_IB_PKEY=0 selects 0x7fff");
  CHECK(i && strstr(i, "limited member") && strstr(i, "set NCCL_IB_PKEY=1"),
        "init: the limited key at index 0 and the full one at index 1: %s", i ? i : "none");
  const char *w = log_find(NCCL_LOG_WARN, "RDMA path from");
  CHECK(w && strstr(w, "both limited members") && strstr(w, "0x7fff") && strstr(w, "cn-017 (") &&
          strstr(w, "cn-018 ("),
        "the pair: both limited, both hosts by name and address: %s", w ? w : "none");
  CHECK(w && strstr(w, "Set NCCL_IB_PKEY"), "the fix: %s", w ? w : "none");
  CHECK(!log_find(NCCL_LOG_INFO, "INIT -> RTR"), "RTR was attempted between limited members");
  tcp_transfer(s, comm);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* The job's partition on one node, the default one on the other. */
void case_ib_pkey_mismatch(struct side *s) {
  pkey_pair(s, "ib-pkey", "ib-hdr", "1", "0");
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *w = log_find(NCCL_LOG_WARN, "RDMA path from");
  CHECK(w && strstr(w, "different partitions") && strstr(w, "0x8005") && strstr(w, "0xffff") &&
          strstr(w, "partition 0x0005") && strstr(w, "partition 0x7fff"),
        "both keys and their partitions: %s", w ? w : "none");
  CHECK(w && strstr(w, "Set NCCL_IB_PKEY"), "the fix: %s", w ? w : "none");
  tcp_transfer(s, comm);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* The fix: both at index 1, full members of one partition: RDMA. */
void case_ib_pkey_full(struct side *s) {
  pkey_pair(s, "ib-pkey", "ib-pkey-b", "1", "1");
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(!log_find(NCCL_LOG_WARN, "P_Key"), "no P_Key warning with full members: %s",
        log_find(NCCL_LOG_WARN, "P_Key"));
  const char *l = log_find(NCCL_LOG_INFO, "RESET -> INIT");
  CHECK(l && strstr(l, "pkey_index 1"), "queue pairs use P_Key index 1: %s", l ? l : "none");
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 1 queue pair"), "the connection is RDMA");
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 6) == 0, "transfer over RDMA");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* One node's device cgroup does not pass mlx5_3 through: it offers NCCL 3
 * devices, its peer 4. Both sides say NCCL may hang, with both sets, what
 * the smaller one lacks, and NCCL_IB_HCA set to the common devices; the
 * connection on a device both have stays RDMA. */
void case_ib_device_sets(struct side *s) {
  name_host(s, "host-a", "host-b");
  if (s->role == ROLE_SEND) setenv("SOFTVERBS_OPEN_FAIL", "mlx5_3:EPERM", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *w = log_find(NCCL_LOG_WARN, "NCCL may hang");
  CHECK(w && strstr(w, "host-b (") && strstr(w, "has 3 RDMA devices (mlx5_2,mlx5_4,mlx5_5)") &&
          strstr(w, "host-a (") && strstr(w, "has 4 RDMA devices (mlx5_2,mlx5_3,mlx5_4,mlx5_5)"),
        "both hosts by name and address, with their devices: %s", w ? w : "none");
  CHECK(w && strstr(w, "NCCL_IB_HCA==mlx5_2,mlx5_4,mlx5_5") && strstr(w, "access to mlx5_3"),
        "the fix: the common set, or the missing device's access: %s", w ? w : "none");
  CHECK(log_count(NCCL_LOG_WARN, "NCCL may hang") == 1, "said once per peer");
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 1 queue pair"), "a device both have stays RDMA");
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 8) == 0, "transfer over RDMA");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* One node cannot open any RDMA device: the pair runs over TCP, and both
 * sides say so with the cause's whereabouts. */
void case_ib_peer_without_rdma(struct side *s) {
  name_host(s, "host-a", "host-b");
  if (s->role == ROLE_SEND) setenv("SOFTVERBS_OPEN_FAIL", "*", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *w = s->role == ROLE_RECV ? log_find(NCCL_LOG_WARN, "offers no RDMA device")
                                       : log_find(NCCL_LOG_WARN, "offers RDMA");
  CHECK(w && strstr(w, s->role == ROLE_RECV ? "host-b (" : "host-a (") && strstr(w, "at TCP speed"),
        "the peer by name and address, and the consequence: %s", w ? w : "none");
  const char *h = log_find(NCCL_LOG_WARN, "NCCL may hang");
  CHECK(h && strstr(h, "TCP device") && strstr(h, "RDMA devices"),
        "the device sets differ in kind: %s", h ? h : "none");
  tcp_transfer(s, comm);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* Both ends on one host: two NICs of the same machine (field story 5 ran
 * intra-node). The connection says so; when RTR cannot resolve the other
 * NIC's address, the diagnosis points at this host's neighbour resolution
 * and NCCL_NET_DISABLE_INTRA=1, not at a cross-rail pair. */
static void same_host(struct side *s) {
  setenv("NCCL_IB_HCA", s->role == ROLE_RECV ? "=mlx5_2" : "=mlx5_3", 1);
}

void case_ib_same_host(struct side *s) {
  same_host(s);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *l = log_find(NCCL_LOG_INFO, "RDMA, 1 queue pair");
  CHECK(l && strstr(l, "both ends are NICs of this host") &&
          strstr(l, s->role == ROLE_RECV ? "mlx5_3:1" : "mlx5_2:1"),
        "the connection names both NICs of this host: %s", l ? l : "none");
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 9) == 0, "transfer over RDMA");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

void case_ib_same_host_rtr(struct side *s) {
  same_host(s);
  setenv("SOFTVERBS_FAIL_MODIFY", "RTR:ETIMEDOUT", 1);
  setenv("NCCL_IB_MQP_RETRY_CNT", "1", 1); /* a path that never works: one retry, not a minute */
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *w = log_find(NCCL_LOG_WARN, "RDMA path from");
  CHECK(w && strstr(w, "ETIMEDOUT") &&
          warn_leads_with(w, "both ends are NICs of the same host", 200) &&
          strstr(w, "neighbour") && strstr(w, "NCCL_NET_DISABLE_INTRA=1"),
        "the cause on this host first, and the fix: %s", w ? w : "none");
  CHECK(w && !strstr(w, "ib_write_bw") && !strstr(w, "Likely causes"),
        "no generic causes or commands once the cause is known: %s", w ? w : "none");
  CHECK(w && !strstr(w, "cross-rail"), "two NICs of one host are not a cross-rail pair: %s",
        w ? w : "none");
  tcp_transfer(s, comm);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}
