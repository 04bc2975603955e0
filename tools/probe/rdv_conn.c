/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/probe/rdv_conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/wire.h"

void rdv_conn_init(struct rdv_conn *c, int fd) {
  memset(c, 0, sizeof(*c));
  c->fd = fd;
}

void rdv_conn_close(struct rdv_conn *c) {
  if (c->fd >= 0) close(c->fd);
  free(c->rd.buf);
  free(c->out);
  memset(c, 0, sizeof(*c));
  c->fd = -1;
}

enum rdv_io rdv_conn_read(struct rdv_conn *c, char *why, size_t cap) {
  if (!c->rd.buf) {
    size_t body = c->max_body ? c->max_body : WIRE_MAX_BODY;
    uint8_t *buf = malloc(WIRE_HDR_LEN + body); /* pages are touched only as filled */
    if (!buf) {
      snprintf(why, cap, "out of memory for the messages of %s", c->peer);
      return RDV_ERROR;
    }
    record_reader_init(&c->rd, buf, WIRE_HDR_LEN + body, WIRE_HDR_LEN, wire_decode_header);
  }
  int err;
  enum progress p = record_read(&c->rd, c->fd, &err, why, cap);
  if (p == PROGRESS_PENDING) return RDV_AGAIN;
  if (p == PROGRESS_DONE) {
    c->type = c->rd.kind;
    c->len = c->rd.body_len;
    c->body = c->rd.buf + WIRE_HDR_LEN;
    return RDV_MSG;
  }
  if (!c->rd.has_header && c->rd.got == WIRE_HDR_LEN) return RDV_ERROR; /* why: the header */
  if (err == EPIPE || err == ECONNRESET) return RDV_CLOSED;
  snprintf(why, cap, "reading from %s failed: %s", c->peer, strerror(err));
  return RDV_ERROR;
}

int rdv_conn_is_probe(const struct rdv_conn *c) {
  uint8_t magic[4];
  struct wbuf w = {magic, sizeof(magic), 0, false};
  w_u32(&w, WIRE_MAGIC);
  return c->rd.buf && c->rd.got >= 4 &&
         (!memcmp(c->rd.buf, magic, 4) || !memcmp(c->rd.buf, "NDPR", 4) /* big-endian */);
}

void rdv_conn_consume(struct rdv_conn *c) {
  record_reader_reset(&c->rd);
  c->type = 0;
  c->len = 0;
  c->body = NULL;
}

int rdv_conn_queue(struct rdv_conn *c, const struct wire_buf *b) {
  if (b->failed || !b->len) return EMSGSIZE;
  if (c->out_off == c->out_len) c->out_off = c->out_len = 0;
  if (c->out_len + b->len > c->out_cap) {
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + b->len) cap *= 2;
    uint8_t *p = realloc(c->out, cap);
    if (!p) return ENOMEM;
    c->out = p, c->out_cap = cap;
  }
  memcpy(c->out + c->out_len, b->p, b->len);
  c->out_len += b->len;
  return 0;
}

/* A writer over what is queued now: the queue may move (realloc) between
 * calls, so each call starts one at the current offset. */
enum rdv_io rdv_conn_flush(struct rdv_conn *c, char *why, size_t cap) {
  if (c->out_off == c->out_len) return RDV_MSG;
  struct record_writer w;
  record_writer_start(&w, c->out + c->out_off, c->out_len - c->out_off);
  int err;
  enum progress p = record_write(&w, c->fd, &err);
  c->out_off += w.sent;
  if (p == PROGRESS_DONE) return RDV_MSG;
  if (p == PROGRESS_PENDING) return RDV_AGAIN;
  if (err == EPIPE || err == ECONNRESET) return RDV_CLOSED;
  snprintf(why, cap, "writing to %s failed: %s", c->peer, strerror(err));
  return RDV_ERROR;
}

int rdv_conn_pending_out(const struct rdv_conn *c) { return c->out_off < c->out_len; }
