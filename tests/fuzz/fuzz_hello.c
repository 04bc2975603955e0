/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the hello record (header + TLV body) from the peer, and a
 * listener's refusal record. A hello
 * that decodes must re-encode and decode to the same fields, and every
 * string it yields must be printable (they end up in log lines). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/hello.h"

static void printable(const char *s) {
  for (; *s; s++)
    if (*s < 0x20 || *s > 0x7e) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < HELLO_HDR_LEN) return 0;
  uint32_t len;
  int kind;
  char why[256];
  if (hello_decode_header(data, &kind, &len, why, sizeof(why))) return 0;
  if (len > size - HELLO_HDR_LEN) len = (uint32_t)(size - HELLO_HDR_LEN);
  if (kind == HELLO_REFUSE) { /* a listener's refusal: read by the connector */
    struct hello_refusal r;
    if (hello_decode_refusal(data + HELLO_HDR_LEN, len, &r, why, sizeof(why))) return 0;
    printable(r.host), printable(r.plugin_version), printable(r.reason);
    return 0;
  }
  struct hello h, h2;
  if (hello_decode_body(data + HELLO_HDR_LEN, len, &h, why, sizeof(why))) return 0;
  printable(h.host), printable(h.dev), printable(h.addr), printable(h.plugin_version);
  for (int i = 0; i < h.nknobs; i++) printable(h.knobs[i].name), printable(h.knobs[i].value);
  for (int i = 0; i < h.ntried; i++) printable(h.tried[i].addr), printable(h.tried[i].ifname);
  h.kind = kind;
  static uint8_t out[HELLO_HDR_LEN + HELLO_MAX_BODY];
  size_t n;
  if (hello_encode(&h, out, sizeof(out), &n))
    return 0; /* a record at the size limit may grow
                by canonical re-encoding */
  if (hello_decode_header(out, &kind, &len, why, sizeof(why))) abort();
  if (hello_decode_body(out + HELLO_HDR_LEN, len, &h2, why, sizeof(why))) abort();
  if (h2.nonce != h.nonce || strcmp(h2.host, h.host) || h2.nknobs != h.nknobs || kind != h.kind ||
      h2.ntried != h.ntried)
    abort();
  /* the RDMA details ride with the RDMA block only */
  if (h.ib.is_present && (h2.rdma.has_alts != h.rdma.has_alts || h2.rdma.nalts != h.rdma.nalts ||
                          h2.rdma.repair_mode != h.rdma.repair_mode ||
                          memcmp(h2.rdma.alts, h.rdma.alts, sizeof(h.rdma.alts))))
    abort();
  if (h.ib.is_present && h2.rdma.stripe_ports != h.rdma.stripe_ports) abort(); /* ib_stripe.c */
  /* the ports list may be cut to the room left, never altered */
  if (h.ib.is_present &&
      (h2.rdma.has_ports != h.rdma.has_ports || h2.rdma.nports > h.rdma.nports ||
       memcmp(h2.rdma.ports, h.rdma.ports, sizeof(h.rdma.ports[0]) * (size_t)h2.rdma.nports)))
    abort();
  char diff[4096];
  hello_diff(&h, &h2, diff, sizeof(diff));
  return 0;
}
