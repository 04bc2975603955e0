/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: what stands between bytes from the network and a log line or
 * a terminal. log_clean (a peer's abort reason, a setting's raw value) must
 * yield no control byte, no DEL, no C1 control and only valid UTF-8, cut
 * within its buffer, and leave printable ASCII as it is. The liveness
 * port's admission test must admit only a well-formed check carrying the
 * token. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "transport/liveness_int.h"

static void check_clean(const char *s, size_t cap) {
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s);
  if (n >= cap) abort();
  for (size_t i = 0; i < n; i++) {
    if (p[i] < 0x20 || p[i] == 0x7f) abort();
    if (p[i] < 0x80) continue;
    size_t len = p[i] >= 0xf0 ? 4 : p[i] >= 0xe0 ? 3 : p[i] >= 0xc2 ? 2 : 0;
    if (!len || i + len > n || p[i] > 0xf4) abort();
    for (size_t k = 1; k < len; k++)
      if ((p[i + k] & 0xc0) != 0x80) abort();
    if (len == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0) abort(); /* C1 */
    i += len - 1;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char out[256];
  size_t cap = size ? 1 + data[0] % sizeof(out) : sizeof(out);
  log_clean(out, cap, (const char *)data, size);
  check_clean(out, cap);
  bool is_ascii = size < cap;
  for (size_t i = 0; i < size && is_ascii; i++) is_ascii = data[i] >= 0x20 && data[i] < 0x7f;
  if (is_ascii && (strlen(out) != size || memcmp(out, data, size))) abort();

  uint8_t frame[LIVE_FRAME_LEN] = {0};
  memcpy(frame, data, size < sizeof(frame) ? size : sizeof(frame));
  uint64_t token = 0;
  for (size_t i = LIVE_FRAME_LEN; i < size && i < LIVE_FRAME_LEN + 8; i++)
    token = token << 8 | data[i];
  struct live_frame f;
  if (live_frame_admits(frame, token, &f)) {
    if (f.type != LIVE_PING || f.token != token) abort();
    uint8_t again[LIVE_FRAME_LEN];
    live_frame_encode(&f, again);
    struct live_frame g;
    if (!live_frame_admits(again, token, &g) || g.seq != f.seq) abort();
  }
  return 0;
}
