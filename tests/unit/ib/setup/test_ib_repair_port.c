/* SPDX-License-Identifier: Apache-2.0 */
/* The hello's ports field and the choice of another port or NIC: the
 * field survives a round trip and a hello without it reads as "no ports";
 * both sides of a pair compute the same pair from the two hellos, in the
 * documented order of preference; a pair on one host, off-plane ports and
 * ports of unknown subnet are never chosen. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/knobs.h"
#include "tap.h"
#include "transport/hello.h"
#include "transport/ib/setup/ib_repair.h"

/* A port on subnet 10.1.<net>.0/24, host number <me>, GID 3 (RoCE v2). */
static void port(struct hello *h, const char *dev, int p, int net, int me, bool is_off) {
  struct hello_port *o = &h->rdma.ports[h->rdma.nports++];
  memset(o, 0, sizeof(*o));
  snprintf(o->dev, sizeof(o->dev), "%s", dev);
  o->port = p, o->mtu = 4096, o->rail = o->plane = -1, o->prefix = 24, o->is_off_plane = is_off;
  o->has_gdr = true;
  o->ngids = 1, o->gids[0].gid_index = 3, o->gids[0].gid_type = 2;
  uint8_t *g = o->gids[0].gid;
  g[10] = g[11] = 0xff, g[12] = 10, g[13] = 1, g[14] = (uint8_t)net, g[15] = (uint8_t)me;
}

/* A rail host: mlx5_2..5 on rails 2..5; NCCL chose dev. */
static void host(struct hello *h, const char *name, int me, int chosen_rail) {
  memset(h, 0, sizeof(*h));
  snprintf(h->host, sizeof(h->host), "%s", name);
  h->ib.is_present = true, h->ib.port = 1, h->ib.link_layer = 2, h->ib.gid_index = 3;
  h->ib.gid_type = 2;
  h->rdma.gid_state = HELLO_GID_POPULATED;
  h->rdma.has_alts = h->rdma.has_ports = true, h->rdma.repair_mode = REPAIR_AUTO;
  for (int r = 2; r <= 5; r++) {
    char dev[16];
    snprintf(dev, sizeof(dev), "mlx5_%d", r);
    port(h, dev, 1, r, me, false);
  }
  snprintf(h->ib.dev, sizeof(h->ib.dev), "mlx5_%d", chosen_rail);
  const struct hello_port *p = ib_repair_port_of(h, h->ib.dev, 1);
  memcpy(h->ib.gid, p->gids[0].gid, 16);
}

static void round_trip(void) {
  struct hello m, back;
  host(&m, "host-a", 5, 2);
  m.kind = HELLO_CONNECT;
  static uint8_t out[HELLO_HDR_LEN + HELLO_MAX_BODY];
  char why[200];
  int kind;
  uint32_t body;
  size_t len;
  memset(&back, 0, sizeof(back));
  CHECK(hello_encode(&m, out, sizeof(out), &len) == 0 &&
          hello_decode_header(out, &kind, &body, why, sizeof(why)) == 0 &&
          hello_decode_body(out + HELLO_HDR_LEN, body, &back, why, sizeof(why)) == 0,
        "round trip: %s", why);
  CHECK(back.rdma.has_ports && back.rdma.nports == 4 &&
          !memcmp(back.rdma.ports, m.rdma.ports, sizeof(m.rdma.ports[0]) * 4),
        "ports decoded: %d", back.rdma.nports);
  m.rdma.has_ports = false;
  memset(&back, 0, sizeof(back));
  hello_encode(&m, out, sizeof(out), &len);
  hello_decode_header(out, &kind, &body, why, sizeof(why));
  hello_decode_body(out + HELLO_HDR_LEN, body, &back, why, sizeof(why));
  CHECK(!back.rdma.has_ports && !back.rdma.nports, "no field: no ports");
}

/* Both sides' view of the pair (a sends, b receives). */
static void both(const struct hello *a, const struct hello *b, struct ib_repair *ra,
                 struct ib_repair *rb) {
  ib_repair_choose(a, b, true, ra);
  ib_repair_choose(b, a, false, rb);
  CHECK(!memcmp(ra->pick, rb->pick, sizeof(ra->pick)) && !memcmp(ra->end, rb->end, sizeof(ra->end)),
        "both sides choose the same pair");
}

static void cross_rail(void) {
  struct hello a, b;
  struct ib_repair ra, rb;
  host(&a, "host-b", 6, 3), host(&b, "host-a", 5, 2);
  both(&a, &b, &ra, &rb);
  CHECK(ra.is_broken && ra.is_found && ra.is_applied && ra.cause == IB_REPAIR_CROSS_RAIL,
        "cross-rail: broken %d found %d", ra.is_broken, ra.is_found);
  CHECK(!ra.end[0].is_moved && ra.end[1].is_moved && !strcmp(ra.end[1].dev, "mlx5_3"),
        "the sender kept, the receiver moved to the sender's rail: %s", ra.end[1].dev);
  /* a second port on the receiver's own NIC on the sender's rail comes first */
  port(&b, "mlx5_2", 2, 3, 5, false);
  both(&a, &b, &ra, &rb);
  CHECK(ra.end[1].is_moved && !strcmp(ra.end[1].dev, "mlx5_2") && ra.end[1].port == 2,
        "another port of the same NIC first: %s port %d", ra.end[1].dev, ra.end[1].port);
}

/* A port without GPUDirect never replaces NCCL's port that has it: the
 * other side moves instead. */
static void gpudirect(void) {
  struct hello a, b;
  struct ib_repair ra, rb;
  host(&a, "host-b", 6, 3), host(&b, "host-a", 5, 2);
  b.rdma.ports[1].has_gdr = false; /* host-a's mlx5_3 */
  both(&a, &b, &ra, &rb);
  CHECK(ra.is_found && ra.end[0].is_moved && !strcmp(ra.end[0].dev, "mlx5_2") &&
          !ra.end[1].is_moved,
        "the sender moves to mlx5_2 instead: %s / %s", ra.end[0].dev, ra.end[1].dev);
}

static void storage_and_unknown(void) {
  struct hello a, b;
  struct ib_repair ra, rb;
  host(&a, "host-b", 6, 2), host(&b, "host-a", 5, 2);
  port(&b, "mlx5_bond_0", 1, 0, 5, true);
  snprintf(b.ib.dev, sizeof(b.ib.dev), "mlx5_bond_0");
  memcpy(b.ib.gid, b.rdma.ports[4].gids[0].gid, 16);
  b.ib.is_off_plane = true;
  both(&a, &b, &ra, &rb);
  CHECK(ra.cause == IB_REPAIR_OFF_PLANE && !strcmp(ra.end[1].dev, "mlx5_2") && !ra.end[0].is_moved,
        "the storage NIC moves to the peer's rail: %s", ra.end[1].dev);
  host(&a, "host-b", 6, 3), host(&b, "host-a", 5, 2);
  for (int i = 0; i < a.rdma.nports; i++) a.rdma.ports[i].prefix = -1;
  both(&a, &b, &ra, &rb);
  CHECK(!ra.is_broken, "subnets unknown: not called broken");
  host(&a, "host-a", 5, 3), host(&b, "host-a", 5, 2);
  both(&a, &b, &ra, &rb);
  CHECK(!ra.is_broken, "two NICs of one host: NCCL's intra-node pair, left alone");
}

/* NCCL's ports share a subnet through another GID of one of them: the
 * same ports, the other GID, named as a GID problem with its fix. */
static void gid_subnet(void) {
  struct hello a, b;
  struct ib_repair ra, rb;
  host(&a, "host-b", 6, 3), host(&b, "host-a", 5, 3);
  struct hello_port *p = &a.rdma.ports[1]; /* host-b's mlx5_3: GID 3 on 10.1.9.6, GID 1 on rail 3 */
  p->gids[1] = p->gids[0];
  p->gids[1].gid_index = 1;
  p->gids[0].gid[14] = 9;
  p->ngids = 2;
  memcpy(a.ib.gid, p->gids[0].gid, 16);
  both(&a, &b, &ra, &rb);
  CHECK(ra.is_found && ra.cause == IB_REPAIR_GID && !ra.end[0].is_moved && !ra.end[1].is_moved &&
          ra.pick[0].gid_index == 1 && strstr(ra.broken, "are on different subnets"),
        "the same ports, GID 1: %s", ra.broken);
}

/* RTR failed on a pair that looked right: both sides choose the same next
 * pair, never the same two ports again, and stop after the last try. */
static void rtr_next(void) {
  struct hello a, b, na, nb;
  struct ib_repair ra, rb;
  host(&a, "host-b", 6, 3), host(&b, "host-a", 5, 3);
  both(&a, &b, &ra, &rb);
  CHECK(!ra.is_broken, "one rail: nothing to repair before RTR");
  na = a, nb = b;
  const char *want[] = {"mlx5_2", "mlx5_4", "mlx5_5"};
  for (int i = 0; i < IB_REPAIR_MAX_TRIES; i++) {
    bool ka = ib_repair_next(&ra, &a, &b, &na, &nb, true);
    bool kb = ib_repair_next(&rb, &b, &a, &nb, &na, false);
    CHECK(ka && kb && !memcmp(ra.end, rb.end, sizeof(ra.end)) && ra.cause == IB_REPAIR_RTR,
          "try %d: the same next pair on both sides", i);
    CHECK(!strcmp(ra.end[0].dev, want[i]) && !strcmp(ra.end[1].dev, want[i]),
          "try %d: both on %s: %s, %s", i, want[i], ra.end[0].dev, ra.end[1].dev);
    na = a, nb = b;
    ib_repair_apply(&ra, true, &na, &nb);
  }
  CHECK(!ib_repair_next(&ra, &a, &b, &na, &nb, true), "no more tries after the last");
  host(&a, "host-b", 6, 3), host(&b, "host-a", 5, 3);
  b.rdma.repair_mode = REPAIR_WARN;
  both(&a, &b, &ra, &rb);
  CHECK(!ib_repair_next(&ra, &a, &b, &a, &b, true), "warn on one side: no repair at RTR");
}

static void no_path(void) {
  struct hello a, b;
  struct ib_repair ra, rb;
  host(&a, "host-b", 6, 3), host(&b, "host-a", 5, 2);
  a.rdma.nports = 0, b.rdma.nports = 0;
  port(&a, "mlx5_3", 1, 3, 6, false), port(&b, "mlx5_2", 1, 2, 5, false);
  both(&a, &b, &ra, &rb);
  CHECK(ra.is_broken && !ra.is_found && !ra.is_applied, "no port reaches: broken, none found");
  b.rdma.has_ports = false; /* an older peer */
  both(&a, &b, &ra, &rb);
  CHECK(!ra.is_broken, "a peer without ports: as before");
}

int main(void) {
  TAP_CASE("the ports field: round trip, absent reads as none", round_trip);
  TAP_CASE("cross-rail: the same pair on both sides, the same NIC first", cross_rail);
  TAP_CASE("GPUDirect is never lost to a move", gpudirect);
  TAP_CASE("another GID of NCCL's ports on one subnet: a GID repair", gid_subnet);
  TAP_CASE("a storage NIC moves; unknown subnets and one host left alone", storage_and_unknown);
  TAP_CASE("no port reaches, or a peer without ports", no_path);
  TAP_CASE("repair at RTR: the same next pair, never the same ports twice", rtr_next);
  return tap_done();
}
