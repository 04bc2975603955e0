/* SPDX-License-Identifier: Apache-2.0 */
/* Fixed-size frames on our TCP sockets:
 *  - the preamble, the first 24 bytes of every socket a connector opens: it
 *    names the listen it is for (nonce), the connection (connid), and the
 *    socket's role (control, or data socket i);
 *  - the message header, 24 bytes before every message on a control socket:
 *    sequence number, tag, size, and how the payload travels. */
#ifndef DIAG_TRANSPORT_FRAME_H
#define DIAG_TRANSPORT_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define PREAMBLE_LEN 24
#define PREAMBLE_VERSION 1
enum { ROLE_CTRL = 1, ROLE_DATA = 2 };

struct preamble {
  uint8_t role;
  uint16_t index; /* data socket index */
  uint64_t nonce;
  uint64_t connid;
};

void preamble_encode(const struct preamble *p, uint8_t out[PREAMBLE_LEN]);
/* 0, or EPROTO with why ("magic 0x... is not ours"). Does not check the
 * nonce. */
int preamble_decode(const uint8_t in[PREAMBLE_LEN], struct preamble *p, char *why, size_t cap);

#define MSG_HDR_LEN 24
#define MSG_MARK 0xd1a6
/* INLINE: the payload follows on the control socket. ABORT: the sender of
 * this frame gave up on the connection; `size` bytes of reason text follow. */
/* FAILOVER: an RDMA connection moving to another port of its virtual NIC;
 * `size` bytes of its message follow (transport/ib/setup/ib_wire.h). Only the
 * RDMA transport reads these (msg_hdr_decode refuses them). */
enum { MSG_F_INLINE = 1, MSG_F_ABORT = 2, MSG_F_FAILOVER = 4 };
#define MSG_ABORT_MAX 1024
#define MSG_FAILOVER_MAX 2048

struct msg_hdr {
  uint8_t flags;
  uint32_t seq;
  int32_t tag;
  uint32_t chunk; /* striped: bytes per data-socket piece */
  uint64_t size;
};

void msg_hdr_encode(const struct msg_hdr *h, uint8_t out[MSG_HDR_LEN]);
/* Validates mark, flags and chunk: 0, or EPROTO with why. The sequence
 * number is checked by the caller, so it can name both numbers. */
int msg_hdr_decode(const uint8_t in[MSG_HDR_LEN], struct msg_hdr *h, char *why, size_t cap);

#endif
