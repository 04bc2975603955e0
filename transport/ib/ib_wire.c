/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/ib/ib_wire.h"

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
  if (type == IBREC_INFO && rec->is_ok && rec->nqps == 0) {
    snprintf(why, cap, "RDMA setup record says ok with no queue pairs");
    return EPROTO;
  }
  return 0;
}
