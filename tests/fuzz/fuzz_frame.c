/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the fixed frames read from sockets: the 24-byte preamble every
 * incoming socket starts with, the message header (including abort
 * notices) on control sockets, and the liveness check's frame. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/frame.h"
#include "transport/liveness_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t buf[PREAMBLE_LEN > MSG_HDR_LEN ? PREAMBLE_LEN : MSG_HDR_LEN] = {0};
  memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
  char why[256];
  struct preamble p;
  if (preamble_decode(buf, &p, why, sizeof(why)) == 0) {
    uint8_t out[PREAMBLE_LEN];
    preamble_encode(&p, out);
    if (memcmp(out, buf, PREAMBLE_LEN)) abort();
    if (p.role == ROLE_DATA && p.index >= 64) abort();
  }
  struct msg_hdr h;
  if (msg_hdr_decode(buf, &h, why, sizeof(why)) == 0) {
    if (h.size > (1ULL << 40)) abort();
    if ((h.flags & MSG_F_ABORT) && h.size > MSG_ABORT_MAX) abort();
    if (!(h.flags & (MSG_F_INLINE | MSG_F_ABORT)) && h.size && !h.chunk) abort();
    uint8_t out[MSG_HDR_LEN];
    msg_hdr_encode(&h, out);
    if (memcmp(out, buf, MSG_HDR_LEN)) abort();
  }
  _Static_assert(LIVE_FRAME_LEN <= sizeof(buf), "the liveness frame fits");
  struct live_frame f;
  if (live_frame_decode(buf, &f) == 0 && (f.type < LIVE_PING || f.type > LIVE_ROOT6)) abort();
  return 0;
}
