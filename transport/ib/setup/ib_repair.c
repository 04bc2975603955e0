/* SPDX-License-Identifier: Apache-2.0 */
/* Which GID pair carries a RoCE connection whose configured pair cannot
 * reach (see ib_repair.h); other ports are ib_repair_port.c's. Broken before RTR: an index that
 * holds no GID on one side, a link-local GID against a routable one (it never leaves its L2
 * segment), RoCE v1 against v2. Among the two ports' other GIDs, a pair of one RoCE version,
 * neither link-local, of one address family; ranked: the fewest sides changed, RoCE v2 before v1,
 * the longest common address prefix (the same subnet first), then the lowest indexes. Every input
 * is in both hellos, so both sides pick the same pair. */
#include <stdio.h>
#include <string.h>

#include "common/knobs.h"
#include "transport/ib/dev/ib.h"
#include "transport/ib/setup/ib_repair.h"

void ib_repair_prefs_read(bool *is_offered, int *mode) {
  *mode = transport_prefs()->repair;
  *is_offered = *mode != REPAIR_OFF;
}

static bool is_link_local(const uint8_t *g) { return g[0] == 0xfe && (g[1] & 0xc0) == 0x80; }
static bool is_v4_mapped(const uint8_t *g) {
  static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return !memcmp(g, pfx, 12);
}
static bool is_empty(const struct hello *h) {
  return h->rdma.gid_state == HELLO_GID_EMPTY || h->rdma.gid_state == HELLO_GID_MISSING;
}

static int common_bits(const uint8_t *a, const uint8_t *b) {
  int n = 0;
  for (int i = 0; i < 16; i++) {
    uint8_t x = a[i] ^ b[i];
    if (!x) {
      n += 8;
      continue;
    }
    return n + __builtin_clz((unsigned)x) - 24;
  }
  return n;
}

/* "NCCL_IB_GID_INDEX=5 is empty on pod-b (10.50.0.22), mlx5_0 port 1" and the
 * like; empty when the configured pair may reach. */
static void say_broken(const struct hello *s, const struct hello *r, char *out, size_t cap) {
  out[0] = 0;
  const struct hello *at = is_empty(s) ? s : is_empty(r) ? r : NULL;
  char name[160];
  if (at) {
    ib_peer_name(at, name, sizeof(name));
    snprintf(out, cap, "GID index %d is %s on %s, %s port %d", at->ib.gid_index,
             at->rdma.gid_state == HELLO_GID_EMPTY ? "empty" : "past the end of the GID table",
             name, at->ib.dev, at->ib.port);
    return;
  }
  bool lls = is_link_local(s->ib.gid), llr = is_link_local(r->ib.gid);
  if (lls != llr) {
    at = lls ? s : r;
    ib_peer_name(at, name, sizeof(name));
    snprintf(out, cap,
             "GID index %d of %s port %d on %s is link-local, which never routes between hosts",
             at->ib.gid_index, at->ib.dev, at->ib.port, name);
    return;
  }
  if (s->ib.gid_type && r->ib.gid_type && s->ib.gid_type != r->ib.gid_type) {
    char a[160], b[160];
    ib_peer_name(s, a, sizeof(a));
    ib_peer_name(r, b, sizeof(b));
    snprintf(out, cap,
             "GID index %d on %s is RoCE v%d and GID index %d on %s is RoCE v%d, and the two "
             "versions do not interoperate",
             s->ib.gid_index, a, s->ib.gid_type, r->ib.gid_index, b, r->ib.gid_type);
  }
}

/* A GID of h's port fit to carry a RoCE pair. */
static bool is_usable(const struct hello *h, const struct hello_alt *a) {
  return a->port == h->ib.port && (a->gid_type == 1 || a->gid_type == 2) && !is_link_local(a->gid);
}

static long rank(const struct hello *s, const struct hello *r, const struct hello_alt *a,
                 const struct hello_alt *b) {
  int changed = (a->gid_index != s->ib.gid_index) + (b->gid_index != r->ib.gid_index);
  return (long)(2 - changed) << 40 | (long)(a->gid_type == 2) << 32 |
         (long)common_bits(a->gid, b->gid) << 24 | (long)(255 - (a->gid_index & 0xff)) << 8 |
         (long)(255 - (b->gid_index & 0xff));
}

static void choose(const struct hello *s, const struct hello *r, struct ib_repair *out) {
  long best = -1;
  for (int i = 0; i < s->rdma.nalts; i++) {
    const struct hello_alt *a = &s->rdma.alts[i];
    if (!is_usable(s, a)) continue;
    for (int j = 0; j < r->rdma.nalts; j++) {
      const struct hello_alt *b = &r->rdma.alts[j];
      if (!is_usable(r, b) || a->gid_type != b->gid_type ||
          is_v4_mapped(a->gid) != is_v4_mapped(b->gid))
        continue;
      long k = rank(s, r, a, b);
      if (k <= best) continue;
      best = k;
      out->pick[0] = *a;
      out->pick[1] = *b;
      out->is_found = true;
    }
  }
}

void ib_repair_choose(const struct hello *mine, const struct hello *peer, bool is_send,
                      struct ib_repair *r) {
  memset(r, 0, sizeof(*r));
  const struct hello *s = is_send ? mine : peer, *v = is_send ? peer : mine;
  if (!s->ib.is_present || !v->ib.is_present || s->ib.link_layer != 2 || v->ib.link_layer != 2)
    return;
  say_broken(s, v, r->broken, sizeof(r->broken));
  r->is_broken = r->broken[0] != 0;
  r->cause = IB_REPAIR_GID;
  if (r->is_broken && s->rdma.has_alts && v->rdma.has_alts) choose(s, v, r);
  if (!r->is_found) ib_repair_port_choose(s, v, r); /* other ports, or NCCL's ports break */
  if (!r->is_broken || !s->rdma.has_alts || !v->rdma.has_alts) return;
  r->is_applied =
    r->is_found && s->rdma.repair_mode == REPAIR_AUTO && v->rdma.repair_mode == REPAIR_AUTO;
}

static void point(struct hello *h, const struct hello_alt *a) {
  h->ib.gid_index = a->gid_index;
  h->ib.gid_type = a->gid_type;
  memcpy(h->ib.gid, a->gid, 16);
  h->rdma.gid_state = HELLO_GID_POPULATED;
}

void ib_repair_apply(const struct ib_repair *r, bool is_send, struct hello *mine,
                     struct hello *peer) {
  point(mine, &r->pick[is_send ? 0 : 1]);
  point(peer, &r->pick[is_send ? 1 : 0]);
  ib_repair_port_apply(&r->end[is_send ? 0 : 1], mine);
  ib_repair_port_apply(&r->end[is_send ? 1 : 0], peer);
}
