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

struct ib_dev;
struct ib_setup;

/* What broke the pair NCCL chose. */
enum ib_repair_cause {
  IB_REPAIR_GID,        /* a GID entry: empty, link-local, the other RoCE version */
  IB_REPAIR_CROSS_RAIL, /* the two ports are on different subnets */
  IB_REPAIR_OFF_PLANE,  /* a NIC its host's layout sets apart (a storage NIC) */
  IB_REPAIR_RTR,        /* the pair looked right, and RTR failed on it */
};

/* A pair RTR failed on: never chosen again for the connection. */
#define IB_REPAIR_MAX_TRIES 3
struct ib_repair_tried {
  char dev[2][32];
  int port[2];
  int gid_index[2];
};

/* Where one side of a repaired pair runs (ib_repair_port.c). */
struct ib_repair_end {
  bool is_moved; /* to another port than NCCL's */
  char dev[32];
  int port;
  int mtu;
  int prefix;
  bool has_gdr;
  char netdev[16];
};

struct ib_repair {
  enum ib_repair_cause cause;
  struct ib_repair_end end[2]; /* [0] the sender's, [1] the receiver's */
  bool is_broken;              /* the configured pair cannot reach */
  bool is_found;               /* another pair of the same ports can */
  bool is_applied;             /* both sides repair: the connection runs on it */
  struct hello_alt pick[2];    /* [0] the sender's GID, [1] the receiver's */
  char broken[600];            /* what is wrong, host named */
  char nccl_label[80];         /* "mlx5_2 port 1": this side's port as NCCL chose it */
  struct ib_dev *nccl_dev;     /* and its device */
  int ntried;                  /* pairs RTR failed on (ib_repair_rtr.c) */
  struct ib_repair_tried tried[IB_REPAIR_MAX_TRIES];
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
/* ib_repair_port.c: a pair NCCL chose on two ports that share no subnet
 * (or with a port its host sets apart) while other ports of the two hosts
 * do: the cause in r->broken, and the best such pair in r->pick and r->end.
 * Both hellos must list their ports. */
void ib_repair_port_choose(const struct hello *s, const struct hello *v, struct ib_repair *r);
/* ib_repair_rtr.c: RTR failed on the pair in use (both sides' records say
 * so, so both call it): records that pair as tried and chooses the next
 * one that reaches, the same on both sides. False when none is left, a
 * hello lists no ports, or NCCL_DIAG_REPAIR is not auto on both. mine and
 * peer: the hellos as they came; now_*: as the pair in use has them. */
bool ib_repair_next(struct ib_repair *r, const struct hello *mine, const struct hello *peer,
                    const struct hello *now_mine, const struct hello *now_peer, bool is_send);
/* RTR failed on both sides' records: the setup starts again on the next
 * pair (true), or there is none and it falls back as configured. */
bool ib_setup_repair_rtr(struct ib_setup *s);
/* Whether a pair was tried (ib_repair_port.c skips it). */
bool ib_repair_was_tried(const struct ib_repair *r, const struct hello_port *const p[2],
                         const struct hello_port_gid *const g[2]);
/* The port a hello lists by name, or NULL. */
const struct hello_port *ib_repair_port_of(const struct hello *h, const char *dev, int port);
/* Points a hello's fixed block at the port it moved to. */
void ib_repair_port_apply(const struct ib_repair_end *e, struct hello *h);
/* This host's device for its side of a repaired pair (is_send: the
 * sender's); NULL when it has none by that name. */
struct ib_dev *ib_repair_local_dev(const struct ib_repair *r, bool is_send);
/* ib_repair_report.c: the WARN of a repaired pair (or, with warn, the pair
 * that would have worked), once per pair on each side. */
/* is_up: for an applied repair, whether RDMA came up on the chosen pair. */
/* For the verdict's WARN when the pair falls back or fails: " No other port
 * pair reaches: no RDMA path exists" when both
 * hosts listed their ports and repair was on for both (so the search was
 * made), else "". mine and peer are the hellos as they came. */
void ib_repair_none_words(const struct ib_repair *r, bool is_send, const struct hello *mine,
                          const struct hello *peer, char *out, size_t cap);
void ib_repair_report(const struct ib_repair *r, bool is_send, const char *local_label,
                      const struct hello *mine, const struct hello *peer, const char *peer_desc,
                      bool is_up);

#endif
