/* SPDX-License-Identifier: Apache-2.0 */
/* The liveness check's frame (liveness_int.h): magic, version, type, a
 * sequence number and a process token, 24 bytes, in the project's one wire
 * encoding (transport/wire.h: little-endian). */
#include <errno.h>

#include "transport/liveness_int.h"
#include "transport/wire.h"

void live_frame_encode(const struct live_frame *f, uint8_t out[LIVE_FRAME_LEN]) {
  struct wbuf w = {out, LIVE_FRAME_LEN, 0, 0};
  w_u32(&w, LIVE_MAGIC);
  w_u8(&w, LIVE_VERSION);
  w_u8(&w, f->type);
  w_u16(&w, f->flags);
  w_u32(&w, f->seq);
  w_u64(&w, f->token);
  w_u32(&w, f->extra);
}

int live_frame_decode(const uint8_t in[LIVE_FRAME_LEN], struct live_frame *f) {
  struct rbuf r = {in, LIVE_FRAME_LEN, 0, 0};
  uint32_t magic = r_u32(&r);
  uint8_t version = r_u8(&r);
  f->type = r_u8(&r);
  f->flags = r_u16(&r);
  f->seq = r_u32(&r);
  f->token = r_u64(&r);
  f->extra = r_u32(&r);
  if (magic != LIVE_MAGIC || version != LIVE_VERSION || f->type < LIVE_PING || f->type > LIVE_ROOT6)
    return EPROTO;
  return 0;
}

bool live_frame_admits(const uint8_t in[LIVE_FRAME_LEN], uint64_t token, struct live_frame *f) {
  return live_frame_decode(in, f) == 0 && f->type == LIVE_PING && f->token == token;
}
