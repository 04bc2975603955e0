/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/probe/rdv_conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void rdv_conn_init(struct rdv_conn *c, int fd) {
  memset(c, 0, sizeof(*c));
  c->fd = fd;
}

void rdv_conn_close(struct rdv_conn *c) {
  if (c->fd >= 0) close(c->fd);
  free(c->body);
  free(c->out);
  memset(c, 0, sizeof(*c));
  c->fd = -1;
}

static enum rdv_io read_some(struct rdv_conn *c, uint8_t *dst, size_t want, size_t *got, char *why,
                             size_t cap) {
  while (*got < want) {
    ssize_t n = recv(c->fd, dst + *got, want - *got, 0);
    if (n > 0) {
      *got += (size_t)n;
      continue;
    }
    if (n == 0) return RDV_CLOSED;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return RDV_AGAIN;
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) return RDV_CLOSED;
    snprintf(why, cap, "reading from %s failed: %s", c->peer, strerror(errno));
    return RDV_ERROR;
  }
  return RDV_MSG;
}

enum rdv_io rdv_conn_read(struct rdv_conn *c, char *why, size_t cap) {
  if (c->hdr_got < WIRE_HDR_LEN) {
    enum rdv_io r = read_some(c, c->hdr, WIRE_HDR_LEN, &c->hdr_got, why, cap);
    if (r != RDV_MSG) return r;
    if (wire_decode_header(c->hdr, &c->type, &c->len, why, cap)) return RDV_ERROR;
    c->got = 0;
    free(c->body);
    c->body = malloc(c->len ? c->len : 1);
    if (!c->body) {
      snprintf(why, cap, "out of memory for a %u-byte message", c->len);
      return RDV_ERROR;
    }
  }
  size_t got = c->got;
  enum rdv_io r = read_some(c, c->body, c->len, &got, why, cap);
  c->got = (uint32_t)got;
  return r;
}

void rdv_conn_consume(struct rdv_conn *c) {
  c->hdr_got = 0;
  c->got = c->len = 0;
  free(c->body);
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

enum rdv_io rdv_conn_flush(struct rdv_conn *c, char *why, size_t cap) {
  while (c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (n > 0) {
      c->out_off += (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return RDV_AGAIN;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) return RDV_CLOSED;
    snprintf(why, cap, "writing to %s failed: %s", c->peer, strerror(errno));
    return RDV_ERROR;
  }
  return RDV_MSG;
}

int rdv_conn_pending_out(const struct rdv_conn *c) { return c->out_off < c->out_len; }
