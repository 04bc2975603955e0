/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/frame.h"

#include <errno.h>
#include <stdio.h>

#include "transport/handle.h"
#include "transport/wire.h"

void preamble_encode(const struct preamble *p, uint8_t out[PREAMBLE_LEN]) {
  struct wbuf w = {out, PREAMBLE_LEN, 0, 0};
  w_u32(&w, DIAG_MAGIC);
  w_u8(&w, PREAMBLE_VERSION);
  w_u8(&w, p->role);
  w_u16(&w, p->index);
  w_u64(&w, p->nonce);
  w_u64(&w, p->connid);
}

int preamble_decode(const uint8_t in[PREAMBLE_LEN], struct preamble *p, char *why, size_t cap) {
  struct rbuf r = {in, PREAMBLE_LEN, 0, 0};
  uint32_t magic = r_u32(&r);
  uint8_t version = r_u8(&r);
  p->role = r_u8(&r);
  p->index = r_u16(&r);
  p->nonce = r_u64(&r);
  p->connid = r_u64(&r);
  if (magic != DIAG_MAGIC) {
    snprintf(why, cap, "first bytes 0x%08x are not our magic 0x%08x", magic, DIAG_MAGIC);
    return EPROTO;
  }
  if (version != PREAMBLE_VERSION) {
    snprintf(why, cap, "preamble version %u, this build speaks %u", version, PREAMBLE_VERSION);
    return EPROTO;
  }
  if (p->role != ROLE_CTRL && p->role != ROLE_DATA) {
    snprintf(why, cap, "socket role %u is neither control (1) nor data (2)", p->role);
    return EPROTO;
  }
  if (p->role == ROLE_DATA && p->index >= 64) {
    snprintf(why, cap, "data socket index %u is beyond 63", p->index);
    return EPROTO;
  }
  return 0;
}

void msg_hdr_encode(const struct msg_hdr *h, uint8_t out[MSG_HDR_LEN]) {
  struct wbuf w = {out, MSG_HDR_LEN, 0, 0};
  w_u16(&w, MSG_MARK);
  w_u8(&w, h->flags);
  w_u8(&w, 0);
  w_u32(&w, h->seq);
  w_u32(&w, (uint32_t)h->tag);
  w_u32(&w, h->chunk);
  w_u64(&w, h->size);
}

int msg_hdr_decode(const uint8_t in[MSG_HDR_LEN], struct msg_hdr *h, char *why, size_t cap) {
  struct rbuf r = {in, MSG_HDR_LEN, 0, 0};
  uint16_t mark = r_u16(&r);
  h->flags = r_u8(&r);
  uint8_t pad = r_u8(&r);
  h->seq = r_u32(&r);
  h->tag = (int32_t)r_u32(&r);
  h->chunk = r_u32(&r);
  h->size = r_u64(&r);
  if (mark != MSG_MARK || pad != 0 || (h->flags & ~(MSG_F_INLINE | MSG_F_ABORT))) {
    snprintf(why, cap, "message header starts with 0x%04x/%02x/%02x, not a header", mark, h->flags,
             pad);
    return EPROTO;
  }
  if ((h->flags & MSG_F_ABORT) && h->size > MSG_ABORT_MAX) {
    snprintf(why, cap, "abort notice of %llu bytes (at most %d)", (unsigned long long)h->size,
             MSG_ABORT_MAX);
    return EPROTO;
  }
  if (!(h->flags & (MSG_F_INLINE | MSG_F_ABORT)) && h->chunk == 0 && h->size) {
    snprintf(why, cap, "striped message of %llu bytes with a zero stripe size",
             (unsigned long long)h->size);
    return EPROTO;
  }
  if (h->size > (1ULL << 40)) {
    snprintf(why, cap, "message size %llu is beyond 2^40", (unsigned long long)h->size);
    return EPROTO;
  }
  return 0;
}
