/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA setup of one connection: a non-blocking state machine on the
 * control socket (its stages, below, run in the order ib_setup.c gives for
 * each side; ib_setup_stage_name() words them), returning enum
 * ib_setup_result (ib.h): pending, RDMA up, fall back to TCP, or failed.
 * Its state is shared by ib_setup.c (the machine and the exchange of INFO
 * and STATUS records, through record_io.h), ib_setup_res.c (queue pairs and
 * memory) and ib_comm.c (which takes the resources over). */
#ifndef DIAG_TRANSPORT_IB_SETUP_H
#define DIAG_TRANSPORT_IB_SETUP_H

#include "transport/ib/dev/ib.h"
#include "transport/ib/setup/ib_repair.h"
#include "transport/ib/setup/ib_wire.h"
#include "transport/record_io.h"

/* The machine's stages (ib_setup.c has their order on each side). */
enum ib_stage {
  IB_STAGE_CHECK, /* compatibility, queue pairs to INIT, our INFO */
  IB_STAGE_SEND_INFO,
  IB_STAGE_RECV_INFO,
  IB_STAGE_CONNECT, /* RTR and RTS, our STATUS */
  IB_STAGE_SEND_STATUS,
  IB_STAGE_RECV_STATUS,
  IB_STAGE_DONE,
};

/* "waiting for the peer's queue pairs": for logs. */
const char *ib_setup_stage_name(enum ib_stage stage);

struct ib_setup {
  struct ib_dev *dev;
  bool is_send;
  int ctrl_fd;
  struct hello mine, peer;
  char peer_desc[160];
  int traffic_class;
  enum ib_stage stage;
  enum ib_setup_result result; /* once done: the verdict both sides reached */
  int64_t deadline;
  /* resources, handed to the comm when the path is up */
  struct ibv_cq *cq;
  int nqps;
  struct ib_qp qps[IB_MAX_QPS];
  struct ib_cts *fifo; /* send side: written by the receiver */
  struct ibv_mr *fifo_mr;
  struct ib_cts *shadow; /* receive side: the entries it writes */
  struct ibv_mr *shadow_mr;
  uint32_t *cr; /* receive side: completion records (sizes) */
  struct ibv_mr *cr_mr;
  int sl, tc;          /* the sender's choice */
  bool is_ece_waiting; /* connector: RTR after the acceptor's STATUS (ib_ece.c) */
  /* RTR, queue pair by queue pair, retried on a timeout within a budget */
  int rtr_qp;           /* the next queue pair to connect */
  int rtr_retries;      /* of this queue pair so far */
  int rtr_total;        /* retries of the whole connection */
  int64_t rtr_retry_at; /* not before (0: now) */
  int64_t rtr_first_ns; /* the first failure */
  /* striping over a fused NIC's ports (ib_stripe.c): this side's ports in
   * its order (ndevs 1: one port, not striped), each one's index in
   * dev->members, its completion queue ([0] is cq) and, on a receiver,
   * the completion records' registration there ([0] is cr_mr) */
  int ndevs;
  struct ib_dev *devs[IB_MAX_STRIPE];
  int members[IB_MAX_STRIPE];
  struct ibv_cq *cqs[IB_MAX_STRIPE];
  struct ibv_mr *cr_mrs[IB_MAX_STRIPE];
  /* records */
  struct ibrec mine_info, peer_info, mine_status, peer_status;
  uint8_t out_buf[IBREC_HDR_LEN + IBREC_MAX_BODY];
  struct record_writer out; /* our INFO, then our STATUS */
  uint8_t in_buf[IBREC_HDR_LEN + IBREC_MAX_BODY];
  struct record_reader in; /* the peer's INFO, then its STATUS */
  char notes[512];
  /* the GID pair repair (ib_repair.h), and the hellos as they came */
  struct ib_repair repair;
  struct hello repair_hellos[2]; /* mine, the peer's */
};

/* The sender decides SL and traffic class (ib_setup_res.c). */
void ib_choose_sl_tc(int traffic_class, int *sl, int *tc);

/* ib_setup_res.c: 0, or an errno with the cause and fix in why, which the
 * setup reports in both sides' verdict (only a failed registration has
 * logged its own detail). ib_res_connect answers EINPROGRESS while an RTR
 * that timed out waits for its next attempt: call it again. */
int ib_res_create(struct ib_setup *s, int nqps, char *why, size_t cap);
int ib_res_connect(struct ib_setup *s, char *why, size_t cap);
/* The address of an RTR towards the peer's port (peer: its GID, LID and
 * MTU), built here for connection setup and for a move to another port
 * alike; a receiver's queue pairs carry NCCL_IB_FIFO_TC when it is set. */
enum ib_grh ib_rtr_path(const struct ib_dev *d, bool is_send, const uint8_t local_gid[16],
                        int local_gid_index, const struct hello *peer, int sl, int tc,
                        struct ib_path *p);
void ib_res_free(struct ib_setup *s);

/* ---- striping over a fused NIC's ports (ib_stripe.c) ---- */
/* This side's ports (s->devs), striped when both hellos offered it:
 * their count. */
int ib_stripe_local(struct ib_setup *s);
/* Queue pairs per message and the factor of the connection's count:
 * the larger side's port count (1 unstriped). */
int ib_stripe_width(const struct ib_setup *s);
/* Our INFO lists our ports when striped. */
void ib_stripe_fill_info(const struct ib_setup *s, struct ibrec *r);
/* The peer's INFO agrees with both hellos: 0, or EPROTO with why. */
int ib_stripe_check(const struct ib_setup *s, char *why, size_t cap);
/* The RTR path of striped queue pair i, and the peer as that port (for
 * the diagnosis). */
void ib_stripe_path(const struct ib_setup *s, int i, struct hello *peer, struct ib_path *p);
/* How much longer than NCCL_DIAG_CONNECT_TIMEOUT_MS the setup may take
 * when RTR retries spend their whole budget, on this side or (at NCCL's
 * defaults) on the peer's. */
int64_t ib_rtr_budget_ns(void);

#endif
