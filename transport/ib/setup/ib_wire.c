/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/ib/setup/ib_wire.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "transport/wire.h"

int ibrec_encode(const struct ibrec *r, uint8_t *out, size_t cap, size_t *len) {
  *len = 0;
  if (cap < IBREC_HDR_LEN || r->nqps < 0 || r->nqps > IBREC_MAX_QPS) return EMSGSIZE;
  struct wbuf w = {out + IBREC_HDR_LEN, cap - IBREC_HDR_LEN, 0, 0};
  size_t rlen = strnlen(r->reason, IBREC_REASON_MAX - 1);
  w_u8(&w, (uint8_t)r->is_ok);
  w_u8(&w, (uint8_t)r->nqps);
  w_u8(&w, r->sl);
  w_u8(&w, r->tc);
  w_u8(&w, r->max_recvs);
  w_u8(&w, r->flags);
  w_u16(&w, (uint16_t)rlen);
  w_u32(&w, r->mtu);
  w_u64(&w, r->fifo_addr);
  w_u32(&w, r->fifo_rkey);
  w_u64(&w, r->cr_addr);
  w_u32(&w, r->cr_rkey);
  for (int i = 0; i < r->nqps; i++) w_u32(&w, r->qpns[i]);
  w_bytes(&w, r->reason, rlen);
  if (r->nports < 0 || r->nports > IBREC_MAX_STRIPE) return EMSGSIZE;
  if (r->has_ece || r->nports) { /* trailer: decoders of older releases stop at the reason */
    w_u8(&w, r->has_ece ? 1 : 0);
    w_u32(&w, r->ece_vendor);
    w_u32(&w, r->ece_options);
    w_u32(&w, r->ece_comp_mask);
  }
  if (r->nports) { /* after the ECE one, which older decoders read and stop at */
    w_u8(&w, (uint8_t)r->nports);
    for (int i = 0; i < r->nports; i++) {
      w_bytes(&w, r->ports[i].gid, 16);
      w_u32(&w, r->ports[i].lid);
      w_u32(&w, r->ports[i].mtu);
      w_u32(&w, r->ports[i].cr_rkey);
    }
  }
  if (w.has_overflow) return EMSGSIZE;
  struct wbuf h = {out, IBREC_HDR_LEN, 0, 0};
  w_u32(&h, IBREC_MAGIC);
  w_u8(&h, IBREC_VERSION);
  w_u8(&h, (uint8_t)r->type);
  w_u16(&h, 0);
  w_u32(&h, (uint32_t)w.len);
  *len = IBREC_HDR_LEN + w.len;
  return 0;
}

int ibrec_decode_header(const uint8_t *hdr, int *type, uint32_t *body_len, char *why, size_t cap) {
  struct rbuf r = {hdr, IBREC_HDR_LEN, 0, 0};
  uint32_t magic = r_u32(&r);
  uint8_t version = r_u8(&r);
  uint8_t t = r_u8(&r);
  (void)r_u16(&r);
  uint32_t len = r_u32(&r);
  if (magic != IBREC_MAGIC) {
    snprintf(why, cap, "RDMA setup record magic 0x%08x is not ours (0x%08x)", magic, IBREC_MAGIC);
    return EPROTO;
  }
  if (version != IBREC_VERSION) {
    snprintf(why, cap, "RDMA setup record version %u, this build speaks %u", version,
             IBREC_VERSION);
    return EPROTO;
  }
  if (t != IBREC_INFO && t != IBREC_STATUS) {
    snprintf(why, cap, "RDMA setup record type %u is neither INFO nor STATUS", t);
    return EPROTO;
  }
  if (len > IBREC_MAX_BODY) {
    snprintf(why, cap, "RDMA setup record of %u bytes (at most %d)", len, IBREC_MAX_BODY);
    return EPROTO;
  }
  *type = t;
  *body_len = len;
  return 0;
}

/* The stripe trailer: a count of 2 to IBREC_MAX_STRIPE ports, each whole. */
static int decode_ports(struct rbuf *r, struct ibrec *rec, char *why, size_t cap) {
  int n = r_u8(r);
  if (n < 2 || n > IBREC_MAX_STRIPE || r->len - r->off < (size_t)n * IBREC_PORT_LEN) {
    snprintf(why, cap, "RDMA setup record lists %d striped ports in %zu bytes (2 to %d)", n,
             r->len - r->off, IBREC_MAX_STRIPE);
    return EPROTO;
  }
  for (int i = 0; i < n; i++) {
    (void)r_bytes(r, rec->ports[i].gid, 16);
    rec->ports[i].lid = r_u32(r) & 0xffff;
    rec->ports[i].mtu = r_u32(r);
    rec->ports[i].cr_rkey = r_u32(r);
  }
  rec->nports = n;
  return 0;
}

int ibrec_decode_body(int type, const uint8_t *body, size_t len, struct ibrec *rec, char *why,
                      size_t cap) {
  struct rbuf r = {body, len, 0, 0};
  memset(rec, 0, sizeof(*rec));
  rec->type = type;
  uint8_t ok = r_u8(&r);
  rec->is_ok = ok == 1;
  rec->nqps = r_u8(&r);
  rec->sl = r_u8(&r);
  rec->tc = r_u8(&r);
  rec->max_recvs = r_u8(&r);
  rec->flags = r_u8(&r);
  uint16_t rlen = r_u16(&r);
  rec->mtu = r_u32(&r);
  rec->fifo_addr = r_u64(&r);
  rec->fifo_rkey = r_u32(&r);
  rec->cr_addr = r_u64(&r);
  rec->cr_rkey = r_u32(&r);
  if (ok > 1 || rec->nqps > IBREC_MAX_QPS || rlen >= IBREC_REASON_MAX || rec->max_recvs > 8) {
    snprintf(why, cap,
             "RDMA setup record out of range (ok %d, %d queue pairs, reason of %u "
             "bytes, maxRecvs %u)",
             ok, rec->nqps, rlen, rec->max_recvs);
    return EPROTO;
  }
  for (int i = 0; i < rec->nqps; i++) rec->qpns[i] = r_u32(&r) & 0xffffff;
  const uint8_t *reason = r_take(&r, rlen);
  if (r.is_short || !reason) {
    snprintf(why, cap, "RDMA setup record ends early (%zu bytes)", len);
    return EPROTO;
  }
  wire_clean_str(rec->reason, sizeof(rec->reason), reason, rlen);
  if (r.len - r.off >= 13) { /* the optional ECE trailer */
    uint8_t has = r_u8(&r);
    rec->ece_vendor = r_u32(&r);
    rec->ece_options = r_u32(&r);
    rec->ece_comp_mask = r_u32(&r);
    if (has > 1) {
      snprintf(why, cap, "RDMA setup record's ECE flag is %u", has);
      return EPROTO;
    }
    rec->has_ece = has == 1;
  }
  if (r.len - r.off >= 1 && decode_ports(&r, rec, why, cap)) return EPROTO;
  if (type == IBREC_INFO && rec->is_ok && rec->nqps == 0) {
    snprintf(why, cap, "RDMA setup record says ok with no queue pairs");
    return EPROTO;
  }
  return 0;
}

int ib_fo_encode(const struct ib_fo_msg *m, uint8_t *out, size_t cap, size_t *len) {
  *len = 0;
  if (m->npending < 0 || m->npending > IB_FO_MAX_PENDING) return EMSGSIZE;
  size_t plen = strnlen(m->port, sizeof(m->port) - 1), tlen = strnlen(m->text, IB_FO_TEXT_MAX - 1);
  struct wbuf w = {out, cap, 0, false};
  w_u8(&w, (uint8_t)m->kind);
  w_u8(&w, (uint8_t)m->npending);
  w_u16(&w, (uint16_t)plen);
  w_u16(&w, (uint16_t)tlen);
  w_u32(&w, m->qpn);
  w_u32(&w, m->lid);
  w_u32(&w, m->mtu);
  w_bytes(&w, m->gid, 16);
  w_u64(&w, m->addr);
  w_u32(&w, m->rkey);
  for (int i = 0; i < m->npending; i++) w_u32(&w, m->pending[i]);
  w_bytes(&w, m->port, plen);
  w_bytes(&w, m->text, tlen);
  if (w.has_overflow) return EMSGSIZE;
  *len = w.len;
  return 0;
}

int ib_fo_decode(const uint8_t *in, size_t len, struct ib_fo_msg *m, char *why, size_t cap) {
  struct rbuf r = {in, len, 0, false};
  memset(m, 0, sizeof(*m));
  m->kind = r_u8(&r);
  m->npending = r_u8(&r);
  uint16_t plen = r_u16(&r), tlen = r_u16(&r);
  m->qpn = r_u32(&r) & 0xffffff;
  m->lid = r_u32(&r);
  m->mtu = r_u32(&r);
  (void)r_bytes(&r, m->gid, 16);
  m->addr = r_u64(&r);
  m->rkey = r_u32(&r);
  if (m->kind < IB_FO_HINT || m->kind > IB_FO_NAK || m->npending > IB_FO_MAX_PENDING ||
      plen >= sizeof(m->port) || tlen >= IB_FO_TEXT_MAX) {
    snprintf(why, cap,
             "fail-over message out of range (kind %d, %d pending, texts of %u and %u bytes)",
             m->kind, m->npending, plen, tlen);
    return EPROTO;
  }
  for (int i = 0; i < m->npending; i++) m->pending[i] = r_u32(&r);
  const uint8_t *port = r_take(&r, plen), *text = r_take(&r, tlen);
  if (r.is_short || (plen && !port) || (tlen && !text)) {
    snprintf(why, cap, "fail-over message ends early (%zu bytes)", len);
    return EPROTO;
  }
  wire_clean_str(m->port, sizeof(m->port), port ? port : (const uint8_t *)"", plen);
  wire_clean_str(m->text, sizeof(m->text), text ? text : (const uint8_t *)"", tlen);
  return 0;
}
