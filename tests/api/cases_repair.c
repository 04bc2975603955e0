/* SPDX-License-Identifier: Apache-2.0 */
/* Pairs whose configured GIDs cannot reach each other while other GIDs of
 * the same ports can (over softverbs, the roce-pod-a/roce-pod-b fixture:
 * pod-a holds its address at 4/5 (v1/v2) and link-local entries at 0/1,
 * pod-b the same address at 6/7 and 0..5 empty). With NCCL_DIAG_REPAIR=auto
 * on both the connection runs on RDMA over the chosen pair, every byte
 * checked, and each side's WARN names what was broken, the pair, its cost
 * and the fix with the host it is wrong on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"

static int pods(struct side *s, const char *recv_index, const char *send_index) {
  if (use_fixture(s, ROLE_RECV, "roce-pod-a") || use_fixture(s, ROLE_SEND, "roce-pod-b")) return -1;
  if (is_root()) private_uts(s->role == ROLE_RECV ? "pod-a" : "pod-b");
  const char *v = s->role == ROLE_RECV ? recv_index : send_index;
  if (v) setenv("NCCL_IB_GID_INDEX", v, 1);
  return 0;
}

static void finish(struct side *s, void *comm) {
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* The connection ran on RDMA with this side's source GID index and the
 * peer's address, every byte checked, and the WARN has each needle. */
static void repaired(struct side *s, void *comm, int sgid, const char *const *needles) {
  char want[40];
  snprintf(want, sizeof(want), "sgid_index %d,", sgid);
  const char *rtr = log_find(NCCL_LOG_INFO, "INIT -> RTR");
  CHECK(rtr && strstr(rtr, want) && strstr(rtr, "10.50.0.2"), "RTR on the chosen pair (%s): %s",
        want, rtr ? rtr : "none");
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 7) == 0, "transfer over the repaired pair");
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 1 queue pair"), "the connection is not RDMA");
  CHECK(!log_find(NCCL_LOG_INFO, ": TCP,"), "the repaired pair moved to TCP");
  const char *w = log_find(NCCL_LOG_WARN, "Repaired, not moved to TCP");
  for (int i = 0; needles[i]; i++)
    CHECK(w && strstr(w, needles[i]), "the repair WARN names '%s': %s", needles[i], w ? w : "none");
  CHECK(w && strstr(w, "no cost"), "the repair's cost: %s", w ? w : "none");
}

/* A template forces NCCL_IB_GID_INDEX=5 on both: empty on pod-b. pod-b
 * moves to 7 (RoCE v2, the same address family and subnet as pod-a's 5). */
void case_repair_gid_empty(struct side *s) {
  void *comm;
  if (pods(s, "5", "5") || side_open(s) || pair_open(s, &comm)) return;
  static const char *const n[] = {"GID index 5 is empty on pod-b (",
                                  "GID 5 (RoCE v2 10.50.0.21) of pod-a",
                                  "GID 7 (RoCE v2 10.50.0.22) of pod-b",
                                  "NCCL_IB_GID_INDEX=5 is forced on pod-b: set NCCL_IB_GID_INDEX=7 "
                                  "there",
                                  NULL};
  repaired(s, comm, s->role == ROLE_RECV ? 5 : 7, n);
  const char *w = log_find(NCCL_LOG_WARN, "Repaired");
  CHECK(w && !strstr(w, "on pod-a: set"), "pod-a's setting is right there: %s", w ? w : "none");
  if (s->role == ROLE_SEND) { /* pod-b's init warning: repaired, and still to fix */
    const char *i = log_find(NCCL_LOG_WARN, "points at an empty GID entry");
    CHECK(i && strstr(i, "this plugin repairs each pair to GID index 7") &&
            strstr(i, "should still be fixed") && strstr(i, "unset NCCL_IB_GID_INDEX"),
          "the init warning with repair on: %s", i ? i : "none");
  }
  finish(s, comm);
}

/* pod-a forced to its RoCE v1 entry 4, pod-b left automatic (7, v2): the
 * versions do not interoperate; pod-a moves to 5, named as the host whose
 * setting is wrong (forced on one host only). */
void case_repair_roce_version(struct side *s) {
  void *comm;
  if (pods(s, "4", NULL) || side_open(s) || pair_open(s, &comm)) return;
  static const char *const n[] = {"is RoCE v1", "RoCE v2", "GID 5 (RoCE v2 10.50.0.21) of pod-a",
                                  "NCCL_IB_GID_INDEX=4 is forced on pod-a: set "
                                  "NCCL_IB_GID_INDEX=5 there",
                                  NULL};
  repaired(s, comm, s->role == ROLE_RECV ? 5 : 7, n);
  finish(s, comm);
}

/* pod-a forced to its link-local RoCE v2 entry 1. */
void case_repair_link_local(struct side *s) {
  void *comm;
  if (pods(s, "1", NULL) || side_open(s) || pair_open(s, &comm)) return;
  static const char *const n[] = {"GID index 1 of mlx5_0 port 1 on pod-a (", "is link-local",
                                  "GID 5 (RoCE v2 10.50.0.21) of pod-a",
                                  "NCCL_IB_GID_INDEX=1 is forced on pod-a", NULL};
  repaired(s, comm, s->role == ROLE_RECV ? 5 : 7, n);
  finish(s, comm);
}

/* pod-a (the receiver) forced to its empty entry 3, with the flush queue
 * pair of GPU memory receives: the flush connects to itself on the
 * repaired GID, not on the empty one. */
void case_repair_receiver_flush(struct side *s) {
  setenv("NCCL_DIAG_FORCE_FLUSH", "1", 1);
  void *comm;
  if (pods(s, "3", NULL) || side_open(s) || pair_open(s, &comm)) return;
  static const char *const n[] = {"GID index 3 is empty on pod-a (",
                                  "GID 5 (RoCE v2 10.50.0.21) of pod-a",
                                  "NCCL_IB_GID_INDEX=3 is forced on pod-a", NULL};
  repaired(s, comm, s->role == ROLE_RECV ? 5 : 7, n);
  if (s->role == ROLE_RECV)
    CHECK(log_find(NCCL_LOG_INFO, "flush queue pair"), "the receive has its flush queue pair");
  finish(s, comm);
}

/* The pair over TCP as before, with the transfer checked. */
static void fell_back(struct side *s, void *comm) {
  CHECK(log_find(NCCL_LOG_INFO, ": TCP,"), "the connection is not TCP");
  CHECK(!log_find(NCCL_LOG_INFO, "INIT -> RTR"), "RTR was attempted with an empty GID entry");
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 5) == 0, "transfer over the TCP fallback");
  CHECK(!log_find(NCCL_LOG_WARN, "Repaired"), "repaired although not asked to");
}

/* NCCL_DIAG_REPAIR=warn on pod-a: TCP as before, and both sides name the
 * pair that would have worked and which host holds warn. */
void case_repair_warn(struct side *s) {
  if (s->role == ROLE_RECV) setenv("NCCL_DIAG_REPAIR", "warn", 1);
  void *comm;
  if (pods(s, "5", "5") || side_open(s) || pair_open(s, &comm)) return;
  fell_back(s, comm);
  const char *w = log_find(NCCL_LOG_WARN, "would carry it at RDMA speed");
  CHECK(w && strstr(w, "GID 7 (RoCE v2 10.50.0.22) of pod-b") && strstr(w, "warn on pod-a") &&
          strstr(w, "auto on pod-b") && strstr(w, "set NCCL_IB_GID_INDEX=7 there"),
        "the pair that would work, the host with warn, the fix: %s", w ? w : "none");
  finish(s, comm);
}

/* NCCL_DIAG_REPAIR=off on pod-b: its hello carries no alternatives, as an
 * older release's does, so pod-a (auto) cannot repair either: today's
 * behaviour, the diagnosis of the empty entry and TCP, and no word of a
 * repair on either side. */
void case_repair_off_peer(struct side *s) {
  if (s->role == ROLE_SEND) setenv("NCCL_DIAG_REPAIR", "off", 1);
  void *comm;
  if (pods(s, "5", "5") || side_open(s) || pair_open(s, &comm)) return;
  fell_back(s, comm);
  const char *w = log_find(NCCL_LOG_WARN, "RDMA path from");
  CHECK(w && strstr(w, "NCCL_IB_GID_INDEX=5 is empty on pod-b ("), "today's diagnosis: %s",
        w ? w : "none");
  CHECK(!log_find(NCCL_LOG_WARN, "would carry it") && !log_find(NCCL_LOG_WARN, "GID pair"),
        "a peer without alternatives gets no repair words");
  finish(s, comm);
}
