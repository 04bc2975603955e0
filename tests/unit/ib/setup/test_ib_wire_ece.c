/* SPDX-License-Identifier: Apache-2.0 */
/* The acceptor's settled ECE in its STATUS record: a trailer after the
 * reason, carried only when set, and a record without it (an older
 * peer's) decodes as "none" rather than failing. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "transport/ib/setup/ib_wire.h"

/* Encodes and decodes r; 0 on success, with the encoded length. */
static int round_trip(const struct ibrec *r, struct ibrec *back, size_t *len) {
  static uint8_t out[IBREC_HDR_LEN + IBREC_MAX_BODY];
  char why[200] = "";
  int type = 0;
  uint32_t body = 0;
  if (ibrec_encode(r, out, sizeof(out), len)) return -1;
  if (ibrec_decode_header(out, &type, &body, why, sizeof(why))) return -2;
  if (ibrec_decode_body(type, out + IBREC_HDR_LEN, body, back, why, sizeof(why))) {
    tap_diag("decode: %s", why);
    return -3;
  }
  return 0;
}

static void status(struct ibrec *r) {
  memset(r, 0, sizeof(*r));
  r->type = IBREC_STATUS, r->is_ok = true;
  snprintf(r->reason, sizeof(r->reason), "fine");
}

static void carried(void) {
  struct ibrec r, back;
  status(&r);
  r.has_ece = true, r.ece_vendor = 0x02c9, r.ece_options = 0x1;
  size_t len;
  CHECK(round_trip(&r, &back, &len) == 0, "round trip");
  CHECK(back.has_ece && back.ece_vendor == 0x02c9 && back.ece_options == 0x1 &&
          !strcmp(back.reason, "fine"),
        "settled ECE decoded: %d vendor 0x%x options 0x%x, reason '%s'", back.has_ece,
        back.ece_vendor, back.ece_options, back.reason);
}

static void absent(void) {
  struct ibrec r, back, with;
  status(&r);
  size_t len, len_with;
  CHECK(round_trip(&r, &back, &len) == 0 && !back.has_ece, "no trailer: none decoded");
  status(&with);
  with.has_ece = true, with.ece_options = 0; /* settled on nothing: still carried */
  CHECK(round_trip(&with, &back, &len_with) == 0 && back.has_ece && len_with == len + 13,
        "the trailer is 13 bytes after the reason (%zu vs %zu), which older decoders skip",
        len_with, len);
}

static void bad_flag(void) {
  struct ibrec r, back;
  status(&r);
  r.has_ece = true;
  static uint8_t out[IBREC_HDR_LEN + IBREC_MAX_BODY];
  size_t len;
  char why[200] = "";
  CHECK(ibrec_encode(&r, out, sizeof(out), &len) == 0, "encode");
  out[len - 13] = 7; /* the trailer's flag byte */
  CHECK(ibrec_decode_body(IBREC_STATUS, out + IBREC_HDR_LEN, len - IBREC_HDR_LEN, &back, why,
                          sizeof(why)) != 0 &&
          strstr(why, "ECE"),
        "a flag other than 0 or 1 is refused by name: %s", why);
}

int main(void) {
  TAP_CASE("settled ECE in a STATUS record: vendor and options survive", carried);
  TAP_CASE("no settled ECE: no trailer, and a record without it decodes as none", absent);
  TAP_CASE("a malformed trailer is refused, named", bad_flag);
  return tap_done();
}
