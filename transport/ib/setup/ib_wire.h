/* SPDX-License-Identifier: Apache-2.0 */
/* Records the two sides exchange on the control connection to set up the
 * RDMA path, after the hello:
 *   INFO   each side's queue pairs and the memory the other side writes to
 *          (the sender's clear-to-send FIFO, the receiver's completion
 *          records), or why it could not create them;
 *   STATUS each side's result of RTR/RTS, with the reason on failure.
 * Both sides decide the connection's transport from the pair of STATUS
 * records, so they always agree. Length-checked; fuzzed. */
#ifndef DIAG_TRANSPORT_IB_WIRE_H
#define DIAG_TRANSPORT_IB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IBREC_MAGIC 0x63657269u /* "irec" */
#define IBREC_VERSION 1
#define IBREC_HDR_LEN 12
#define IBREC_MAX_QPS 32
#define IBREC_REASON_MAX 1536
#define IBREC_MAX_STRIPE 8
#define IBREC_PORT_LEN 28 /* a striped side's port: GID, LID, MTU, key of its records */
#define IBREC_MAX_BODY                                                                             \
  (64 + IBREC_MAX_QPS * 4 + IBREC_REASON_MAX + 1 + IBREC_MAX_STRIPE * IBREC_PORT_LEN)

enum ibrec_type { IBREC_INFO = 1, IBREC_STATUS = 2 };
enum {
  IBREC_F_FALLBACK = 1, /* NCCL_DIAG_FALLBACK=auto on this side */
  IBREC_F_SPLIT = 2,    /* the sender spreads each message over all queue pairs */
  /* INFO: this side speaks the reduced ECE exchange (see ib_ece.c): an
   * acceptor returns in its STATUS what its queue pairs settled on, and a
   * connector waits for that STATUS before its own RTR. Older peers leave
   * it unset and keep the symmetric exchange. */
  IBREC_F_ECE_REDUCED = 4,
  /* INFO: this side stripes each message over the ports listed in its
   * stripe trailer (both hellos offered it, ib_stripe.c). */
  IBREC_F_STRIPE = 8,
};

/* One port of a side that stripes, in that side's order (queue pair j
 * runs on its port j % nports). */
struct ibrec_port {
  uint8_t gid[16];
  uint32_t lid, mtu;
  uint32_t cr_rkey; /* receiver: its completion records' key on this port */
};

struct ibrec {
  int type;
  bool is_ok;
  int nqps;
  uint32_t qpns[IBREC_MAX_QPS];
  uint64_t fifo_addr; /* send side: its CTS FIFO, written by the receiver */
  uint32_t fifo_rkey;
  uint64_t cr_addr; /* receive side: its completion records, written by the sender */
  uint32_t cr_rkey;
  uint32_t mtu;   /* bytes, what this side's port runs */
  uint8_t sl, tc; /* the sender's choice; the receiver uses it */
  uint8_t max_recvs;
  uint8_t flags; /* IBREC_F_*: this side's policy */
  char reason[IBREC_REASON_MAX];
  /* STATUS of an acceptor: the ECE its queue pairs settled on (a trailer
   * after the reason, which older decoders skip) */
  bool has_ece;
  uint32_t ece_vendor, ece_options, ece_comp_mask;
  /* INFO with IBREC_F_STRIPE: its ports (a trailer after the ECE one,
   * which is then always written, so older decoders skip it) */
  int nports;
  struct ibrec_port ports[IBREC_MAX_STRIPE];
};

/* Header + body into out: 0 with the total length in *len, or EMSGSIZE
 * when it does not fit (or names more queue pairs than a record carries). */
int ibrec_encode(const struct ibrec *r, uint8_t *out, size_t cap, size_t *len);
/* Header: 0 with the record type and the body's length, or EPROTO with why. */
int ibrec_decode_header(const uint8_t *hdr, int *type, uint32_t *body_len, char *why, size_t cap);
/* Body of a record of that type: 0, or EPROTO with why. */
int ibrec_decode_body(int type, const uint8_t *body, size_t len, struct ibrec *r, char *why,
                      size_t cap);

/* Port fail-over on the control connection (ib_failover.c), each in a
 * frame of its own (MSG_F_FAILOVER):
 *   HINT receiver -> sender: my queue pair failed (text: the cause); move
 *   REQ  sender -> receiver: the standby queue pair on the port it moves to,
 *        and the CTS FIFO's key there (text: the failed port and cause)
 *   ACK  receiver -> sender: its standby queue pair, its completion
 *        records' key, and the messages whose receive is still pending
 *   GO   sender -> receiver: connected; repost the clear-to-sends
 *   NAK  either way: this side cannot move (text: why) */
enum ib_fo_kind { IB_FO_HINT = 1, IB_FO_REQ, IB_FO_ACK, IB_FO_GO, IB_FO_NAK };
#define IB_FO_MAX_PENDING 64
#define IB_FO_TEXT_MAX 700

struct ib_fo_msg {
  int kind;
  uint32_t qpn, lid, mtu;
  uint8_t gid[16];
  uint64_t addr;
  uint32_t rkey;
  int npending;
  uint32_t pending[IB_FO_MAX_PENDING]; /* ACK: message sequences, ascending */
  char port[80];                       /* "mlx5_1 port 1": where the side moves to */
  char text[IB_FO_TEXT_MAX];
};

/* 0 with the length in *len, or EMSGSIZE. */
int ib_fo_encode(const struct ib_fo_msg *m, uint8_t *out, size_t cap, size_t *len);
/* 0, or EPROTO with why. */
int ib_fo_decode(const uint8_t *in, size_t len, struct ib_fo_msg *m, char *why, size_t cap);

#endif
