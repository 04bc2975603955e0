/* SPDX-License-Identifier: Apache-2.0 */
/* One rendezvous connection, either side: non-blocking reads that collect
 * one framed message at a time with the transport's record reader
 * (transport/record_io.h: the header is checked before the body is read,
 * so a stranger cannot make us read more than WIRE_MAX_BODY), and a queue
 * of bytes to write. */
#ifndef DIAG_TOOLS_PROBE_RDV_CONN_H
#define DIAG_TOOLS_PROBE_RDV_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "tools/probe/rdv_wire.h"
#include "transport/record_io.h"

/* What a read or flush step came to. */
enum rdv_io {
  RDV_AGAIN,  /* nothing (more) to do now */
  RDV_MSG,    /* a whole message is in type/body/len: handle it, then rdv_conn_consume */
  RDV_CLOSED, /* the peer closed the connection (or reset it) */
  RDV_ERROR,  /* a protocol or socket error, why says which */
};

struct rdv_conn {
  int fd;
  char peer[80];           /* "10.0.0.2<51234>" */
  struct record_reader rd; /* its buffer (header and the largest body) comes with the first read */
  uint32_t max_body;       /* the largest message taken: 0 for WIRE_MAX_BODY */
  int type;                /* of the message read (RDV_MSG), with its body and len */
  uint32_t len;
  const uint8_t *body;
  uint8_t *out;
  size_t out_len, out_off, out_cap;
};

void rdv_conn_init(struct rdv_conn *c, int fd);
void rdv_conn_close(struct rdv_conn *c);
enum rdv_io rdv_conn_read(struct rdv_conn *c, char *why, size_t cap);
/* Whether the first bytes read were a probe's magic, of this release or an
 * earlier one (which gets a refusal it can read the reason of). */
int rdv_conn_is_probe(const struct rdv_conn *c);
void rdv_conn_consume(struct rdv_conn *c);
/* Appends a finished message to the write queue; 0 or ENOMEM. */
int rdv_conn_queue(struct rdv_conn *c, const struct wire_buf *b);
enum rdv_io rdv_conn_flush(struct rdv_conn *c, char *why, size_t cap);
int rdv_conn_pending_out(const struct rdv_conn *c);

#endif
