/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/hello.h"
#include "common/strutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ncclver.h"
#include "common/version.h"
#include "transport/wire.h"

enum {
  T_PLUGIN_VERSION = 1,
  T_NCCL_VERSION = 2,
  T_HOST = 3,
  T_PID = 4,
  T_TRANSPORT = 5,
  T_DEV = 6,
  T_IFNAME = 7,
  T_ADDR = 8,
  T_NONCE = 9,
  T_CONNID = 10,
  T_SOCKS = 11,
  T_KNOB = 12,
  T_INFO = 13,
  T_REASON = 14,
  T_LIVE = 15,
  T_IB = 20,
  /* RDMA details (struct hello_rdma), each a field of its own */
  T_RDMA_GID_STATE = 40,
  T_RDMA_GID_USABLE = 41,
  T_RDMA_PKEY = 42,
  T_RDMA_DEVS = 43,  /* "<count> <r|t> name,name,..." */
  T_TRIED = 44,      /* one per address tried: errno, ms, interface, address */
  T_RDMA_ECE = 45,   /* vendor id, options, comp_mask (u32 each) */
  T_IF_MTU = 46,     /* u32: the MTU of the interface with T_ADDR */
  T_RDMA_ALTS = 47,  /* u8 repair mode, then per GID: port u8, index u16, type u8, GID 16 */
  T_RDMA_PORTS = 50, /* every port the sender offers: hello_ports.c */
  /* u8: the ports of the fused NIC this side stripes each message over */
  T_RDMA_STRIPE = 52,
};

static void w_tlv(struct wbuf *w, uint16_t type, const void *v, size_t len) {
  if (len > 0xffff) {
    w->has_overflow = true;
    return;
  }
  w_u16(w, type);
  w_u16(w, (uint16_t)len);
  w_bytes(w, v, len);
}
static void w_tlv_str(struct wbuf *w, uint16_t type, const char *s) {
  w_tlv(w, type, s, strlen(s));
}
static void w_tlv_u32(struct wbuf *w, uint16_t type, uint32_t v) {
  uint8_t b[4];
  struct wbuf t = {b, 4, 0, 0};
  w_u32(&t, v);
  w_tlv(w, type, b, 4);
}
static void w_tlv_u64(struct wbuf *w, uint16_t type, uint64_t v) {
  uint8_t b[8];
  struct wbuf t = {b, 8, 0, 0};
  w_u64(&t, v);
  w_tlv(w, type, b, 8);
}
static void w_tlv_knob(struct wbuf *w, uint16_t type, const struct hello_knob *k) {
  char buf[sizeof(k->name) + sizeof(k->value) + 2];
  snprintf(buf, sizeof(buf), "%s=%s", k->name, k->value);
  w_tlv_str(w, type, buf);
}

/* IB block: fixed layout so one TLV carries the whole device identity. */
#define IB_BLOCK_LEN (32 + 1 + 1 + 2 + 16 + 1 + 4 + 2 + 2 + 16 + 48 + 1)

static void w_ib(struct wbuf *w, const struct hello_ib *ib) {
  uint8_t b[IB_BLOCK_LEN];
  struct wbuf t = {b, sizeof(b), 0, 0};
  char dev[32] = {0}, netdev[16] = {0}, subnet[48] = {0};
  scopy(dev, sizeof(dev), ib->dev);
  scopy(netdev, sizeof(netdev), ib->netdev);
  scopy(subnet, sizeof(subnet), ib->subnet);
  w_bytes(&t, dev, 32);
  w_u8(&t, (uint8_t)ib->port);
  w_u8(&t, (uint8_t)ib->link_layer);
  w_u16(&t, (uint16_t)ib->gid_index);
  w_bytes(&t, ib->gid, 16);
  w_u8(&t, (uint8_t)ib->gid_type);
  w_u32(&t, (uint32_t)ib->mtu);
  w_u16(&t, (uint16_t)ib->lid);
  w_u16(&t, (uint16_t)ib->pkey_index);
  w_bytes(&t, netdev, 16);
  w_bytes(&t, subnet, 48);
  w_u8(&t, (uint8_t)(ib->is_off_plane ? 1 : 0));
  w_tlv(w, T_IB, b, t.len);
}

#define ALT_LEN (1 + 2 + 1 + 16)

static void w_alts(struct wbuf *w, const struct hello_rdma *r) {
  uint8_t b[1 + HELLO_MAX_ALTS * ALT_LEN];
  struct wbuf t = {b, sizeof(b), 0, 0};
  w_u8(&t, (uint8_t)r->repair_mode);
  for (int i = 0; i < r->nalts && i < HELLO_MAX_ALTS; i++) {
    const struct hello_alt *a = &r->alts[i];
    w_u8(&t, (uint8_t)a->port);
    w_u16(&t, (uint16_t)a->gid_index);
    w_u8(&t, (uint8_t)a->gid_type);
    w_bytes(&t, a->gid, 16);
  }
  w_tlv(w, T_RDMA_ALTS, b, t.len);
}

/* Entries past HELLO_MAX_ALTS, or a trailing part of one, are skipped: a
 * newer peer may send more, or longer entries. */
static void parse_alts(struct rbuf *f, struct hello_rdma *r) {
  r->repair_mode = r_u8(f);
  r->has_alts = !f->is_short;
  while (r->has_alts && r->nalts < HELLO_MAX_ALTS && f->len - f->off >= ALT_LEN) {
    struct hello_alt *a = &r->alts[r->nalts++];
    a->port = r_u8(f);
    a->gid_index = r_u16(f);
    a->gid_type = r_u8(f);
    memcpy(a->gid, r_take(f, 16), 16);
  }
  f->off = f->len;
}

static void w_rdma(struct wbuf *w, const struct hello *h) {
  const struct hello_rdma *r = &h->rdma;
  if (r->has_devs) {
    char devs[sizeof(r->devs) + 16];
    snprintf(devs, sizeof(devs), "%d %c %s", r->ndevs, r->is_rdma_host ? 'r' : 't', r->devs);
    w_tlv_str(w, T_RDMA_DEVS, devs);
  }
  if (!h->ib.is_present) return;
  w_tlv_u32(w, T_RDMA_GID_STATE, (uint32_t)r->gid_state);
  w_tlv_str(w, T_RDMA_GID_USABLE, r->gid_usable);
  if (r->has_pkey) w_tlv_u32(w, T_RDMA_PKEY, (uint32_t)r->pkey);
  if (r->has_ece) {
    uint8_t b[12];
    struct wbuf t = {b, sizeof(b), 0, 0};
    w_u32(&t, r->ece_vendor);
    w_u32(&t, r->ece_options);
    w_u32(&t, r->ece_comp_mask);
    w_tlv(w, T_RDMA_ECE, b, t.len);
  }
  if (r->has_alts) w_alts(w, r);
  if (r->stripe_ports > 1) {
    uint8_t b = (uint8_t)r->stripe_ports;
    w_tlv(w, T_RDMA_STRIPE, &b, 1);
  }
  if (r->has_ports) {
    /* Room is kept for the fields after it: the list is cut, never the hello. */
    uint8_t b[1600];
    size_t room = w->cap > w->len + 800 ? w->cap - w->len - 800 : 0;
    size_t len = hello_ports_encode(r, b, room < sizeof(b) ? room : sizeof(b));
    if (len) w_tlv(w, T_RDMA_PORTS, b, len);
  }
}

/* One RDMA detail field: 1 when type is one, 0 when it is not. */
static int parse_rdma(uint16_t type, struct rbuf *f, const uint8_t *v, uint16_t len,
                      struct hello_rdma *r) {
  switch (type) {
  case T_RDMA_GID_STATE: r->gid_state = (int)(r_u32(f) & 0xff); return 1;
  case T_RDMA_GID_USABLE: wire_clean_str(r->gid_usable, sizeof(r->gid_usable), v, len); return 1;
  case T_RDMA_DEVS: {
    char devs[sizeof(r->devs) + 16], kind = 0;
    int n = 0, used = 0;
    wire_clean_str(devs, sizeof(devs), v, len);
    if (sscanf(devs, "%d %c %n", &n, &kind, &used) < 2 || n < 0 || n > 4096 || !used) return 1;
    r->has_devs = true;
    r->ndevs = n;
    r->is_rdma_host = kind == 'r';
    snprintf(r->devs, sizeof(r->devs), "%s", devs + used);
    return 1;
  }
  case T_RDMA_PKEY:
    r->pkey = (int)(r_u32(f) & 0xffff);
    r->has_pkey = true;
    return 1;
  case T_RDMA_ECE:
    r->ece_vendor = r_u32(f);
    r->ece_options = r_u32(f);
    r->ece_comp_mask = r_u32(f);
    r->has_ece = !f->is_short;
    return 1;
  case T_RDMA_ALTS: parse_alts(f, r); return 1;
  case T_RDMA_STRIPE: {
    uint8_t n = r_u8(f);
    r->stripe_ports = !f->is_short && n > 1 && n <= 8 ? n : 0;
    return 1;
  }
  case T_RDMA_PORTS:
    hello_ports_decode(v, len, r);
    f->off = f->len;
    return 1;
  default: return 0;
  }
}

static void w_tried(struct wbuf *w, const struct hello_tried *t) {
  uint8_t b[4 + 4 + 1 + sizeof(t->ifname) + 1 + sizeof(t->addr)];
  struct wbuf tw = {b, sizeof(b), 0, 0};
  size_t iflen = strnlen(t->ifname, sizeof(t->ifname) - 1);
  size_t alen = strnlen(t->addr, sizeof(t->addr) - 1);
  w_u32(&tw, (uint32_t)t->err);
  w_u32(&tw, (uint32_t)t->ms);
  w_u8(&tw, (uint8_t)iflen);
  w_bytes(&tw, t->ifname, iflen);
  w_u8(&tw, (uint8_t)alen);
  w_bytes(&tw, t->addr, alen);
  w_tlv(w, T_TRIED, b, tw.len);
}

static void w_header(uint8_t *out, int kind, size_t body_len) {
  struct wbuf hw = {out, HELLO_HDR_LEN, 0, 0};
  w_u32(&hw, HELLO_MAGIC);
  w_u16(&hw, HELLO_VERSION);
  w_u16(&hw, (uint16_t)kind);
  w_u32(&hw, (uint32_t)body_len);
}

int hello_encode(const struct hello *h, uint8_t *out, size_t cap, size_t *len) {
  *len = 0;
  if (cap < HELLO_HDR_LEN) return EMSGSIZE;
  struct wbuf w = {out + HELLO_HDR_LEN, cap - HELLO_HDR_LEN, 0, 0};
  if (w.cap > HELLO_MAX_BODY) w.cap = HELLO_MAX_BODY;
  w_tlv_str(&w, T_PLUGIN_VERSION, h->plugin_version);
  w_tlv_u32(&w, T_NCCL_VERSION, h->nccl_version);
  w_tlv_str(&w, T_HOST, h->host);
  w_tlv_u32(&w, T_PID, h->pid);
  w_tlv_str(&w, T_TRANSPORT, h->transport);
  w_tlv_str(&w, T_DEV, h->dev);
  w_tlv_str(&w, T_IFNAME, h->ifname);
  w_tlv_str(&w, T_ADDR, h->addr);
  if (h->if_mtu) w_tlv_u32(&w, T_IF_MTU, h->if_mtu);
  w_tlv_u64(&w, T_NONCE, h->nonce);
  w_tlv_u64(&w, T_CONNID, h->connid);
  w_tlv_u32(&w, T_SOCKS, (uint32_t)h->nsocks | ((uint32_t)h->nthreads << 16));
  for (int i = 0; i < h->nknobs; i++) w_tlv_knob(&w, T_KNOB, &h->knobs[i]);
  for (int i = 0; i < h->ninfo; i++) w_tlv_knob(&w, T_INFO, &h->info[i]);
  if (h->ib.is_present) w_ib(&w, &h->ib);
  w_rdma(&w, h);
  for (int i = 0; i < h->ntried && i < HELLO_MAX_TRIED; i++) w_tried(&w, &h->tried[i]);
  if (h->live.is_present) {
    uint8_t b[10];
    struct wbuf t = {b, sizeof(b), 0, 0};
    w_u16(&t, h->live.port);
    w_u64(&t, h->live.token);
    w_tlv(&w, T_LIVE, b, t.len);
  }
  if (w.has_overflow) return EMSGSIZE;
  w_header(out, h->kind, w.len);
  *len = HELLO_HDR_LEN + w.len;
  return 0;
}

int hello_decode_header(const uint8_t *hdr, int *kind, uint32_t *body_len, char *why, size_t cap) {
  struct rbuf r = {hdr, HELLO_HDR_LEN, 0, 0};
  uint32_t magic = r_u32(&r);
  uint16_t version = r_u16(&r);
  uint16_t k = r_u16(&r);
  uint32_t len = r_u32(&r);
  if (magic != HELLO_MAGIC) {
    snprintf(why, cap, "hello magic 0x%08x is not ours (0x%08x)", magic, HELLO_MAGIC);
    return EPROTO;
  }
  if (version != HELLO_VERSION) {
    snprintf(why, cap, "hello protocol version %u, this build speaks %u", version, HELLO_VERSION);
    return EPROTO;
  }
  if (len > HELLO_MAX_BODY) {
    snprintf(why, cap, "hello of %u bytes is longer than the %u allowed", len, HELLO_MAX_BODY);
    return EPROTO;
  }
  if (k != HELLO_CONNECT && k != HELLO_ACCEPT && k != HELLO_REFUSE) {
    snprintf(why, cap, "hello kind %u is neither connect (1), accept (2) nor refuse (3)", k);
    return EPROTO;
  }
  *body_len = len;
  *kind = k;
  return 0;
}

static int parse_knob(const uint8_t *v, size_t len, struct hello_knob *k) {
  char buf[sizeof(k->name) + sizeof(k->value) + 2];
  wire_clean_str(buf, sizeof(buf), v, len);
  char *eq = strchr(buf, '=');
  if (!eq || eq == buf) return EPROTO;
  *eq = 0;
  snprintf(k->name, sizeof(k->name), "%s", buf);
  snprintf(k->value, sizeof(k->value), "%s", eq + 1);
  return 0;
}

static int parse_ib(const uint8_t *v, size_t len, struct hello_ib *ib) {
  if (len < IB_BLOCK_LEN) return EPROTO;
  struct rbuf r = {v, len, 0, 0};
  memset(ib, 0, sizeof(*ib));
  const uint8_t *dev = r_take(&r, 32);
  if (dev) wire_clean_str(ib->dev, sizeof(ib->dev), dev, strnlen((const char *)dev, 31));
  ib->port = r_u8(&r);
  ib->link_layer = r_u8(&r);
  ib->gid_index = r_u16(&r);
  r_bytes(&r, ib->gid, 16);
  ib->gid_type = r_u8(&r);
  ib->mtu = (int)r_u32(&r);
  ib->lid = r_u16(&r);
  ib->pkey_index = r_u16(&r);
  const uint8_t *nd = r_take(&r, 16);
  if (nd) wire_clean_str(ib->netdev, sizeof(ib->netdev), nd, strnlen((const char *)nd, 15));
  const uint8_t *sn = r_take(&r, 48);
  if (sn) wire_clean_str(ib->subnet, sizeof(ib->subnet), sn, strnlen((const char *)sn, 47));
  ib->is_off_plane = r_u8(&r) & 1;
  if (r.is_short) return EPROTO;
  ib->is_present = true;
  return 0;
}

static int parse_tried(const uint8_t *v, size_t len, struct hello_tried *t) {
  struct rbuf r = {v, len, 0, 0};
  memset(t, 0, sizeof(*t));
  t->err = (int)r_u32(&r);
  t->ms = (int)r_u32(&r);
  uint8_t iflen = r_u8(&r);
  const uint8_t *ifn = r_take(&r, iflen);
  uint8_t alen = r_u8(&r);
  const uint8_t *addr = r_take(&r, alen);
  if (r.is_short || !ifn || !addr || t->err < 0 || t->ms < 0) return EPROTO;
  wire_clean_str(t->ifname, sizeof(t->ifname), ifn, iflen);
  wire_clean_str(t->addr, sizeof(t->addr), addr, alen);
  return 0;
}

/* The fields older peers do not send; one this version does not know (a
 * newer peer's) is skipped. */
static void parse_optional(uint16_t type, struct rbuf *f, const uint8_t *v, uint16_t len,
                           struct hello *h) {
  switch (type) {
  case T_LIVE:
    h->live.port = r_u16(f);
    h->live.token = r_u64(f);
    h->live.is_present = !f->is_short && h->live.port != 0;
    break;
  case T_IF_MTU: h->if_mtu = r_u32(f); break;
  case T_TRIED:
    if (h->ntried < HELLO_MAX_TRIED && parse_tried(v, len, &h->tried[h->ntried]) == 0) h->ntried++;
    break;
  default: parse_rdma(type, f, v, len, &h->rdma); break;
  }
}

int hello_decode_body(const uint8_t *body, size_t len, struct hello *h, char *why, size_t cap) {
  memset(h, 0, sizeof(*h));
  struct rbuf r = {body, len, 0, 0};
  int have_nonce = 0, have_host = 0, have_version = 0;
  while (r.off < r.len) {
    uint16_t type = r_u16(&r);
    uint16_t tlen = r_u16(&r);
    const uint8_t *v = r_take(&r, tlen);
    if (!v) {
      snprintf(why, cap, "hello field %u of %u bytes runs past the end of the record", type, tlen);
      return EPROTO;
    }
    struct rbuf f = {v, tlen, 0, 0};
    switch (type) {
    case T_PLUGIN_VERSION:
      wire_clean_str(h->plugin_version, sizeof(h->plugin_version), v, tlen);
      have_version = 1;
      break;
    case T_NCCL_VERSION: h->nccl_version = r_u32(&f); break;
    case T_HOST:
      wire_clean_str(h->host, sizeof(h->host), v, tlen);
      have_host = 1;
      break;
    case T_PID: h->pid = r_u32(&f); break;
    case T_TRANSPORT: wire_clean_str(h->transport, sizeof(h->transport), v, tlen); break;
    case T_DEV: wire_clean_str(h->dev, sizeof(h->dev), v, tlen); break;
    case T_IFNAME: wire_clean_str(h->ifname, sizeof(h->ifname), v, tlen); break;
    case T_ADDR: wire_clean_str(h->addr, sizeof(h->addr), v, tlen); break;
    case T_NONCE:
      h->nonce = r_u64(&f);
      have_nonce = !f.is_short;
      break;
    case T_CONNID: h->connid = r_u64(&f); break;
    case T_SOCKS: {
      uint32_t s = r_u32(&f);
      h->nsocks = (uint16_t)(s & 0xffff);
      h->nthreads = (uint16_t)(s >> 16);
      break;
    }
    case T_KNOB:
    case T_INFO: {
      int *n = type == T_KNOB ? &h->nknobs : &h->ninfo;
      struct hello_knob *arr = type == T_KNOB ? h->knobs : h->info;
      if (*n < HELLO_MAX_KNOBS && parse_knob(v, tlen, &arr[*n]) == 0) (*n)++;
      break;
    }
    case T_IB:
      if (parse_ib(v, tlen, &h->ib)) {
        snprintf(why, cap, "hello RDMA block of %u bytes is shorter than %d", tlen, IB_BLOCK_LEN);
        return EPROTO;
      }
      break;
    default: parse_optional(type, &f, v, tlen, h); break;
    }
    if (f.is_short) {
      snprintf(why, cap, "hello field %u is %u bytes, too short for its type", type, tlen);
      return EPROTO;
    }
  }
  if (!have_nonce || !have_host || !have_version) {
    snprintf(why, cap, "hello lacks its %s field",
             !have_nonce  ? "nonce"
             : !have_host ? "host"
                          : "plugin version");
    return EPROTO;
  }
  if (h->nsocks > 64 || h->nthreads > 16) {
    snprintf(why, cap, "hello asks for %u sockets and %u threads (at most 64 and 16)", h->nsocks,
             h->nthreads);
    return EPROTO;
  }
  return 0;
}

int hello_encode_refusal(const char *reason, uint8_t *out, size_t cap, size_t *len) {
  *len = 0;
  if (cap < HELLO_HDR_LEN) return EMSGSIZE;
  char text[HELLO_REASON_MAX];
  scopy(text, sizeof(text), reason);
  /* Only the reason: whoever presented a wrong nonce may be a stranger,
   * who must not learn the host's name or the plugin's version. */
  struct wbuf w = {out + HELLO_HDR_LEN, cap - HELLO_HDR_LEN, 0, 0};
  w_tlv_str(&w, T_REASON, text);
  if (w.has_overflow) return EMSGSIZE;
  w_header(out, HELLO_REFUSE, w.len);
  *len = HELLO_HDR_LEN + w.len;
  return 0;
}

int hello_decode_refusal(const uint8_t *body, size_t len, struct hello_refusal *h, char *why,
                         size_t cap) {
  memset(h, 0, sizeof(*h));
  struct rbuf r = {body, len, 0, 0};
  bool has_reason = false;
  while (r.off < r.len) {
    uint16_t type = r_u16(&r);
    uint16_t tlen = r_u16(&r);
    const uint8_t *v = r_take(&r, tlen);
    if (!v) {
      snprintf(why, cap, "refusal field %u of %u bytes runs past the end of the record", type,
               tlen);
      return EPROTO;
    }
    if (type == T_HOST) wire_clean_str(h->host, sizeof(h->host), v, tlen);
    if (type == T_PLUGIN_VERSION)
      wire_clean_str(h->plugin_version, sizeof(h->plugin_version), v, tlen);
    if (type == T_REASON) {
      wire_clean_str(h->reason, sizeof(h->reason), v, tlen);
      has_reason = true;
    }
  }
  if (!has_reason) {
    snprintf(why, cap, "refusal record without a reason");
    return EPROTO;
  }
  return 0;
}

static const char *knob_value(const struct hello_knob *arr, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(arr[i].name, name)) return arr[i].value;
  return NULL;
}

const char *hello_info_value(const struct hello *h, const char *name) {
  const char *v = knob_value(h->info, h->ninfo, name);
  if (!v) v = knob_value(h->knobs, h->nknobs, name);
  return v ? v : "unset";
}

static size_t add(char *buf, size_t cap, size_t o, int *n, const char *what, const char *mine,
                  const char *peer, const char *mhost, const char *phost) {
  if (o < cap)
    o += (size_t)snprintf(buf + o, cap - o, "%s%s: %s on %s, %s on %s", *n ? "; " : "", what, mine,
                          mhost, peer, phost);
  (*n)++;
  return o > cap ? cap : o;
}

int hello_diff(const struct hello *mine, const struct hello *peer, char *buf, size_t cap) {
  int n = 0;
  size_t o = 0;
  buf[0] = 0;
  if (mine->nccl_version != peer->nccl_version) {
    char a[32], b[32];
    nccl_version_str((int)mine->nccl_version, a, sizeof(a));
    nccl_version_str((int)peer->nccl_version, b, sizeof(b));
    o = add(buf, cap, o, &n, "NCCL version", a, b, mine->host, peer->host);
  }
  if (strcmp(mine->plugin_version, peer->plugin_version))
    o = add(buf, cap, o, &n, "plugin version", mine->plugin_version, peer->plugin_version,
            mine->host, peer->host);
  /* Every must-agree knob either side set. */
  for (int side = 0; side < 2; side++) {
    const struct hello *s = side ? peer : mine;
    for (int i = 0; i < s->nknobs; i++) {
      const char *name = s->knobs[i].name;
      if (side && knob_value(mine->knobs, mine->nknobs, name)) continue; /* seen */
      const char *a = knob_value(mine->knobs, mine->nknobs, name);
      const char *b = knob_value(peer->knobs, peer->nknobs, name);
      if (a && b && !strcmp(a, b)) continue;
      o = add(buf, cap, o, &n, name, a ? a : "unset", b ? b : "unset", mine->host, peer->host);
    }
  }
  return n;
}
