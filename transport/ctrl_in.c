/* SPDX-License-Identifier: Apache-2.0 */
/* The control channel's one header decoder (ctrl.h): bytes in as they
 * arrive, a message out once all of it is there. No socket here, so the
 * fuzz target drives exactly what the reader uses. */
#include <stdio.h>
#include <string.h>

#include "transport/ctrl.h"
#include "transport/wire.h"

/* Flag and bound of each kind: the one place a kind's header is judged. */
static const struct {
  uint8_t flag;
  size_t max;
} kinds[CTRL_KINDS] = {
  [CTRL_ABORT] = {MSG_F_ABORT, MSG_ABORT_MAX},
  [CTRL_FAILOVER] = {MSG_F_FAILOVER, MSG_FAILOVER_MAX},
  [CTRL_REPAIR] = {CTRL_F_REPAIR, CTRL_BODY_MAX},
  [CTRL_QUERY] = {CTRL_F_QUERY, CTRL_BODY_MAX},
};

size_t ctrl_in_need(const struct ctrl_in *in) { return in->want - in->got; }

uint8_t *ctrl_in_space(struct ctrl_in *in) { return in->buf + in->got; }

void ctrl_in_reset(struct ctrl_in *in) {
  in->got = 0;
  in->want = MSG_HDR_LEN;
  in->why[0] = 0;
  in->msg.body = NULL;
}

static enum ctrl_read bad(struct ctrl_in *in, const char *what, unsigned long long a) {
  snprintf(in->why, sizeof(in->why), what, a);
  return CTRL_R_BAD;
}

static enum ctrl_read decode_header(struct ctrl_in *in) {
  struct rbuf r = {in->buf, MSG_HDR_LEN, 0, false};
  uint16_t mark = r_u16(&r);
  uint8_t flags = r_u8(&r), pad = r_u8(&r);
  in->msg.seq = r_u32(&r);
  r_take(&r, 8); /* tag and stripe: data messages only */
  uint64_t size = r_u64(&r);
  if (mark != MSG_MARK || pad)
    return bad(in, "bytes starting 0x%04llx that are no message header", mark);
  int k = 0;
  while (k < CTRL_KINDS && kinds[k].flag != flags) k++;
  if (k == CTRL_KINDS)
    return bad(in, "a message of a kind this side does not know (flags 0x%02llx)", flags);
  if (size > kinds[k].max)
    return bad(in, "a message body of %llu bytes, beyond its kind's bound", size);
  in->msg.kind = (enum ctrl_kind)k;
  in->want = MSG_HDR_LEN + (size_t)size;
  return CTRL_R_PART;
}

enum ctrl_read ctrl_in_add(struct ctrl_in *in, size_t n) {
  in->got += n;
  if (in->got < in->want) return CTRL_R_PART;
  if (in->want == MSG_HDR_LEN) {
    if (decode_header(in) == CTRL_R_BAD) return CTRL_R_BAD;
    if (in->got < in->want) return CTRL_R_PART;
  }
  in->msg.body = in->buf + MSG_HDR_LEN;
  in->msg.len = in->want - MSG_HDR_LEN;
  return CTRL_R_MSG;
}
