/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the RDMA setup records (INFO and STATUS) read from the peer's
 * control connection. A record that decodes re-encodes to one that decodes
 * to the same queue pairs, keys, reason and striped ports. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ib/setup/ib_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < IBREC_HDR_LEN) return 0;
  int type;
  uint32_t len;
  char why[256];
  if (ibrec_decode_header(data, &type, &len, why, sizeof(why))) return 0;
  if (len > size - IBREC_HDR_LEN) len = (uint32_t)(size - IBREC_HDR_LEN);
  struct ibrec r, r2;
  if (ibrec_decode_body(type, data + IBREC_HDR_LEN, len, &r, why, sizeof(why))) return 0;
  if (r.nqps > IBREC_MAX_QPS || r.max_recvs > 8 || r.nports < 0 || r.nports == 1 ||
      r.nports > IBREC_MAX_STRIPE)
    abort();
  for (const char *p = r.reason; *p; p++)
    if (*p < 0x20 || *p > 0x7e) abort();
  static uint8_t out[IBREC_HDR_LEN + IBREC_MAX_BODY];
  size_t n;
  if (ibrec_encode(&r, out, sizeof(out), &n)) abort();
  if (ibrec_decode_header(out, &type, &len, why, sizeof(why)) ||
      ibrec_decode_body(type, out + IBREC_HDR_LEN, len, &r2, why, sizeof(why)))
    abort();
  if (r2.nqps != r.nqps || r2.fifo_addr != r.fifo_addr || r2.cr_rkey != r.cr_rkey ||
      strcmp(r2.reason, r.reason) || r2.is_ok != r.is_ok ||
      memcmp(r2.qpns, r.qpns, sizeof(r.qpns)) || r2.nports != r.nports ||
      memcmp(r2.ports, r.ports, sizeof(r.ports)))
    abort();
  return 0;
}
