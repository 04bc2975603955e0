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

/* A fallback pair: the data still moves, over TCP. */
static void tcp_transfer(struct side *s, void *comm) {
  CHECK(log_find(NCCL_LOG_INFO, ": TCP,"), "the connection is not TCP");
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 5) == 0, "transfer over the TCP fallback");
}

/* A rail-optimised fabric (field story 5's host on two nodes, one subnet per
 * rail): the receiver's mlx5_2 meets the sender's mlx5_3. Both sides name the
 * cross-rail pair and advise NCCL_CROSS_NIC=0, not excluding a rail NIC. */
void case_ib_cross_rail(struct side *s) {
  if (is_root()) private_uts(s->role == ROLE_RECV ? "host-a" : "host-b");
  s->dev = s->role == ROLE_RECV ? 0 : 1;
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *mine = s->role == ROLE_RECV ? "mlx5_2" : "mlx5_3";
  const char *rail = s->role == ROLE_RECV ? "reaches 10.1.3.0/24 through its mlx5_3:1"
                                          : "reaches 10.1.2.0/24 through its mlx5_2:1";
  const char *w = log_find(NCCL_LOG_WARN, "RDMA path from");
  CHECK(w && strstr(w, mine) && strstr(w, rail), "the rail this host has on the peer's subnet: %s",
        w ? w : "none");
  CHECK(w && strstr(w, "Cross-rail pair") && strstr(w, "NCCL_CROSS_NIC=0") &&
          strstr(w, "NCCL_P2P_PXN_LEVEL"),
        "the cause (cross-rail) and the fix (NCCL_CROSS_NIC=0, PXN): %s", w ? w : "none");
  CHECK(w && !strstr(w, "NCCL_IB_HCA=^"), "a rail NIC must not be excluded: %s", w ? w : "none");
  CHECK(w && strstr(w, "at TCP speed"), "the fallback's consequence: %s", w ? w : "none");
  tcp_transfer(s, comm);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}
