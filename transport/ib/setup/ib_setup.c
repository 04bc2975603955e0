/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA setup of a connection: a non-blocking state machine on its
 * control socket, after the hello (see ib.h). Each call runs stages until
 * the socket would block; ib_setup_stage_name() words the stage for logs.
 *   connector: check -> send INFO -> receive INFO -> connect -> send STATUS
 *              -> receive STATUS -> done
 *   acceptor:  receive INFO -> check -> send INFO -> connect -> send STATUS
 *              -> receive STATUS -> done
 *   connector when both offer ECE (ib_ece.c): ... receive INFO -> receive
 *              STATUS -> connect with the acceptor's settled options ->
 *              send STATUS -> done
 * check: can the two ports talk (ib_compat.c), queue pairs to INIT, our
 * INFO (the acceptor creates as many queue pairs as the connector offered);
 * connect: RTR and RTS (a timed-out RTR retried within NCCL's budget,
 * ib_rtr.c), our STATUS. Both sides decide from the pair of
 * STATUS records, so they always agree: RDMA up, a fall back to TCP, or
 * failure. One deadline (NCCL_DIAG_CONNECT_TIMEOUT_MS) bounds the whole
 * machine. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/events.h"
#include "common/knobs.h"
#include "common/log.h"
#include "transport/ib/setup/ib_repair.h"
#include "transport/ib/setup/ib_setup.h"
#include "transport/ib/setup/ib_wire.h"
#include "transport/report.h"
#include "transport/sock.h"

_Static_assert(IB_MAX_QPS == IBREC_MAX_QPS, "a setup record carries every queue pair");

static bool local_fallback_ok(void) { return transport_prefs()->fallback != FALLBACK_OFF; }

struct ib_setup *ib_setup_new(const struct transport_dev *dev, bool is_send, int ctrl_fd,
                              const struct hello *mine, const struct hello *peer,
                              const char *peer_desc, int traffic_class) {
  ib_peer_check(dev, mine, peer);
  if (!dev->is_ib || !dev->ib || !peer->ib.is_present) return NULL;
  struct ib_setup *s = calloc(1, sizeof(*s));
  if (!s) return NULL;
  s->dev = dev->ib;
  s->is_send = is_send;
  s->ctrl_fd = ctrl_fd;
  s->mine = *mine;
  s->peer = *peer;
  snprintf(s->peer_desc, sizeof(s->peer_desc), "%s", peer_desc);
  s->traffic_class = traffic_class;
  /* Before any check: a repaired pair is checked and connected as chosen. */
  /* A repaired pair is said with the verdict (decide), once RTR settled it. */
  ib_repair_choose(&s->mine, &s->peer, is_send, &s->repair);
  s->repair.nccl_dev = s->dev;
  snprintf(s->repair.nccl_label, sizeof(s->repair.nccl_label), "%s", s->dev->label);
  s->repair_hellos[0] = s->mine;
  s->repair_hellos[1] = s->peer;
  if (!s->repair.is_applied)
    ib_repair_report(&s->repair, is_send, s->dev->label, &s->mine, &s->peer, s->peer_desc, true);
  else {
    ib_repair_apply(&s->repair, is_send, &s->mine, &s->peer);
    /* Moved to another port: its queue pairs, CQ and memory live there. */
    struct ib_dev *d = ib_repair_local_dev(&s->repair, is_send);
    if (d) s->dev = d;
  }
  ib_stripe_local(s);
  s->stage = is_send ? IB_STAGE_CHECK : IB_STAGE_RECV_INFO;
  /* RTR retries (ib_rtr.c) may take their budget on either side. */
  s->deadline = now_ns() + transport_prefs()->connect_timeout_ms * 1000000LL + ib_rtr_budget_ns();
  record_reader_init(&s->in, s->in_buf, sizeof(s->in_buf), IBREC_HDR_LEN, ibrec_decode_header);
  return s;
}

void ib_setup_free(struct ib_setup *s) {
  if (!s) return;
  ib_res_free(s);
  free(s);
}

/* NCCL's IB transport opens up to 128 queue pairs per connection; our
 * connection record carries 32: a larger setting is said once, not cut
 * silently. */
static int qps_wanted(void) {
  static atomic_bool has_said;
  int n = (int)transport_prefs()->ib_qps_per_connection;
  if (n <= IB_MAX_QPS) return n;
  if (!atomic_exchange(&has_said, true))
    WARN("NCCL_IB_QPS_PER_CONNECTION=%d: this plugin opens at most %d queue pairs per connection "
         "(NCCL's own IB transport up to 128), so each connection uses %d; set it to %d or less "
         "to silence this",
         n, IB_MAX_QPS, IB_MAX_QPS, IB_MAX_QPS);
  return IB_MAX_QPS;
}

/* Our INFO: queue pairs and memory keys, or why we have none. */
static void make_info(struct ib_setup *s) {
  struct ibrec *r = &s->mine_info;
  char why[IBREC_REASON_MAX] = "";
  memset(r, 0, sizeof(*r));
  r->type = IBREC_INFO;
  r->flags = (local_fallback_ok() ? IBREC_F_FALLBACK : 0) | IBREC_F_ECE_REDUCED;
  if (s->is_send && transport_prefs()->is_split_data_on_qps) r->flags |= IBREC_F_SPLIT;
  /* striped: the setting's count for each port of the wider side */
  int width = ib_stripe_width(s);
  int nqps = s->is_send ? qps_wanted() * width : s->peer_info.nqps;
  if (nqps > IB_MAX_QPS) nqps = IB_MAX_QPS - IB_MAX_QPS % width;
  if (ib_compat_check(s->dev, &s->mine, &s->peer, why, sizeof(why), s->notes, sizeof(s->notes)) ==
        0 &&
      (s->is_send || s->peer_info.is_ok) && ib_res_create(s, nqps, why, sizeof(why)) == 0) {
    r->is_ok = true;
    r->nqps = s->nqps;
    for (int i = 0; i < s->nqps; i++) r->qpns[i] = s->qps[i].qp->qp_num;
    ib_stripe_fill_info(s, r);
  } else if (!s->is_send && !s->peer_info.is_ok && !why[0]) {
    snprintf(why, sizeof(why), "the peer could not set up its side: %s", s->peer_info.reason);
  }
  if (s->notes[0]) WARN("connection with %s: %s", s->peer_desc, s->notes);
  r->mtu = (uint32_t)s->dev->mtu;
  r->max_recvs = IB_MAX_RECVS;
  if (s->is_send) {
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

static enum progress send_record(struct ib_setup *s) {
  int err;
  enum progress sent = record_write(&s->out, s->ctrl_fd, &err);
  if (sent == PROGRESS_FAILED)
    WARN("RDMA setup with %s: the control connection broke: %s", s->peer_desc,
         err == EPIPE ? "the peer closed it" : strerror(err));
  return sent;
}

/* PROGRESS_DONE: a record of the expected type is in rec. */
static enum progress recv_record(struct ib_setup *s, int type, struct ibrec *rec) {
  char why[200];
  int err;
  enum progress got = record_read(&s->in, s->ctrl_fd, &err, why, sizeof(why));
  if (got == PROGRESS_PENDING) return got;
  if (got == PROGRESS_FAILED && err != EPROTO) {
    WARN("RDMA setup with %s: the control connection broke while waiting for its %s: %s",
         s->peer_desc, type == IBREC_INFO ? "queue pairs" : "result",
         err == EPIPE ? "the peer closed it (its process may have failed: see its log)"
                      : strerror(err));
    return got;
  }
  bool is_good = got == PROGRESS_DONE; /* else why names what is wrong with the header */
  if (is_good && s->in.kind != type) {
    snprintf(why, sizeof(why), "expected a record of type %d, got %d", type, s->in.kind);
    is_good = false;
  }
  if (is_good &&
      ibrec_decode_body(type, s->in.buf + IBREC_HDR_LEN, s->in.body_len, rec, why, sizeof(why)))
    is_good = false;
  if (!is_good) {
    WARN("RDMA setup with %s: malformed setup record: %s (a peer with another plugin version?)",
         s->peer_desc, why);
    return PROGRESS_FAILED;
  }
  record_reader_reset(&s->in);
  return PROGRESS_DONE;
}

/* false while an RTR retry is pending (call again). */
static bool make_status(struct ib_setup *s) {
  struct ibrec *r = &s->mine_status;
  char why[IBREC_REASON_MAX] = "";
  int err = 0;
  memset(r, 0, sizeof(*r));
  r->type = IBREC_STATUS;
  r->flags = s->mine_info.flags;
  if (!s->mine_info.is_ok) {
    snprintf(why, sizeof(why), "%s", s->mine_info.reason);
  } else if (!s->peer_info.is_ok) {
    snprintf(why, sizeof(why), "%s (reported by the peer)", s->peer_info.reason);
  } else if (s->is_ece_waiting && !s->peer_status.is_ok) {
    snprintf(why, sizeof(why), "%s (reported by the peer)", s->peer_status.reason);
  } else if (ib_stripe_check(s, why, sizeof(why))) {
    /* why says it */
  } else if (s->peer_info.nqps != s->nqps) {
    snprintf(why, sizeof(why), "the peer has %d queue pairs, this side %d", s->peer_info.nqps,
             s->nqps);
  } else if ((err = ib_res_connect(s, why, sizeof(why))) == EINPROGRESS) {
    return false;
  } else if (!err) {
    r->is_ok = true;
    if (!s->is_send) ib_ece_settled(s->dev, &s->qps[0], &s->peer, r);
  }
  snprintf(r->reason, sizeof(r->reason), "%s", why);
  size_t len; /* our own record always fits */
  (void)ibrec_encode(r, s->out_buf, sizeof(s->out_buf), &len);
  record_writer_start(&s->out, s->out_buf, len);
  return true;
}

/* Both STATUS records are in: the same verdict on both sides. */
static enum ib_setup_result decide(struct ib_setup *s) {
  bool is_up = s->mine_status.is_ok && s->peer_status.is_ok;
  if (!is_up && ib_setup_repair_rtr(s))
    return IB_SETUP_PENDING; /* the next pair (ib_repair_rtr.c) */
  if (s->repair.is_applied)
    ib_repair_report(&s->repair, s->is_send, s->dev->label, &s->repair_hellos[0],
                     &s->repair_hellos[1], s->peer_desc, is_up);
  if (is_up) return IB_SETUP_RDMA_UP;
  const char *reason = !s->mine_status.is_ok ? s->mine_status.reason : s->peer_status.reason;
  const char *where = !s->mine_status.is_ok ? "" : " (reported by the peer)";
  int fallback =
    (s->mine_status.flags & IBREC_F_FALLBACK) && (s->peer_status.flags & IBREC_F_FALLBACK);
  ev_count(fallback ? C_FALLBACKS : C_CONN_FAILURES, 1);
  struct ev e;
  ev_begin(&e, fallback ? "fallback" : "rdma_failed");
  ev_str(&e, "device", s->dev->td->name);
  ev_str(&e, "peer", s->peer_desc);
  ev_str(&e, "reason", reason);
  ev_end(&e);
  char key[1900], none[300];
  snprintf(key, sizeof(key), "ibfail|%s|%s|%s", s->peer.host, s->dev->td->name, reason);
  ib_repair_none_words(&s->repair, s->is_send, &s->repair_hellos[0], &s->repair_hellos[1], none,
                       sizeof(none));
  ib_res_free(s);
  if (fallback) {
    bool is_first = report_first(key);
    if (is_first && none[0])
      WARN("RDMA path from %s to %s failed%s: %s.%s; this connection carries on over TCP "
           "(NCCL_DIAG_FALLBACK=auto)",
           s->dev->label, s->peer_desc, where, reason, none);
    else if (is_first)
      WARN("RDMA path from %s to %s failed%s: %s. This connection carries on over TCP "
           "(NCCL_DIAG_FALLBACK=auto), at TCP speed until the cause is fixed",
           s->dev->label, s->peer_desc, where, reason);
    else
      INFO(LOG_NET, "RDMA path from %s to %s failed%s: %s; using TCP", s->dev->label, s->peer_desc,
           where, reason);
    return IB_SETUP_FALL_BACK;
  }
  WARN("RDMA path from %s to %s failed%s: %s.%s%s The connection fails: NCCL_DIAG_FALLBACK=off "
       "on %s (set it to auto on every node to carry on over TCP)",
       s->dev->label, s->peer_desc, where, reason, none, none[0] ? "." : "",
       (s->mine_status.flags & IBREC_F_FALLBACK) ? s->peer.host : "this host");
  return IB_SETUP_FAILED;
}

const char *ib_setup_stage_name(enum ib_stage stage) {
  switch (stage) {
  case IB_STAGE_CHECK: return "checking the two ports and creating queue pairs";
  case IB_STAGE_SEND_INFO: return "sending its queue pairs";
  case IB_STAGE_RECV_INFO: return "waiting for the peer's queue pairs";
  case IB_STAGE_CONNECT: return "connecting the queue pairs (RTR, RTS)";
  case IB_STAGE_SEND_STATUS: return "sending its result";
  case IB_STAGE_RECV_STATUS: return "waiting for the peer's result";
  case IB_STAGE_DONE: return "done";
  }
  return "in an unknown stage";
}

static void enter(struct ib_setup *s, enum ib_stage next) {
  TRACE(LOG_NET, "RDMA setup with %s: %s, then %s", s->peer_desc, ib_setup_stage_name(s->stage),
        ib_setup_stage_name(next));
  s->stage = next;
}

/* Runs the current stage: PROGRESS_DONE when it finished and the machine
 * moved on to the next one. */
static enum progress step(struct ib_setup *s) {
  enum progress p = PROGRESS_DONE;
  switch (s->stage) {
  case IB_STAGE_CHECK:
    make_info(s);
    enter(s, IB_STAGE_SEND_INFO);
    break;
  case IB_STAGE_SEND_INFO:
    p = send_record(s);
    if (p == PROGRESS_DONE) enter(s, s->is_send ? IB_STAGE_RECV_INFO : IB_STAGE_CONNECT);
    break;
  case IB_STAGE_RECV_INFO:
    p = recv_record(s, IBREC_INFO, &s->peer_info);
    if (p != PROGRESS_DONE) break;
    s->is_ece_waiting = s->is_send && s->mine_info.is_ok && s->peer_info.is_ok &&
                        ib_ece_waits(s->dev, &s->peer, &s->peer_info);
    enter(s, !s->is_send         ? IB_STAGE_CHECK
             : s->is_ece_waiting ? IB_STAGE_RECV_STATUS
                                 : IB_STAGE_CONNECT);
    break;
  case IB_STAGE_CONNECT:
    if (!make_status(s)) p = PROGRESS_PENDING;
    else enter(s, IB_STAGE_SEND_STATUS);
    break;
  case IB_STAGE_SEND_STATUS:
    p = send_record(s);
    if (p != PROGRESS_DONE) break;
    if (s->peer_status.type != IBREC_STATUS) {
      enter(s, IB_STAGE_RECV_STATUS);
      break;
    }
    s->result = decide(s); /* a connector that waited has the peer's already */
    if (s->result != IB_SETUP_PENDING) enter(s, IB_STAGE_DONE);
    break;
  case IB_STAGE_RECV_STATUS:
    p = recv_record(s, IBREC_STATUS, &s->peer_status);
    if (p != PROGRESS_DONE) break;
    if (s->mine_status.type != IBREC_STATUS) { /* a connector waiting for the settled ECE */
      enter(s, IB_STAGE_CONNECT);
      break;
    }
    s->result = decide(s);
    if (s->result != IB_SETUP_PENDING) enter(s, IB_STAGE_DONE);
    break;
  case IB_STAGE_DONE: break;
  }
  return p;
}

enum ib_setup_result ib_setup_progress(struct ib_setup *s) {
  if (s->stage != IB_STAGE_DONE && now_ns() > s->deadline) {
    WARN("RDMA setup with %s did not finish within NCCL_DIAG_CONNECT_TIMEOUT_MS and the RTR "
         "retry budget (NCCL_IB_MQP_RETRY_CNT): the peer stopped answering (this side was %s)",
         s->peer_desc, ib_setup_stage_name(s->stage));
    return IB_SETUP_FAILED;
  }
  while (s->stage != IB_STAGE_DONE) {
    enum progress p = step(s);
    if (p == PROGRESS_PENDING) return IB_SETUP_PENDING;
    if (p == PROGRESS_FAILED) return IB_SETUP_FAILED;
  }
  return s->result;
}
