/* SPDX-License-Identifier: Apache-2.0 */
/* Repair of a RoCE pair whose configured GIDs cannot reach each other (a
 * forced NCCL_IB_GID_INDEX empty, link-local or of the other RoCE version
 * on one node) while other GIDs of the same two ports can. The choice is a
 * function of the two hellos alone, computed with the sender's first, so
 * both sides reach the same pair with no message before RTR. */
#ifndef DIAG_TRANSPORT_IB_REPAIR_H
#define DIAG_TRANSPORT_IB_REPAIR_H

#include <stdbool.h>

#include "transport/hello.h"

struct ib_repair {
  bool is_broken;           /* the configured pair cannot reach */
  bool is_found;            /* another pair of the same ports can */
  bool is_applied;          /* both sides repair: the connection runs on it */
  struct hello_alt pick[2]; /* [0] the sender's GID, [1] the receiver's */
  char broken[600];         /* what is wrong, host named */
};

/* This side's NCCL_DIAG_REPAIR, as the hello carries it (ib_repair.c). */
void ib_repair_prefs_read(bool *is_offered, int *mode);
/* Fills r from both hellos (send: this side is the sender). */
void ib_repair_choose(const struct hello *mine, const struct hello *peer, bool is_send,
                      struct ib_repair *r);
/* Points the two hellos' GID fields at the chosen pair, so the checks and
 * RTR that follow use it. */
void ib_repair_apply(const struct ib_repair *r, bool is_send, struct hello *mine,
                     struct hello *peer);
/* ib_repair_report.c: the WARN of a repaired pair (or, with warn, the pair
 * that would have worked), once per pair on each side. */
/* is_up: for an applied repair, whether RDMA came up on the chosen pair. */
void ib_repair_report(const struct ib_repair *r, bool is_send, const char *local_label,
                      const struct hello *mine, const struct hello *peer, const char *peer_desc,
                      bool is_up);

#endif
