/* SPDX-License-Identifier: Apache-2.0 */
/* A striped side's ports in its INFO record: a trailer after the ECE one
 * (written then even without ECE, so an older decoder reads "no ECE" and
 * stops), each port whole; a count of 1 or past 8, or a port cut short,
 * is refused by name. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "transport/ib/setup/ib_wire.h"

static uint8_t out[IBREC_HDR_LEN + IBREC_MAX_BODY];

static void info(struct ibrec *r, int nports) {
  memset(r, 0, sizeof(*r));
  r->type = IBREC_INFO, r->is_ok = true, r->nqps = 2, r->qpns[0] = 0x11, r->qpns[1] = 0x12;
  r->flags = nports ? IBREC_F_STRIPE : 0;
  r->nports = nports;
  for (int i = 0; i < nports; i++) {
    r->ports[i].gid[15] = (uint8_t)(i + 1);
    r->ports[i].lid = (uint32_t)(10 + i), r->ports[i].mtu = 4096,
    r->ports[i].cr_rkey = 0x70u + (uint32_t)i;
  }
}

static int decode(size_t len, struct ibrec *back, char *why, size_t cap) {
  return ibrec_decode_body(IBREC_INFO, out + IBREC_HDR_LEN, len - IBREC_HDR_LEN, back, why, cap);
}

static void carried(void) {
  struct ibrec r, back;
  info(&r, 3);
  size_t len;
  char why[200] = "";
  CHECK(ibrec_encode(&r, out, sizeof(out), &len) == 0 && decode(len, &back, why, sizeof(why)) == 0,
        "round trip: %s", why);
  CHECK(back.nports == 3 && !back.has_ece && back.ports[2].cr_rkey == 0x72 &&
          back.ports[1].lid == 11 && back.ports[2].gid[15] == 3 && (back.flags & IBREC_F_STRIPE),
        "3 ports back, each whole (ports %d)", back.nports);
}

static void older_decoder(void) {
  struct ibrec r, plain;
  info(&plain, 0);
  info(&r, 2);
  size_t len, len_plain;
  CHECK(ibrec_encode(&plain, out, sizeof(out), &len_plain) == 0, "encode");
  CHECK(ibrec_encode(&r, out, sizeof(out), &len) == 0, "encode");
  /* what a decoder that knows the ECE trailer only reads: its flag byte, 0 */
  CHECK(len == len_plain + 13 + 1 + 2 * IBREC_PORT_LEN && out[len_plain] == 0,
        "the ports follow a 13-byte ECE trailer saying none (%zu vs %zu bytes)", len, len_plain);
}

static void refused(void) {
  struct ibrec r, back;
  char why[200] = "";
  size_t len;
  info(&r, 2);
  CHECK(ibrec_encode(&r, out, sizeof(out), &len) == 0, "encode");
  CHECK(decode(len - 1, &back, why, sizeof(why)) != 0 && strstr(why, "striped ports"),
        "a port cut short is refused by name: %s", why);
  size_t at = len - 2 * IBREC_PORT_LEN - 1; /* the count */
  out[at] = 1;
  CHECK(decode(len, &back, why, sizeof(why)) != 0 && strstr(why, "striped ports"),
        "a count of 1 is refused: %s", why);
  out[at] = 9;
  CHECK(decode(len, &back, why, sizeof(why)) != 0, "a count of 9 is refused");
  info(&r, IBREC_MAX_STRIPE);
  r.nports = IBREC_MAX_STRIPE + 1; /* one past what the record holds */
  CHECK(ibrec_encode(&r, out, sizeof(out), &len) == EMSGSIZE, "9 ports do not encode");
}

int main(void) {
  TAP_CASE("a striped side's ports survive the INFO record", carried);
  TAP_CASE("after an ECE trailer saying none, which older decoders stop at", older_decoder);
  TAP_CASE("a count out of range or a port cut short is refused, named", refused);
  return tap_done();
}
