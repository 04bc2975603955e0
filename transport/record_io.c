/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/record_io.h"

#include <errno.h>
#include <stdio.h>

#include "transport/sock.h"

void record_reader_init(struct record_reader *r, uint8_t *buf, size_t cap, size_t hdr_len,
                        record_header_fn check_header) {
  r->buf = buf;
  r->cap = cap;
  r->hdr_len = hdr_len;
  r->check_header = check_header;
  record_reader_reset(r);
}

void record_reader_reset(struct record_reader *r) {
  r->got = 0;
  r->has_header = false;
  r->kind = 0;
  r->body_len = 0;
}

size_t record_reader_want(const struct record_reader *r) {
  return r->hdr_len + (r->has_header ? r->body_len : 0);
}

/* The header is complete: check it, and make sure its body fits. */
static int take_header(struct record_reader *r, char *why, size_t cap) {
  int err = r->check_header(r->buf, &r->kind, &r->body_len, why, cap);
  if (err) return err;
  if (r->body_len > r->cap - r->hdr_len) {
    snprintf(why, cap, "a record of %u bytes, more than the %zu expected", r->body_len,
             r->cap - r->hdr_len);
    return EPROTO;
  }
  r->has_header = true;
  return 0;
}

enum progress record_read(struct record_reader *r, int fd, int *err, char *why, size_t cap) {
  *err = 0;
  for (;;) {
    size_t want = record_reader_want(r);
    if (r->got == want) {
      if (r->has_header) return PROGRESS_DONE;
      *err = take_header(r, why, cap);
      if (*err) return PROGRESS_FAILED;
      continue; /* an empty body completes the record at once */
    }
    size_t n;
    int e = sock_recv(fd, r->buf + r->got, want - r->got, &n);
    r->got += n;
    if (e == EAGAIN) return PROGRESS_PENDING;
    if (e) {
      *err = e;
      return PROGRESS_FAILED;
    }
  }
}

void record_writer_start(struct record_writer *w, const uint8_t *buf, size_t len) {
  w->buf = buf;
  w->len = len;
  w->sent = 0;
}

enum progress record_write(struct record_writer *w, int fd, int *err) {
  *err = 0;
  while (w->sent < w->len) {
    size_t n;
    int e = sock_send(fd, w->buf + w->sent, w->len - w->sent, &n);
    w->sent += n;
    if (e == EAGAIN) return PROGRESS_PENDING;
    if (e) {
      *err = e;
      return PROGRESS_FAILED;
    }
  }
  return PROGRESS_DONE;
}
