/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the port fail-over messages read from the peer's control
 * connection (transport/ib/setup/ib_wire.h). A message that decodes re-encodes
 * to one that decodes to the same fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ib/setup/ib_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct ib_fo_msg m, m2;
  char why[256];
  if (ib_fo_decode(data, size, &m, why, sizeof(why))) return 0;
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
  return 0;
}
