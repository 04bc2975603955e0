/* SPDX-License-Identifier: Apache-2.0 */
/* Framing and fields of the rendezvous protocol (wire.h). */
#include "tools/probe/rdv_wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/wire.h"

#define FIELD_HDR 6 /* tag u16 + length u32 */

static const char *const type_names[W_TYPE_END] = {
  [W_HELLO] = "hello",
  [W_WELCOME] = "welcome",
  [W_REFUSE] = "refusal",
  [W_FACTS] = "facts",
  [W_TASK] = "task",
  [W_HANDLE] = "handle",
  [W_PEER_HANDLE] = "peer handle",
  [W_RESULT] = "result",
  [W_ABORT] = "abort",
  [W_BYE] = "end",
};

const char *wire_type_name(int type) {
  return type > 0 && type < W_TYPE_END ? type_names[type] : "unknown";
}

/* Integers in the byte order of everything else the project puts on the
 * wire: transport/wire.h's bounded little-endian readers and writers, here
 * on slots whose room is already checked. */
static void put16(uint8_t *p, uint16_t v) {
  struct wbuf w = {p, 2, 0, false};
  w_u16(&w, v);
}
static void put32(uint8_t *p, uint32_t v) {
  struct wbuf w = {p, 4, 0, false};
  w_u32(&w, v);
}
static void put64(uint8_t *p, uint64_t v) {
  struct wbuf w = {p, 8, 0, false};
  w_u64(&w, v);
}
static uint16_t get16(const uint8_t *p) {
  struct rbuf r = {p, 2, 0, false};
  return r_u16(&r);
}
static uint32_t get32(const uint8_t *p) {
  struct rbuf r = {p, 4, 0, false};
  return r_u32(&r);
}
static uint64_t get64(const uint8_t *p) {
  struct rbuf r = {p, 8, 0, false};
  return r_u64(&r);
}

static uint8_t *room(struct wire_buf *b, size_t n) {
  if (b->failed) return NULL;
  if (b->len + n > WIRE_HDR_LEN + WIRE_MAX_BODY) {
    b->failed = 1;
    return NULL;
  }
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
      b->failed = 1;
      return NULL;
    }
    b->p = p, b->cap = cap;
  }
  uint8_t *at = b->p + b->len;
  b->len += n;
  return at;
}

void wb_begin(struct wire_buf *b, int type) {
  b->len = 0;
  b->failed = 0;
  uint8_t *h = room(b, WIRE_HDR_LEN);
  if (!h) return;
  put32(h, WIRE_MAGIC);
  put16(h + 4, WIRE_VERSION);
  put16(h + 6, (uint16_t)type);
}

size_t wb_finish(struct wire_buf *b) {
  if (b->failed || b->len < WIRE_HDR_LEN) return 0;
  put32(b->p + 8, (uint32_t)(b->len - WIRE_HDR_LEN));
  return b->len;
}

void wb_free(struct wire_buf *b) {
  free(b->p);
  memset(b, 0, sizeof(*b));
}

void wb_bytes(struct wire_buf *b, uint16_t tag, const void *p, size_t n) {
  uint8_t *f = room(b, FIELD_HDR + n);
  if (!f) return;
  put16(f, tag);
  put32(f + 2, (uint32_t)n);
  if (n) memcpy(f + FIELD_HDR, p, n);
}

void wb_u32(struct wire_buf *b, uint16_t tag, uint32_t v) {
  uint8_t x[4];
  put32(x, v);
  wb_bytes(b, tag, x, 4);
}

void wb_i32(struct wire_buf *b, uint16_t tag, int32_t v) { wb_u32(b, tag, (uint32_t)v); }

void wb_u64(struct wire_buf *b, uint16_t tag, uint64_t v) {
  uint8_t x[8];
  put64(x, v);
  wb_bytes(b, tag, x, 8);
}

void wb_str(struct wire_buf *b, uint16_t tag, const char *s) {
  wb_bytes(b, tag, s, strnlen(s, WIRE_TEXT_MAX));
}

size_t wb_group_begin(struct wire_buf *b, uint16_t tag) {
  size_t at = b->len;
  wb_bytes(b, tag, NULL, 0);
  return at;
}

void wb_group_end(struct wire_buf *b, size_t at) {
  if (b->failed) return;
  put32(b->p + at + 2, (uint32_t)(b->len - at - FIELD_HDR));
}

int wire_decode_header(const uint8_t *hdr, int *type, uint32_t *len, char *why, size_t cap) {
  uint32_t magic = get32(hdr);
  if (magic == __builtin_bswap32(WIRE_MAGIC)) {
    snprintf(why, cap,
             "it speaks the big-endian rendezvous protocol of an earlier nccl-net-diag release, "
             "this side v%u: run the same nccl-net-diag release on every node",
             WIRE_VERSION);
    return EPROTONOSUPPORT;
  }
  if (magic != WIRE_MAGIC) {
    snprintf(why, cap,
             "its first bytes (0x%08x) are not this probe's rendezvous protocol (another "
             "program, or a job using this port)",
             magic);
    return EPROTO;
  }
  uint16_t version = get16(hdr + 4);
  if (version != WIRE_VERSION) {
    snprintf(why, cap,
             "it speaks rendezvous protocol v%u, this side v%u: run the same nccl-net-diag "
             "release on every node",
             version, WIRE_VERSION);
    return EPROTONOSUPPORT;
  }
  *type = get16(hdr + 6);
  *len = get32(hdr + 8);
  if (*len > WIRE_MAX_BODY) {
    snprintf(why, cap, "it announces a %u-byte message, above the limit of %u", *len,
             WIRE_MAX_BODY);
    return EMSGSIZE;
  }
  if (*type <= 0 || *type >= W_TYPE_END) {
    snprintf(why, cap, "it sent a message of unknown type %d", *type);
    return EBADMSG;
  }
  return 0;
}

void wire_rd_init(struct wire_rd *r, const uint8_t *p, size_t len) {
  r->p = p, r->len = len, r->off = 0, r->depth = 0;
}

enum wire_field wire_next(struct wire_rd *r, uint16_t *tag, struct wire_rd *val) {
  if (r->off == r->len) return WIRE_END;
  if (r->len - r->off < FIELD_HDR) return WIRE_MALFORMED;
  const uint8_t *f = r->p + r->off;
  uint32_t n = get32(f + 2);
  if (n > r->len - r->off - FIELD_HDR) return WIRE_MALFORMED;
  *tag = get16(f);
  val->p = f + FIELD_HDR;
  val->len = n;
  val->off = 0;
  val->depth = r->depth + 1;
  if (val->depth > WIRE_MAX_DEPTH) return WIRE_MALFORMED;
  r->off += FIELD_HDR + n;
  return WIRE_FIELD;
}

int wire_u32(const struct wire_rd *v, uint32_t *out) {
  if (v->len != 4) return EBADMSG;
  *out = get32(v->p);
  return 0;
}

int wire_i32(const struct wire_rd *v, int32_t *out) {
  uint32_t u;
  if (wire_u32(v, &u)) return EBADMSG;
  *out = (int32_t)u;
  return 0;
}

int wire_u64(const struct wire_rd *v, uint64_t *out) {
  if (v->len != 8) return EBADMSG;
  *out = get64(v->p);
  return 0;
}

int wire_str(const struct wire_rd *v, char *out, size_t cap) {
  if (v->len >= cap) return EMSGSIZE;
  for (size_t i = 0; i < v->len; i++) {
    uint8_t c = v->p[i];
    out[i] = c >= 0x20 && c < 0x7f ? (char)c : c == '\n' || c == '\t' ? ' ' : '?';
  }
  out[v->len] = 0;
  return 0;
}

int wire_lines(const struct wire_rd *v, char *out, size_t cap) {
  int err = wire_str(v, out, cap);
  if (err) return err;
  for (size_t i = 0; i < v->len; i++)
    if (v->p[i] == '\n') out[i] = '\n';
  return 0;
}

char *wire_strdup(const struct wire_rd *v) {
  if (v->len >= WIRE_TEXT_MAX) return NULL;
  char *s = malloc(v->len + 1);
  if (s && wire_str(v, s, v->len + 1)) {
    free(s);
    return NULL;
  }
  return s;
}
