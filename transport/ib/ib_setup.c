/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA setup stage of a connection, on its control socket after the
 * hello (see ib.h). Order: the connector checks compatibility, creates its
 * queue pairs and sends INFO first; the acceptor answers with as many queue
 * pairs; both run RTR and RTS and send STATUS; both decide from the pair of
 * STATUS records: RDMA, a fall back to TCP, or failure. Non-blocking: each
 * call moves as far as the socket allows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/events.h"
#include "common/knobs.h"
#include "common/log.h"
#include "transport/ib/ib_setup.h"
#include "transport/report.h"
#include "transport/sock.h"

void ib_choose_sl_tc(int traffic_class, int *sl, int *tc);

static int local_fallback_ok(void) { return knob_enum(K_DIAG_FALLBACK) != FALLBACK_OFF; }

struct ib_setup *ib_setup_new(const struct transport_dev *dev, int send_side, int ctrl_fd,
                              const struct hello *mine, const struct hello *peer,
                              const char *peer_desc, int traffic_class) {
  if (!dev->is_ib || !dev->ib || !peer->ib.present) return NULL;
  struct ib_setup *s = calloc(1, sizeof(*s));
  if (!s) return NULL;
  s->dev = dev->ib;
  s->send_side = send_side;
  s->ctrl_fd = ctrl_fd;
  s->mine = *mine;
  s->peer = *peer;
  snprintf(s->peer_desc, sizeof(s->peer_desc), "%s", peer_desc);
  s->traffic_class = traffic_class;
  s->stage = send_side ? IS_CHECK : IS_RECV_INFO;
  s->deadline = now_ns() + knob_int(K_DIAG_CONNECT_TIMEOUT_MS) * 1000000LL;
  record_reader_init(&s->in, s->in_buf, sizeof(s->in_buf), IBREC_HDR_LEN, ibrec_decode_header);
  return s;
}

void ib_setup_free(struct ib_setup *s) {
  if (!s) return;
  ib_res_free(s);
  free(s);
}

/* Our INFO: queue pairs and memory keys, or why we have none. */
static void make_info(struct ib_setup *s) {
  struct ibrec *r = &s->mine_info;
  char why[IBREC_REASON_MAX] = "";
  memset(r, 0, sizeof(*r));
  r->type = IBREC_INFO;
  r->flags = local_fallback_ok() ? IBREC_F_FALLBACK : 0;
  int nqps = s->send_side ? (int)knob_int(K_IB_QPS_PER_CONNECTION) : s->peer_info.nqps;
  if (nqps > IB_MAX_QPS) nqps = IB_MAX_QPS;
  if (ib_compat_check(s->dev, &s->mine, &s->peer, why, sizeof(why), s->notes, sizeof(s->notes)) ==
        0 &&
      (s->send_side || s->peer_info.ok) && ib_res_create(s, nqps, why, sizeof(why)) == 0) {
    r->ok = 1;
    r->nqps = s->nqps;
    for (int i = 0; i < s->nqps; i++) r->qpn[i] = s->qp[i].qp->qp_num;
  } else if (!s->send_side && !s->peer_info.ok && !why[0]) {
    snprintf(why, sizeof(why), "the peer could not set up its side: %s", s->peer_info.reason);
  }
  if (s->notes[0]) WARN("connection with %s: %s", s->peer_desc, s->notes);
  r->mtu = (uint32_t)s->dev->td->mtu;
  r->max_recvs = IB_MAX_RECVS;
  if (s->send_side) {
    ib_choose_sl_tc(s->traffic_class, &s->sl, &s->tc);
    r->sl = (uint8_t)s->sl;
    r->tc = (uint8_t)s->tc;
    if (s->fifo_mr) r->fifo_addr = (uintptr_t)s->fifo, r->fifo_rkey = s->fifo_mr->rkey;
  } else {
    s->sl = s->peer_info.sl;
    s->tc = s->peer_info.tc;
    if (s->cr_mr) r->cr_addr = (uintptr_t)s->cr, r->cr_rkey = s->cr_mr->rkey;
  }
  snprintf(r->reason, sizeof(r->reason), "%s", why);
  size_t len; /* our own record always fits */
  (void)ibrec_encode(r, s->out_buf, sizeof(s->out_buf), &len);
  record_writer_start(&s->out, s->out_buf, len);
}

/* 1 = sent, 0 = not yet, -1 = the control connection broke. */
static int send_out(struct ib_setup *s) {
  int err;
  enum progress sent = record_write(&s->out, s->ctrl_fd, &err);
  if (sent == PROGRESS_PENDING) return 0;
  if (sent == PROGRESS_FAILED) {
    WARN("RDMA setup with %s: the control connection broke: %s", s->peer_desc,
         err == EPIPE ? "the peer closed it" : strerror(err));
    return -1;
  }
  return 1;
}

/* 1 = a record of the expected type is in rec, 0 = not yet, -1 = error. */
static int recv_rec(struct ib_setup *s, int type, struct ibrec *rec) {
  char why[200];
  int err;
  enum progress got = record_read(&s->in, s->ctrl_fd, &err, why, sizeof(why));
  if (got == PROGRESS_PENDING) return 0;
  if (got == PROGRESS_FAILED && err != EPROTO) {
    WARN("RDMA setup with %s: the control connection broke while waiting for its %s: %s",
         s->peer_desc, type == IBREC_INFO ? "queue pairs" : "result",
         err == EPIPE ? "the peer closed it (its process may have failed: see its log)"
                      : strerror(err));
    return -1;
  }
  if (got == PROGRESS_FAILED) goto bad; /* why names what is wrong with the header */
  if (s->in.kind != type) {
    snprintf(why, sizeof(why), "expected a record of type %d, got %d", type, s->in.kind);
    goto bad;
  }
  if (ibrec_decode_body(type, s->in.buf + IBREC_HDR_LEN, s->in.body_len, rec, why, sizeof(why)))
    goto bad;
  record_reader_reset(&s->in);
  return 1;
bad:
  WARN("RDMA setup with %s: malformed setup record: %s (a peer with another plugin version?)",
       s->peer_desc, why);
  return -1;
}

static void make_status(struct ib_setup *s) {
  struct ibrec *r = &s->mine_status;
  char why[IBREC_REASON_MAX] = "";
  memset(r, 0, sizeof(*r));
  r->type = IBREC_STATUS;
  r->flags = s->mine_info.flags;
  if (!s->mine_info.ok) {
    snprintf(why, sizeof(why), "%s", s->mine_info.reason);
  } else if (!s->peer_info.ok) {
    snprintf(why, sizeof(why), "%s", s->peer_info.reason);
  } else if (s->peer_info.nqps != s->nqps) {
    snprintf(why, sizeof(why), "the peer has %d queue pairs, this side %d", s->peer_info.nqps,
             s->nqps);
  } else if (ib_res_connect(s, why, sizeof(why)) == 0) {
    r->ok = 1;
  }
  snprintf(r->reason, sizeof(r->reason), "%s", why);
  size_t len; /* our own record always fits */
  (void)ibrec_encode(r, s->out_buf, sizeof(s->out_buf), &len);
  record_writer_start(&s->out, s->out_buf, len);
}

/* Both STATUS records are in: the same verdict on both sides. */
static int decide(struct ib_setup *s) {
  s->stage = IS_DONE;
  if (s->mine_status.ok && s->peer_status.ok) return 1;
  const char *reason = !s->mine_status.ok ? s->mine_status.reason : s->peer_status.reason;
  const char *where = !s->mine_status.ok ? "" : " (reported by the peer)";
  int fallback =
    (s->mine_status.flags & IBREC_F_FALLBACK) && (s->peer_status.flags & IBREC_F_FALLBACK);
  ev_count(fallback ? C_FALLBACKS : C_CONN_FAILURES, 1);
  struct ev e;
  ev_begin(&e, fallback ? "fallback" : "rdma_failed");
  ev_str(&e, "device", s->dev->td->name);
  ev_str(&e, "peer", s->peer_desc);
  ev_str(&e, "reason", reason);
  ev_end(&e);
  char key[1900];
  snprintf(key, sizeof(key), "ibfail|%s|%s|%s", s->peer.host, s->dev->td->name, reason);
  if (fallback) {
    if (report_first(key))
      WARN("RDMA path from %s to %s failed%s: %s. This connection carries on over TCP "
           "(NCCL_DIAG_FALLBACK=auto), at TCP speed; fix the cause above to get RDMA back",
           s->dev->label, s->peer_desc, where, reason);
    else
      INFO(LOG_NET, "RDMA path from %s to %s failed%s: %s; using TCP", s->dev->label, s->peer_desc,
           where, reason);
    ib_res_free(s);
    return 2;
  }
  WARN("RDMA path from %s to %s failed%s: %s. The connection fails: NCCL_DIAG_FALLBACK=off on "
       "%s (set it to auto on every node to carry on over TCP)",
       s->dev->label, s->peer_desc, where, reason,
       (s->mine_status.flags & IBREC_F_FALLBACK) ? s->peer.host : "this host");
  ib_res_free(s);
  return -1;
}

int ib_setup_progress(struct ib_setup *s) {
  int r;
  if (now_ns() > s->deadline && s->stage != IS_DONE) {
    WARN("RDMA setup with %s did not finish within NCCL_DIAG_CONNECT_TIMEOUT_MS (stage %d): the "
         "peer stopped answering",
         s->peer_desc, (int)s->stage);
    return -1;
  }
  switch (s->stage) {
  case IS_RECV_INFO:
    if ((r = recv_rec(s, IBREC_INFO, &s->peer_info)) <= 0) return r;
    if (s->send_side) {
      s->stage = IS_CONNECT;
      return ib_setup_progress(s);
    }
    s->stage = IS_CHECK;
    /* fall through */
  case IS_CHECK:
    make_info(s);
    s->stage = IS_SEND_INFO;
    /* fall through */
  case IS_SEND_INFO:
    if ((r = send_out(s)) <= 0) return r;
    s->stage = s->send_side ? IS_RECV_INFO : IS_CONNECT;
    if (s->send_side) return ib_setup_progress(s);
    /* fall through */
  case IS_CONNECT:
    make_status(s);
    s->stage = IS_SEND_STATUS;
    /* fall through */
  case IS_SEND_STATUS:
    if ((r = send_out(s)) <= 0) return r;
    s->stage = IS_RECV_STATUS;
    /* fall through */
  case IS_RECV_STATUS:
    if ((r = recv_rec(s, IBREC_STATUS, &s->peer_status)) <= 0) return r;
    return decide(s);
  case IS_DONE: return s->mine_status.ok && s->peer_status.ok ? 1 : 2;
  }
  return -1;
}
