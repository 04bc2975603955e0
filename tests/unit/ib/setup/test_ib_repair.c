/* SPDX-License-Identifier: Apache-2.0 */
/* The hello's alternatives field and the repair's choice: the field
 * survives a round trip, a hello without it (an older peer's) decodes as
 * "no alternatives", and both sides of a pair compute the same GID pair
 * from the two hellos. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/knobs.h"
#include "tap.h"
#include "transport/hello.h"
#include "transport/ib/setup/ib_repair.h"

static void v4gid(uint8_t *g, int a, int b, int c, int d) {
  memset(g, 0, 16);
  g[10] = g[11] = 0xff, g[12] = (uint8_t)a, g[13] = (uint8_t)b, g[14] = (uint8_t)c;
  g[15] = (uint8_t)d;
}

static void add(struct hello *h, int index, int type, const uint8_t *gid) {
  struct hello_alt *a = &h->rdma.alts[h->rdma.nalts++];
  a->port = 1, a->gid_index = index, a->gid_type = type;
  memcpy(a->gid, gid, 16);
}

/* pod-a: 0/1 link-local, 4/5 10.50.0.21 v1/v2; pod-b: 6/7 10.50.0.22. */
static void pod(struct hello *h, bool is_a, int index) {
  memset(h, 0, sizeof(*h));
  h->kind = HELLO_CONNECT, h->nonce = 7, h->pid = 1;
  strcpy(h->plugin_version, "0.1.0"), strcpy(h->host, is_a ? "pod-a" : "pod-b");
  h->ib.is_present = true, strcpy(h->ib.dev, "mlx5_0"), h->ib.port = 1, h->ib.link_layer = 2;
  h->rdma.has_alts = true, h->rdma.repair_mode = REPAIR_AUTO;
  uint8_t g[16], ll[16] = {0xfe, 0x80, [15] = 1};
  v4gid(g, 10, 50, 0, is_a ? 21 : 22);
  if (is_a) add(h, 0, 1, ll), add(h, 1, 2, ll), add(h, 4, 1, g), add(h, 5, 2, g);
  else add(h, 6, 1, g), add(h, 7, 2, g);
  h->ib.gid_index = index;
  h->rdma.gid_state = HELLO_GID_EMPTY;
  for (int i = 0; i < h->rdma.nalts; i++)
    if (h->rdma.alts[i].gid_index == index) {
      h->rdma.gid_state = HELLO_GID_POPULATED;
      h->ib.gid_type = h->rdma.alts[i].gid_type;
      memcpy(h->ib.gid, h->rdma.alts[i].gid, 16);
    }
}

static int round_trip(const struct hello *m, struct hello *back, size_t *len) {
  static uint8_t out[HELLO_HDR_LEN + HELLO_MAX_BODY];
  char why[200] = "";
  int kind = 0;
  uint32_t body = 0;
  if (hello_encode(m, out, sizeof(out), len)) return -1;
  if (hello_decode_header(out, &kind, &body, why, sizeof(why))) return -2;
  return hello_decode_body(out + HELLO_HDR_LEN, body, back, why, sizeof(why)) ? -3 : 0;
}

static void carried(void) {
  struct hello m, back;
  pod(&m, true, 5);
  m.rdma.repair_mode = REPAIR_WARN;
  size_t len;
  CHECK(round_trip(&m, &back, &len) == 0, "round trip");
  CHECK(back.rdma.has_alts && back.rdma.nalts == 4 && back.rdma.repair_mode == REPAIR_WARN &&
          !memcmp(back.rdma.alts, m.rdma.alts, sizeof(m.rdma.alts[0]) * 4),
        "alternatives decoded: %d, %d entries, mode %d", back.rdma.has_alts, back.rdma.nalts,
        back.rdma.repair_mode);
}

static void absent(void) {
  struct hello m, back, with;
  pod(&with, true, 5);
  m = with;
  m.rdma.has_alts = false;
  size_t len, len_with;
  CHECK(round_trip(&m, &back, &len) == 0 && !back.rdma.has_alts && !back.rdma.nalts,
        "no field: no alternatives");
  CHECK(round_trip(&with, &back, &len_with) == 0 && len_with == len + 4 + 1 + 4 * 20,
        "one optional field (%zu vs %zu bytes): older peers skip it", len_with, len);
  struct hello b;
  pod(&b, false, 5);
  struct ib_repair r;
  ib_repair_choose(&m, &b, true, &r);
  CHECK(r.is_broken && !r.is_found && !r.is_applied, "a peer without alternatives: no repair");
}

/* Each case: pod-a's and pod-b's index, and the pair both must pick. */
static void agree(void) {
  /* empty on pod-b; v1 against v2; link-local; both v1 (reaches); empty on
   * both (both move) */
  static const int t[][4] = {{5, 5, 5, 7}, {4, 7, 5, 7}, {1, 7, 5, 7}, {4, 6, 4, 6}, {3, 5, 5, 7}};
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    struct hello a, b;
    pod(&a, true, t[i][0]);
    pod(&b, false, t[i][1]);
    struct ib_repair ra, rb; /* pod-a receives, pod-b sends */
    ib_repair_choose(&a, &b, false, &ra);
    ib_repair_choose(&b, &a, true, &rb);
    bool is_same = !memcmp(ra.pick, rb.pick, sizeof(ra.pick)) && ra.is_applied == rb.is_applied;
    if (t[i][2] == t[i][0] && t[i][3] == t[i][1]) {
      CHECK(!ra.is_broken && !rb.is_broken, "%d/%d reaches: nothing to repair", t[i][0], t[i][1]);
      continue;
    }
    CHECK(is_same && ra.is_applied && ra.pick[1].gid_index == t[i][2] &&
            ra.pick[0].gid_index == t[i][3],
          "%d/%d: both sides pick %d/%d (got %d/%d and %d/%d)", t[i][0], t[i][1], t[i][2], t[i][3],
          ra.pick[1].gid_index, ra.pick[0].gid_index, rb.pick[1].gid_index, rb.pick[0].gid_index);
  }
}

/* pod-a offers only RoCE v2, pod-b only v1: the pair is broken and no
 * other pair reaches, so nothing is applied (the WARN says none does). */
static void none_reaches(void) {
  struct hello a, b;
  pod(&a, true, 5);
  pod(&b, false, 6);
  a.rdma.nalts = 0;
  uint8_t g[16];
  v4gid(g, 10, 50, 0, 21);
  add(&a, 5, 2, g);
  b.rdma.nalts = 1; /* 6, v1 */
  struct ib_repair r;
  ib_repair_choose(&a, &b, false, &r);
  CHECK(r.is_broken && !r.is_found && !r.is_applied, "v2 only against v1 only: no pair reaches");
  /* with warn on one side the pair is found and named, not applied */
  pod(&a, true, 5);
  pod(&b, false, 5);
  b.rdma.repair_mode = REPAIR_WARN;
  ib_repair_choose(&a, &b, false, &r);
  CHECK(r.is_found && !r.is_applied, "warn on one side: found, not applied");
}

int main(void) {
  TAP_CASE("the GIDs a pair could move to, in the hello: they survive", carried);
  TAP_CASE("no alternatives field (an older peer): decodes as none, no repair", absent);
  TAP_CASE("both sides choose the same pair from the two hellos", agree);
  TAP_CASE("no GID pair reaches, or warn on one side: nothing applied", none_reaches);
  return tap_done();
}
