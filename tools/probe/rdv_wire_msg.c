/* SPDX-License-Identifier: Apache-2.0 */
/* The small messages of the rendezvous protocol: hello, task, handles,
 * result and the notes (welcome, refusal, abort, end). Each decoder names
 * the field that was malformed or missing. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/probe/rdv_wire.h"

enum {
  T_JOB = 1,
  T_WORLD,
  T_RANK,
  T_LOCAL_RANK,
  T_HOST,
  T_VERSION,
  T_STEP,
  T_PEER,
  T_DEV,
  T_FIRST,
  T_BYTES,
  T_PINGS,
  T_TIMEOUT,
  T_HANDLE,
  T_OK,
  T_RECV_BYTES,
  T_RECV_NS,
  T_LAT_NS,
  T_ERROR,
  T_WARNS,
  T_VALUE,
  T_TEXT,
  T_PROTO_MIN,
  T_CAUSE,
  T_STALL,
  T_SECRET,
};

static int bad(char *why, size_t cap, const char *what, const char *field) {
  snprintf(why, cap, "malformed %s message: field %s", what, field);
  return EBADMSG;
}

/* Runs a field loop; a helper macro keeps each decoder to its fields. */
#define FIELDS(body, len, tag, v)                                                                  \
  struct wire_rd rd_, v;                                                                           \
  uint16_t tag;                                                                                    \
  enum wire_field got_;                                                                            \
  wire_rd_init(&rd_, (body), (len));                                                               \
  while ((got_ = wire_next(&rd_, &tag, &v)) == WIRE_FIELD)

#define FIELDS_END(what)                                                                           \
  if (got_ == WIRE_MALFORMED) return bad(why, cap, what, "framing")

int wire_enc_hello(struct wire_buf *b, const struct wire_hello *h) {
  wb_begin(b, W_HELLO);
  wb_u32(b, T_PROTO_MIN, WIRE_VERSION);
  wb_str(b, T_JOB, h->job);
  wb_i32(b, T_WORLD, h->world);
  wb_i32(b, T_RANK, h->rank);
  wb_i32(b, T_LOCAL_RANK, h->local_rank);
  wb_str(b, T_HOST, h->host);
  wb_str(b, T_VERSION, h->version);
  wb_u64(b, T_SECRET, h->secret);
  return wb_finish(b) ? 0 : EMSGSIZE;
}

int wire_dec_hello(const uint8_t *body, size_t len, struct wire_hello *h, char *why, size_t cap) {
  memset(h, 0, sizeof(*h));
  h->world = h->rank = -1;
  FIELDS(body, len, tag, v) {
    int e = 0;
    switch (tag) {
    case T_PROTO_MIN: e = wire_u32(&v, &h->proto_min); break;
    case T_JOB: e = wire_str(&v, h->job, sizeof(h->job)); break;
    case T_WORLD: e = wire_i32(&v, &h->world); break;
    case T_RANK: e = wire_i32(&v, &h->rank); break;
    case T_LOCAL_RANK: e = wire_i32(&v, &h->local_rank); break;
    case T_HOST: e = wire_str(&v, h->host, sizeof(h->host)); break;
    case T_VERSION: e = wire_str(&v, h->version, sizeof(h->version)); break;
    case T_SECRET:
      e = wire_u64(&v, &h->secret);
      h->has_secret = !e;
      break;
    default: break;
    }
    if (e) return bad(why, cap, "hello", "value");
  }
  FIELDS_END("hello");
  if (h->world < 1 || h->rank < 0 || !h->host[0])
    return bad(why, cap, "hello", "rank, world size or host");
  return 0;
}

int wire_enc_task(struct wire_buf *b, const struct wire_task *t) {
  wb_begin(b, W_TASK);
  wb_u32(b, T_STEP, t->step);
  wb_i32(b, T_PEER, t->peer);
  wb_str(b, T_HOST, t->peer_host);
  wb_i32(b, T_DEV, t->dev);
  wb_i32(b, T_FIRST, t->first);
  wb_u64(b, T_BYTES, t->bytes);
  wb_u32(b, T_PINGS, t->pings);
  wb_u32(b, T_TIMEOUT, t->timeout_ms);
  return wb_finish(b) ? 0 : EMSGSIZE;
}

int wire_dec_task(const uint8_t *body, size_t len, struct wire_task *t, char *why, size_t cap) {
  memset(t, 0, sizeof(*t));
  t->peer = t->dev = -1;
  FIELDS(body, len, tag, v) {
    int e = 0;
    switch (tag) {
    case T_STEP: e = wire_u32(&v, &t->step); break;
    case T_PEER: e = wire_i32(&v, &t->peer); break;
    case T_HOST: e = wire_str(&v, t->peer_host, sizeof(t->peer_host)); break;
    case T_DEV: e = wire_i32(&v, &t->dev); break;
    case T_FIRST: e = wire_i32(&v, &t->first); break;
    case T_BYTES: e = wire_u64(&v, &t->bytes); break;
    case T_PINGS: e = wire_u32(&v, &t->pings); break;
    case T_TIMEOUT: e = wire_u32(&v, &t->timeout_ms); break;
    default: break;
    }
    if (e) return bad(why, cap, "task", "value");
  }
  FIELDS_END("task");
  if (t->peer < 0 || t->dev < 0 || !t->timeout_ms) return bad(why, cap, "task", "peer or device");
  return 0;
}

int wire_enc_handle(struct wire_buf *b, int type, const struct wire_handle *h) {
  wb_begin(b, type);
  wb_u32(b, T_STEP, h->step);
  wb_bytes(b, T_HANDLE, h->handle, h->len <= WIRE_HANDLE_MAX ? h->len : WIRE_HANDLE_MAX);
  return wb_finish(b) ? 0 : EMSGSIZE;
}

int wire_dec_handle(const uint8_t *body, size_t len, struct wire_handle *h, char *why, size_t cap) {
  memset(h, 0, sizeof(*h));
  int have = 0;
  FIELDS(body, len, tag, v) {
    if (tag == T_STEP && wire_u32(&v, &h->step)) return bad(why, cap, "handle", "step");
    if (tag != T_HANDLE) continue;
    if (v.len > WIRE_HANDLE_MAX) return bad(why, cap, "handle", "handle (too long)");
    memcpy(h->handle, v.p, v.len);
    h->len = (uint32_t)v.len;
    have = 1;
  }
  FIELDS_END("handle");
  return have ? 0 : bad(why, cap, "handle", "handle (missing)");
}

int wire_enc_result(struct wire_buf *b, const struct wire_result *r) {
  wb_begin(b, W_RESULT);
  wb_u32(b, T_STEP, r->step);
  wb_i32(b, T_OK, r->ok_recv);
  wb_u64(b, T_RECV_BYTES, r->recv_bytes);
  wb_u64(b, T_RECV_NS, r->recv_ns);
  wb_u64(b, T_LAT_NS, r->lat_ns);
  wb_str(b, T_ERROR, r->error);
  wb_str(b, T_WARNS, r->warns);
  wb_str(b, T_CAUSE, r->cause);
  wb_i32(b, T_STALL, r->stall);
  return wb_finish(b) ? 0 : EMSGSIZE;
}

int wire_dec_result(const uint8_t *body, size_t len, struct wire_result *r, char *why, size_t cap) {
  memset(r, 0, sizeof(*r));
  FIELDS(body, len, tag, v) {
    int e = 0;
    switch (tag) {
    case T_STEP: e = wire_u32(&v, &r->step); break;
    case T_OK: e = wire_i32(&v, &r->ok_recv); break;
    case T_RECV_BYTES: e = wire_u64(&v, &r->recv_bytes); break;
    case T_RECV_NS: e = wire_u64(&v, &r->recv_ns); break;
    case T_LAT_NS: e = wire_u64(&v, &r->lat_ns); break;
    case T_ERROR: e = wire_str(&v, r->error, sizeof(r->error)); break;
    case T_WARNS: e = wire_lines(&v, r->warns, sizeof(r->warns)); break;
    case T_CAUSE: e = wire_str(&v, r->cause, sizeof(r->cause)); break;
    case T_STALL: e = wire_i32(&v, &r->stall); break;
    default: break;
    }
    if (e) return bad(why, cap, "result", "value");
  }
  FIELDS_END("result");
  return 0;
}

int wire_enc_note(struct wire_buf *b, int type, const struct wire_note *n) {
  wb_begin(b, type);
  wb_u32(b, T_STEP, n->step);
  wb_u64(b, T_VALUE, n->value);
  wb_str(b, T_TEXT, n->text);
  return wb_finish(b) ? 0 : EMSGSIZE;
}

int wire_dec_note(const uint8_t *body, size_t len, struct wire_note *n, char *why, size_t cap) {
  memset(n, 0, sizeof(*n));
  FIELDS(body, len, tag, v) {
    int e = 0;
    switch (tag) {
    case T_STEP: e = wire_u32(&v, &n->step); break;
    case T_VALUE: e = wire_u64(&v, &n->value); break;
    case T_TEXT: e = wire_str(&v, n->text, sizeof(n->text)); break;
    default: break;
    }
    if (e) return bad(why, cap, "note", "value");
  }
  FIELDS_END("note");
  return 0;
}
