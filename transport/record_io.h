/* SPDX-License-Identifier: Apache-2.0 */
/* Framed records on a non-blocking socket: a fixed-size header that gives
 * the record's kind and its body's length, then the body. The hello
 * (hello.h) and the RDMA setup records (ib/setup/ib_wire.h) travel this way, on
 * a control socket whose later bytes belong to someone else, so the reader
 * never reads past the record it is on.
 *
 * Each call moves what the socket allows and returns an enum progress. They
 * log nothing: a failure comes back as an errno (and, for a bad header, a
 * why-buffer), and the caller, who knows the peer and the stage, logs it. */
#ifndef DIAG_TRANSPORT_RECORD_IO_H
#define DIAG_TRANSPORT_RECORD_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/progress.h"

/* Checks a header: 0 with the record's kind and its body's length, or
 * EPROTO with why. hello_decode_header and ibrec_decode_header. */
typedef int (*record_header_fn)(const uint8_t *hdr, int *kind, uint32_t *body_len, char *why,
                                size_t cap);

struct record_reader {
  uint8_t *buf; /* the header, then the body */
  size_t cap;
  size_t hdr_len;
  record_header_fn check_header;
  size_t got;
  bool has_header; /* checked: kind and body_len are valid */
  int kind;
  uint32_t body_len;
};

void record_reader_init(struct record_reader *r, uint8_t *buf, size_t cap, size_t hdr_len,
                        record_header_fn check_header);
/* Drops what was read: the next call starts a new record. */
void record_reader_reset(struct record_reader *r);
/* PROGRESS_DONE: the whole record is in buf, its body at buf + hdr_len
 * (reset before reading the next one). PROGRESS_FAILED: *err is the
 * socket's errno (EPIPE: the peer closed it), or EPROTO when the header is
 * not one, with why saying how. */
enum progress record_read(struct record_reader *r, int fd, int *err, char *why, size_t cap);
/* The bytes the record needs as far as it is known: its header's length,
 * then header and body. For messages ("after 5 of the 12 bytes"). */
size_t record_reader_want(const struct record_reader *r);

struct record_writer {
  const uint8_t *buf;
  size_t len, sent;
};

void record_writer_start(struct record_writer *w, const uint8_t *buf, size_t len);
/* PROGRESS_DONE once every byte is out; PROGRESS_FAILED with *err the
 * socket's errno (EPIPE: the peer closed it). */
enum progress record_write(struct record_writer *w, int fd, int *err);

#endif
