/* SPDX-License-Identifier: Apache-2.0 */
/* The ports field of the hello (hello.h): a count, then per port a u16
 * length and the entry, so a newer peer can lengthen entries and an older
 * one skips what it does not know. An entry: name (u8 length, bytes), port
 * u8, MTU u16, rail u8, plane u8, prefix u8 (0xff: unknown), flags u8
 * (1 off-plane, 2 GPUDirect), netdev (u8 length, bytes), GID count u8, then
 * per GID index u16, type u8, GID 16. */
#include <string.h>

#include "transport/hello.h"
#include "transport/wire.h"

#define GID_LEN (2 + 1 + 16)

static uint8_t small(int v) { return v < 0 || v > 254 ? 0xff : (uint8_t)v; }
static int unsmall(uint8_t v) { return v == 0xff ? -1 : v; }

static void put_str(struct wbuf *t, const char *s, size_t cap) {
  size_t n = strnlen(s, cap - 1);
  w_u8(t, (uint8_t)n);
  w_bytes(t, s, n);
}

static size_t put_port(const struct hello_port *p, uint8_t *b, size_t cap) {
  struct wbuf t = {b, cap, 0, 0};
  put_str(&t, p->dev, sizeof(p->dev));
  w_u8(&t, (uint8_t)p->port);
  w_u16(&t, (uint16_t)p->mtu);
  w_u8(&t, small(p->rail));
  w_u8(&t, small(p->plane));
  w_u8(&t, small(p->prefix));
  w_u8(&t, (uint8_t)((p->is_off_plane ? 1 : 0) | (p->has_gdr ? 2 : 0)));
  put_str(&t, p->netdev, sizeof(p->netdev));
  int n = p->ngids < HELLO_MAX_PORT_GIDS ? p->ngids : HELLO_MAX_PORT_GIDS;
  w_u8(&t, (uint8_t)n);
  for (int i = 0; i < n; i++) {
    w_u16(&t, (uint16_t)p->gids[i].gid_index);
    w_u8(&t, (uint8_t)p->gids[i].gid_type);
    w_bytes(&t, p->gids[i].gid, 16);
  }
  return t.has_overflow ? 0 : t.len;
}

size_t hello_ports_encode(const struct hello_rdma *r, uint8_t *out, size_t cap) {
  struct wbuf w = {out, cap, 0, 0};
  int n = r->nports < HELLO_MAX_PORTS ? r->nports : HELLO_MAX_PORTS;
  w_u8(&w, 0);
  int done = 0;
  for (int i = 0; i < n; i++) {
    uint8_t b[256];
    size_t len = put_port(&r->ports[i], b, sizeof(b));
    if (!len || w.len + 2 + len > cap) break; /* what fits: the first ports are NCCL's first */
    w_u16(&w, (uint16_t)len);
    w_bytes(&w, b, len);
    done++;
  }
  if (w.has_overflow || cap < 1) return 0;
  out[0] = (uint8_t)done;
  return w.len;
}

static void take_str(struct rbuf *f, char *dst, size_t cap) {
  uint8_t n = r_u8(f);
  const uint8_t *s = r_take(f, n);
  if (s) wire_clean_str(dst, cap, s, n);
}

/* 0, or EPROTO when the entry is cut short. */
static int take_port(const uint8_t *v, size_t len, struct hello_port *p) {
  struct rbuf f = {v, len, 0, 0};
  memset(p, 0, sizeof(*p));
  take_str(&f, p->dev, sizeof(p->dev));
  p->port = r_u8(&f);
  p->mtu = r_u16(&f);
  p->rail = unsmall(r_u8(&f));
  p->plane = unsmall(r_u8(&f));
  p->prefix = unsmall(r_u8(&f));
  uint8_t flags = r_u8(&f);
  p->is_off_plane = flags & 1;
  p->has_gdr = (flags & 2) != 0;
  take_str(&f, p->netdev, sizeof(p->netdev));
  int n = r_u8(&f);
  for (int i = 0; i < n && !f.is_short && f.len - f.off >= GID_LEN; i++) {
    if (p->ngids == HELLO_MAX_PORT_GIDS) break;
    struct hello_port_gid *g = &p->gids[p->ngids++];
    g->gid_index = r_u16(&f);
    g->gid_type = r_u8(&f);
    memcpy(g->gid, r_take(&f, 16), 16);
  }
  return f.is_short || !p->dev[0] ? EPROTO : 0;
}

void hello_ports_decode(const uint8_t *v, size_t len, struct hello_rdma *r) {
  struct rbuf f = {v, len, 0, 0};
  int n = r_u8(&f);
  if (f.is_short) return;
  r->has_ports = true;
  r->nports = 0;
  for (int i = 0; i < n && r->nports < HELLO_MAX_PORTS; i++) {
    uint16_t elen = r_u16(&f);
    const uint8_t *e = r_take(&f, elen);
    if (!e) break;
    if (take_port(e, elen, &r->ports[r->nports]) == 0) r->nports++;
  }
}
