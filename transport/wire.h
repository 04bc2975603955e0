/* SPDX-License-Identifier: Apache-2.0 */
/* Bounded little-endian readers and writers for everything we put on the
 * wire. A reader never reads past its buffer: once short, every later read
 * returns zeros and ok() is false, so decoders check once at the end. */
#ifndef DIAG_TRANSPORT_WIRE_H
#define DIAG_TRANSPORT_WIRE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct wbuf {
  uint8_t *p;
  size_t cap, len;
  bool has_overflow;
};

struct rbuf {
  const uint8_t *p;
  size_t len, off;
  bool is_short;
};

static inline void w_bytes(struct wbuf *w, const void *src, size_t n) {
  if (w->len + n > w->cap) {
    w->has_overflow = true;
    return;
  }
  memcpy(w->p + w->len, src, n);
  w->len += n;
}
static inline void w_u8(struct wbuf *w, uint8_t v) { w_bytes(w, &v, 1); }
static inline void w_u16(struct wbuf *w, uint16_t v) {
  uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  w_bytes(w, b, 2);
}
static inline void w_u32(struct wbuf *w, uint32_t v) {
  uint8_t b[4];
  for (int i = 0; i < 4; i++) b[i] = (uint8_t)(v >> (8 * i));
  w_bytes(w, b, 4);
}
static inline void w_u64(struct wbuf *w, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  w_bytes(w, b, 8);
}

static inline const uint8_t *r_take(struct rbuf *r, size_t n) {
  if (r->is_short || r->len - r->off < n) {
    r->is_short = true;
    return NULL;
  }
  const uint8_t *p = r->p + r->off;
  r->off += n;
  return p;
}
static inline uint8_t r_u8(struct rbuf *r) {
  const uint8_t *p = r_take(r, 1);
  return p ? p[0] : 0;
}
static inline uint16_t r_u16(struct rbuf *r) {
  const uint8_t *p = r_take(r, 2);
  return p ? (uint16_t)(p[0] | (p[1] << 8)) : 0;
}
static inline uint32_t r_u32(struct rbuf *r) {
  const uint8_t *p = r_take(r, 4);
  uint32_t v = 0;
  if (p)
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static inline uint64_t r_u64(struct rbuf *r) {
  const uint8_t *p = r_take(r, 8);
  uint64_t v = 0;
  if (p)
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}
/* 0, or EPROTO when the buffer ends first. */
static inline int r_bytes(struct rbuf *r, void *dst, size_t n) {
  const uint8_t *p = r_take(r, n);
  if (!p) return EPROTO;
  memcpy(dst, p, n);
  return 0;
}

/* Copies a length-prefixed string field into dst, replacing anything that is
 * not printable ASCII: names from the wire end up in log lines. */
static inline void wire_clean_str(char *dst, size_t cap, const uint8_t *src, size_t n) {
  if (!cap) return;
  if (n > cap - 1) n = cap - 1;
  for (size_t i = 0; i < n; i++) dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? (char)src[i] : '?';
  dst[n] = 0;
}

#endif
