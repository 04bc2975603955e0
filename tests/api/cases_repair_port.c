/* SPDX-License-Identifier: Apache-2.0 */
/* Pairs that NCCL's choice of ports breaks while other ports of the two
 * hosts reach (over softverbs between two namespace hosts built from field
 * story 5's rail-optimised host: mlx5_2..5 on one subnet per rail, 10.1.N.x,
 * and mlx5_bond_0 on the main network). With NCCL_DIAG_REPAIR=auto the
 * connection moves to a port that reaches and runs on RDMA there, every
 * byte checked (the memory registrations NCCL makes on the comm after
 * connect land on the device that carries the data); each side's WARN names
 * what was broken, the path, its cost and the fix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

static void hosts(struct side *s) {
  if (is_root()) private_uts(s->role == ROLE_RECV ? "host-a" : "host-b");
  setenv("NCCL_IB_MQP_RETRY_CNT", "1", 1); /* a pair that does not reach: one retry, not a minute */
}

static void finish(struct side *s, void *comm) {
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* RDMA on this side's device dev towards the peer's address, every byte
 * checked, and the repair WARN with each needle. */
static void moved(struct side *s, void *comm, const char *dev, const char *dgid,
                  const char *const *needles) {
  char want[64], path[64];
  snprintf(want, sizeof(want), "device %s qp", dev);
  snprintf(path, sizeof(path), "dgid ::ffff:%s,", dgid);
  const char *rtr = log_find(NCCL_LOG_INFO, path); /* the RTR towards the chosen peer GID */
  CHECK(rtr && strstr(rtr, want) && strstr(rtr, "INIT -> RTR") && strstr(rtr, ": ok"),
        "RTR on %s towards %s: %s", dev, dgid, rtr ? rtr : "none");
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 7) == 0, "transfer over the repaired pair");
  CHECK(xfer_one(s, comm, 8, 8, 50) == 0, "small messages over the repaired pair");
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 1 queue pair"), "the connection is not RDMA");
  CHECK(!log_find(NCCL_LOG_INFO, ": TCP,"), "the repaired pair moved to TCP");
  const char *w = log_find(NCCL_LOG_WARN, "Repaired, not moved to TCP");
  for (int i = 0; needles[i]; i++)
    CHECK(w && strstr(w, needles[i]), "the repair WARN names '%s': %s", needles[i], w ? w : "none");
}

/* NCCL paired host-a's mlx5_2 (rail 2) with host-b's mlx5_3 (rail 3):
 * host-a moves to its mlx5_3, on host-b's rail. */
void case_repair_cross_rail(struct side *s) {
  hosts(s);
  s->dev = s->role == ROLE_RECV ? 0 : 1;
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  static const char *const n[] = {
    "cross-rail pair: NCCL paired mlx5_3 port 1 of host-b (10.1.3.6/24) with mlx5_2 port 1 of "
    "host-a (10.1.2.5/24)",
    "mlx5_3 port 1 GID 3 (RoCE v2 10.1.3.5) of host-a",
    "on host-a another NIC's PCIe path (mlx5_3 instead of NCCL's mlx5_2",
    "NCCL_CROSS_NIC=0",
    "NCCL_P2P_PXN_LEVEL=2",
    NULL};
  moved(s, comm, s->role == ROLE_RECV ? "mlx5_3 port 1" : "mlx5_3 port 1",
        s->role == ROLE_RECV ? "10.1.3.6" : "10.1.3.5", n);
  const char *w = log_find(NCCL_LOG_WARN, "Repaired");
  const char *lead = s->role == ROLE_RECV ? "RDMA path from mlx5_2 port 1 to host-b"
                                          : "RDMA path from mlx5_3 port 1 to host-a";
  CHECK(w && strstr(w, lead), "named by the port NCCL chose: %s", w ? w : "none");
  CHECK(w && !strstr(w, "no cost"), "a move to another NIC has a cost: %s", w ? w : "none");
  finish(s, comm);
}

/* host-a's NCCL_IB_HCA names its storage NIC mlx5_bond_0 (10.0.0.0/24, the
 * main network), and NCCL pairs it with host-b's mlx5_2: host-a moves to
 * its mlx5_2, and the fix excludes the storage NIC on host-a. */
void case_repair_storage_nic(struct side *s) {
  hosts(s);
  if (s->role == ROLE_RECV) setenv("NCCL_IB_HCA", "=mlx5_bond_0,mlx5_2", 1);
  s->dev = s->role == ROLE_RECV ? 1 : 0; /* host-a lists [0]mlx5_2 [1]mlx5_bond_0 */
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  static const char *const n[] = {
    "NCCL paired mlx5_2 port 1 of host-b (10.1.2.6/24) with mlx5_bond_0 port 1 of host-a "
    "(10.0.0.5/24)",
    "mlx5_bond_0 on host-a is a NIC its host's layout sets apart",
    "mlx5_2 port 1 GID 3 (RoCE v2 10.1.2.5) of host-a", "NCCL_IB_HCA=^mlx5_bond_0 on host-a", NULL};
  moved(s, comm, "mlx5_2 port 1", s->role == ROLE_RECV ? "10.1.2.6" : "10.1.2.5", n);
  finish(s, comm);
}

static void over_tcp(struct side *s, void *comm) {
  CHECK(log_find(NCCL_LOG_INFO, ": TCP,"), "the connection is not TCP");
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 5) == 0, "transfer over the TCP fallback");
  CHECK(!log_find(NCCL_LOG_WARN, "Repaired"), "repaired although it should not be");
}

/* TCP with the cross-rail diagnosis, as before any repair. */
static void as_before(struct side *s, void *comm) {
  over_tcp(s, comm);
  const char *w = log_find(NCCL_LOG_WARN, "at TCP speed");
  CHECK(w && strstr(w, "cross-rail pair: NCCL paired") && strstr(w, "NCCL_CROSS_NIC=0"),
        "the cross-rail diagnosis at the fallback: %s", w ? w : "none");
}

/* Each host offers only the NIC NCCL chose (host-a mlx5_2, host-b mlx5_3):
 * no port of one shares a subnet with a port of the other. Both sides say
 * that no RDMA path exists, RTR confirms it, and the pair runs on TCP. */
void case_repair_no_rail(struct side *s) {
  hosts(s);
  setenv("NCCL_IB_HCA", s->role == ROLE_RECV ? "=mlx5_2" : "=mlx5_3", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *w = log_find(NCCL_LOG_INFO, "no RDMA path exists");
  CHECK(w && strstr(w, "cross-rail pair") &&
          strstr(w, "no port of host-b shares a subnet with a "
                    "port of host-a"),
        "no path, both hosts named: %s", w ? w : "none");
  over_tcp(s, comm);
  w = log_find(NCCL_LOG_WARN, "carries on over TCP");
  CHECK(w && strstr(w, "RTR failed"), "RTR confirmed it: %s", w ? w : "none");
  CHECK(w && strstr(w, "No other port pair reaches: no RDMA path exists; this connection"),
        "the fallback's WARN says that no RDMA path exists: %s", w ? w : "none");
  finish(s, comm);
}

/* NCCL_DIAG_REPAIR=off on host-b: today's behaviour (RTR fails, TCP, the
 * cross-rail diagnosis), on both sides. */
void case_repair_cross_rail_off(struct side *s) {
  hosts(s);
  s->dev = s->role == ROLE_RECV ? 0 : 1;
  if (s->role == ROLE_SEND) setenv("NCCL_DIAG_REPAIR", "off", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  as_before(s, comm);
  CHECK(!log_find(NCCL_LOG_WARN, "would carry it"), "repair=off says nothing of a repair");
  CHECK(!log_find(NCCL_LOG_WARN, "no RDMA path exists"),
        "repair=off searched no other pair, so it claims none");
  finish(s, comm);
}

/* host-b as a release that lists no ports (NCCL_DIAG_REPAIR_PORTS=0): no
 * move; the pair behaves as before. */
void case_repair_cross_rail_older(struct side *s) {
  hosts(s);
  s->dev = s->role == ROLE_RECV ? 0 : 1;
  if (s->role == ROLE_SEND) setenv("NCCL_DIAG_REPAIR_PORTS", "0", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  as_before(s, comm);
  CHECK(!log_find(NCCL_LOG_WARN, "no RDMA path exists"),
        "a peer that lists no ports: no other pair searched, none claimed");
  finish(s, comm);
}

/* NCCL_DIAG_REPAIR=warn on host-a: TCP, and both sides name the path that
 * would have worked. */
void case_repair_cross_rail_warn(struct side *s) {
  hosts(s);
  s->dev = s->role == ROLE_RECV ? 0 : 1;
  if (s->role == ROLE_RECV) setenv("NCCL_DIAG_REPAIR", "warn", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  as_before(s, comm);
  const char *w = log_find(NCCL_LOG_WARN, "would carry it at RDMA speed");
  CHECK(w && strstr(w, "mlx5_3 port 1 GID 3 (RoCE v2 10.1.3.5) of host-a") &&
          strstr(w, "warn on host-a"),
        "the path that would work, and the host with warn: %s", w ? w : "none");
  finish(s, comm);
}

/* Both on mlx5_3 (one rail, so the hellos look right), but host-b's xgbe3
 * goes down after init: RTR fails on both sides. Both choose the next pair from the
 * hellos (both move to mlx5_2, the first rail both have) and set up again
 * there: RDMA, every byte checked, and the WARN names the failed pair. */
void case_repair_rtr(struct side *s) {
  hosts(s);
  s->dev = 1;
  void *comm;
  if (side_open(s)) return;
  if (s->role == ROLE_SEND && is_root()) shell("ip link set xgbe3 down"); /* after init */
  if (pair_open(s, &comm)) return;
  static const char *const n[] = {"RTR failed on the pair NCCL chose, mlx5_3 port 1 of",
                                  "mlx5_2 port 1 GID 3 (RoCE v2 10.1.2.5) of host-a",
                                  "mlx5_2 port 1 GID 3 (RoCE v2 10.1.2.6) of host-b",
                                  "find why RTR fails", NULL};
  moved(s, comm, "mlx5_2 port 1", s->role == ROLE_RECV ? "10.1.2.6" : "10.1.2.5", n);
  CHECK(log_find(NCCL_LOG_INFO, "both sides now try mlx5_2 port 1 GID 3"),
        "the move to the next pair is said");
  finish(s, comm);
}
