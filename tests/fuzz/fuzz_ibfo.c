/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the port fail-over messages read from the peer's control
 * connection, through the control channel's decoder (transport/ctrl.h)
 * as the reader feeds it, then the message decoder (transport/ib/setup/ib_wire.h).
 * The first byte picks how the bytes arrive (pieces of 1 to 32 bytes);
 * the rest goes in twice: as raw bytes (any header at all), and framed as
 * a fail-over message. A message that decodes re-encodes to one that
 * decodes to the same fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ctrl.h"
#include "transport/ib/setup/ib_wire.h"

static void check_fo(const uint8_t *data, size_t size) {
  struct ib_fo_msg m, m2;
  char why[256];
  if (ib_fo_decode(data, size, &m, why, sizeof(why))) return;
  if (m.npending < 0 || m.npending > IB_FO_MAX_PENDING || m.kind < IB_FO_HINT || m.kind > IB_FO_NAK)
    abort();
  for (const char *p = m.text; *p; p++)
    if (*p < 0x20 || *p > 0x7e) abort();
  static uint8_t out[4096];
  size_t n;
  if (ib_fo_encode(&m, out, sizeof(out), &n)) abort();
  if (ib_fo_decode(out, n, &m2, why, sizeof(why))) abort();
  if (m2.kind != m.kind || m2.qpn != m.qpn || m2.rkey != m.rkey || m2.addr != m.addr ||
      m2.npending != m.npending || memcmp(m2.pending, m.pending, sizeof(m.pending)) ||
      strcmp(m2.port, m.port) || strcmp(m2.text, m.text) || memcmp(m2.gid, m.gid, 16))
    abort();
}

/* Feeds bytes in pieces of at most step: every whole message goes on. */
static void feed(const uint8_t *data, size_t size, size_t step) {
  static struct ctrl_in in;
  ctrl_in_reset(&in);
  size_t off = 0;
  while (off < size) {
    size_t need = ctrl_in_need(&in), n = size - off;
    if (!need || need > sizeof(in.buf) - in.got) abort(); /* the decoder asks within its buffer */
    if (n > need) n = need;
    if (n > step) n = step;
    memcpy(ctrl_in_space(&in), data + off, n);
    off += n;
    enum ctrl_read st = ctrl_in_add(&in, n);
    if (st == CTRL_R_BAD) {
      if (!in.why[0]) abort(); /* a refusal says why */
      return;
    }
    if (st != CTRL_R_MSG) continue;
    if (in.msg.kind >= CTRL_KINDS || in.msg.len != in.got - MSG_HDR_LEN) abort();
    if (in.msg.kind == CTRL_FAILOVER) check_fo(in.msg.body, in.msg.len);
    ctrl_in_reset(&in);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!size) return 0;
  size_t step = (size_t)(data[0] % 32) + 1;
  data++, size--;
  feed(data, size, step);
  if (size > MSG_FAILOVER_MAX) return 0;
  static uint8_t framed[MSG_HDR_LEN + MSG_FAILOVER_MAX];
  struct msg_hdr h = {MSG_F_FAILOVER, 0, 0, 0, size};
  msg_hdr_encode(&h, framed);
  memcpy(framed + MSG_HDR_LEN, data, size);
  feed(framed, MSG_HDR_LEN + size, step);
  return 0;
}
