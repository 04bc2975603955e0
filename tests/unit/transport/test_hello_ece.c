/* SPDX-License-Identifier: Apache-2.0 */
/* The hello's enhanced connection establishment field: carried when the
 * device offers ECE, absent otherwise, and a hello without it (an older
 * peer's) decodes as "no ECE" rather than failing. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "transport/hello.h"

static void base(struct hello *m) {
  memset(m, 0, sizeof(*m));
  m->kind = HELLO_CONNECT, m->nccl_version = 22809, m->pid = 4242, m->nonce = 7;
  strcpy(m->plugin_version, "0.1.0");
  strcpy(m->host, "host-a"), strcpy(m->dev, "mlx5_2"), strcpy(m->transport, "ib");
  m->ib.is_present = 1, strcpy(m->ib.dev, "mlx5_2"), m->ib.port = 1, m->ib.mtu = 4096;
}

/* Encodes and decodes m; 0 on success. */
static int round_trip(const struct hello *m, struct hello *back, size_t *len) {
  static uint8_t out[HELLO_HDR_LEN + HELLO_MAX_BODY];
  char why[200] = "";
  int kind = 0;
  uint32_t body = 0;
  if (hello_encode(m, out, sizeof(out), len)) return -1;
  if (hello_decode_header(out, &kind, &body, why, sizeof(why))) return -2;
  if (hello_decode_body(out + HELLO_HDR_LEN, body, back, why, sizeof(why))) {
    tap_diag("decode: %s", why);
    return -3;
  }
  return 0;
}

static void carried(void) {
  struct hello m, back;
  base(&m);
  m.rdma.has_ece = true, m.rdma.ece_vendor = 0x02c9, m.rdma.ece_options = 0x30000003;
  size_t len;
  CHECK(round_trip(&m, &back, &len) == 0, "round trip");
  CHECK(back.rdma.has_ece && back.rdma.ece_vendor == 0x02c9 &&
          back.rdma.ece_options == 0x30000003 && back.rdma.ece_comp_mask == 0,
        "ECE decoded: %d vendor 0x%x options 0x%x", back.rdma.has_ece, back.rdma.ece_vendor,
        back.rdma.ece_options);
}

static void absent(void) {
  struct hello m, back, with;
  base(&m);
  size_t len, len_with;
  CHECK(round_trip(&m, &back, &len) == 0 && !back.rdma.has_ece, "no ECE field: none decoded");
  base(&with);
  with.rdma.has_ece = true;
  CHECK(round_trip(&with, &back, &len_with) == 0 && len_with == len + 16,
        "the field is one optional TLV of 16 bytes (%zu vs %zu): older peers skip it", len_with,
        len);
}

int main(void) {
  TAP_CASE("ECE options in the hello: vendor, options and mask survive", carried);
  TAP_CASE("no ECE: no field, and a hello without it decodes as no ECE", absent);
  return tap_done();
}
