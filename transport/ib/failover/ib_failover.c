/* SPDX-License-Identifier: Apache-2.0 */
/* Port fail-over, as NCCL 2.29 added it (NCCL_IB_RESILIENCY_PORT_FAILOVER,
 * default 0): a connection on a port of a virtual NIC (makeVDevice) whose
 * port fails moves to another port of that NIC that is up, instead of
 * failing. NCCL learns which sends landed by reading the receiver's
 * completion records over a working device; this plugin asks the receiver
 * on the control connection, which it already has (ib_wire.h: HINT, REQ,
 * ACK, GO, NAK):
 *   sender   the failed port's queue pairs to the error state; a standby
 *            queue pair on the new port, the FIFO registered there; REQ
 *   receiver its old queue pairs to the error state, its completion queue
 *            drained (what landed completes); a standby queue pair on its
 *            new port, connected to the sender's; ACK with the messages
 *            whose receive is still pending
 *   sender   connects, completes the posted messages the receiver no
 *            longer waits for, clears its FIFO, GO; the rest are sent again
 *            on the new port, in order, as their clear-to-sends come back
 *   receiver reposts the receives and clear-to-sends of the pending ones,
 *            with its buffers registered on the new port.
 * RC delivers in order and a queue pair in the error state takes nothing
 * more, so no message is lost or completed twice. A receiver whose queue
 * pair fails first asks the sender to move (HINT). A move starts on any
 * failed completion (not a flushed one), as NCCL's does; a peer that died
 * ends it when its control connection closes. The stages are enum
 * ib_fo_stage (ib_comm.h). The messages travel on the connection's control
 * channel (transport/ctrl.h), never waited for: a message arrives through
 * its row (ib_ctrl.c), one to send is queued and flushed by later calls. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "topo/gid.h"
#include "transport/frame.h"
#include "transport/ib/data/ib_comm.h"
#include "transport/ib/setup/ib_setup.h"
#include "transport/ib/setup/ib_wire.h"
#include "transport/prefs.h"
#include "transport/sock.h"
#include "transport/wire.h"

#define FO_WAIT_NS 30000000000LL /* a move the peer does not answer in this time fails */
/* striped entries take twice the room (ib.h), and keep it after a move */
#define FO_FIFO_BYTES (2 * sizeof(struct ib_cts) * IB_SLOTS * IB_MAX_RECVS)
#define FO_CR_BYTES (sizeof(uint32_t) * IB_SLOTS * IB_MAX_RECVS)
#define FO_CAUSE_SHOWN 420 /* of a diagnosis, in the one-line WARN */

const char *ib_fo_stage_name(enum ib_fo_stage stage) {
  switch (stage) {
  case IB_FO_IDLE: return "on its port";
  case IB_FO_WAIT_ACK: return "waiting for the receiver to move";
  case IB_FO_EXPECT: return "waiting for the sender to move";
  case IB_FO_WAIT_GO: return "waiting for the sender's go";
  }
  return "unknown";
}

static bool is_on(void) { return transport_prefs()->is_port_failover; }

/* NULL when the connection can move (*to: where; toward: the GID the new
 * port must reach, NULL: the peer's), else why not. */
static const char *cannot_move(const struct ib_comm *c, const uint8_t *toward, struct ib_dev **to) {
  *to = NULL;
  if (!is_on()) return "NCCL_IB_RESILIENCY_PORT_FAILOVER=0 there (set it to 1 on every node)";
  for (int i = 0; c->has_flush && i < IB_SLOTS; i++)
    if (c->flush_reqs[i]) return "a flush read of GPU memory is in flight on that port";
  if (!c->fo.is_return && c->fo.moves >= transport_prefs()->port_failover_max_attempts)
    return "it has moved NCCL_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS times already";
  *to = ib_fo_choose_port(c, toward, true);
  if (*to) return NULL;
  return c->dev->nmembers < 2
           ? "no other port of this host is up on the peer's subnet (NCCL_IB_HCA lists the "
             "ports it may use)"
           : "no other port of its virtual NIC is up, nor another port of this host on the "
             "peer's subnet";
}

void ib_fo_advice(const struct ib_comm *c, char *buf, size_t cap) {
  buf[0] = 0;
  struct ib_dev *where;
  const char *no = is_on() && c->fo.stage == IB_FO_IDLE ? cannot_move(c, NULL, &where) : NULL;
  if (no) { /* on, and the failure that follows is not moved: say why, and where */
    char host[64] = "this host";
    gethostname(host, sizeof(host) - 1);
    snprintf(buf, cap, "; NCCL_IB_RESILIENCY_PORT_FAILOVER=1 could not move it on %s: %s", host,
             no);
    return;
  }
  /* a single port's connection would move beyond its NIC: the knob's help
   * says so; its failure WARN has no room for it */
  if (is_on() || c->dev->nmembers < 2 || c->has_flush) return;
  const struct ib_dev *to = ib_fo_choose_port(c, NULL, false);
  if (to && ib_fo_is_member(c->dev, to))
    snprintf(buf, cap,
             "; NCCL_IB_RESILIENCY_PORT_FAILOVER=1 on both sides would have moved this connection "
             "to %s, %s, and kept it alive",
             to->label,
             to == c->dev ? "a surviving port of its virtual NIC"
                          : "another port of its virtual NIC");
}

/* ---- messages on the control connection ---- */

/* Queued on the control channel: later calls send what the socket does
 * not take now (transport/ctrl.h). */
static int send_msg(struct ib_comm *c, const struct ib_fo_msg *m) {
  uint8_t body[MSG_FAILOVER_MAX];
  size_t len;
  if (ib_fo_encode(m, body, sizeof(body), &len)) return EMSGSIZE;
  return ctrl_send(&c->ctrl, MSG_F_FAILOVER, 0, body, len);
}

static void fill_port(const struct ib_dev *d, struct ib_fo_msg *m) {
  char subnet[64];
  pthread_mutex_lock((pthread_mutex_t *)&d->lock);
  memcpy(m->gid, ib_dev_gid(d, subnet, sizeof(subnet)), 16);
  pthread_mutex_unlock((pthread_mutex_t *)&d->lock);
  m->lid = (uint32_t)d->td->lid;
  m->mtu = (uint32_t)d->mtu;
  snprintf(m->port, sizeof(m->port), "%s", d->label);
}

static void send_nak(struct ib_comm *c, const char *why) {
  struct ib_fo_msg m = {.kind = IB_FO_NAK};
  char host[64] = "the peer";
  gethostname(host, sizeof(host) - 1);
  snprintf(m.text, sizeof(m.text), "on %s, %s", host, why);
  (void)send_msg(c, &m);
}

/* ---- the standby queue pair ---- */

static int cap_wr(const struct ib_dev *d, int want) {
  return d->attr.max_qp_wr > 0 && want > d->attr.max_qp_wr ? d->attr.max_qp_wr : want;
}

static int make_standby(struct ib_comm *c, struct ib_dev *to, char *why, size_t cap) {
  struct ib_fo *f = &c->fo;
  int send_wr = cap_wr(to, c->is_send ? IB_MAX_REQS * (IB_MAX_RECVS + 2) : 2 * IB_SLOTS);
  int recv_wr = cap_wr(to, c->is_send ? 1 : 2 * IB_MAX_REQS);
  int depth = send_wr + recv_wr < 1024 ? 1024 : send_wr + recv_wr;
  if (to->attr.max_cqe > 0 && depth > to->attr.max_cqe) depth = to->attr.max_cqe;
  f->to = to;
  struct ib_res *r = &f->standby;
  r->nqps = 1;
  r->cq = to->v->create_cq(to->ctx, depth, NULL, NULL, 0);
  if (!r->cq) {
    int err = errno ? errno : ENOMEM;
    snprintf(why, cap, "creating a completion queue on %s failed: %s", to->label, strerror(err));
    return err;
  }
  int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  bool is_ok;
  if (c->is_send) {
    r->fifo_mr = ib_mr_plain(to, c->fifo, FO_FIFO_BYTES, rw, "the CTS FIFO");
    r->sizes_mr =
      ib_mr_plain(to, c->sizes_out, FO_CR_BYTES, IBV_ACCESS_LOCAL_WRITE, "grouped sizes");
    is_ok = r->fifo_mr && r->sizes_mr;
  } else {
    r->cr_mr = ib_mr_plain(to, c->cr, FO_CR_BYTES, rw, "completion records");
    r->shadow_mr = ib_mr_plain(to, c->shadow, FO_FIFO_BYTES, IBV_ACCESS_LOCAL_WRITE, "CTS entries");
    is_ok = r->cr_mr && r->shadow_mr;
  }
  if (!is_ok) {
    snprintf(why, cap, "cannot register the connection's control memory on %s", to->label);
    return ENOMEM;
  }
  int err = ib_qp_create(&r->qps[0], to, r->cq, send_wr, recv_wr, c->base.peer.host, why, cap);
  if (!err)
    err = ib_qp_init(&r->qps[0],
                     IBV_ACCESS_REMOTE_WRITE | (c->is_send ? 0 : IBV_ACCESS_REMOTE_READ), why, cap);
  return err;
}

/* RTR and RTS of the standby towards the peer's (m). */
static int connect_standby(struct ib_comm *c, const struct ib_fo_msg *m, char *why, size_t cap) {
  struct ib_fo *f = &c->fo;
  struct ib_fo_msg mine;
  fill_port(f->to, &mine);
  struct hello peer = c->peer_hello; /* the peer's new port: the path, and a diagnosis */
  memcpy(peer.ib.gid, m->gid, 16);
  peer.ib.lid = (int)m->lid;
  peer.ib.mtu = (int)m->mtu;
  snprintf(peer.ib.dev, sizeof(peer.ib.dev), "%.*s", (int)strcspn(m->port, " "), m->port);
  int sl, tc;
  ib_choose_sl_tc(NCCL_NET_TRAFFIC_CLASS_UNDEF, &sl, &tc);
  struct ib_path p;
  (void)ib_rtr_path(f->to, c->is_send, mine.gid, f->to->td->gid_index, &peer, sl, tc, &p);
  p.qpn = m->qpn;
  int err = ib_qp_rtr(&f->standby.qps[0], &p, &peer, why, cap);
  return err ? err : ib_qp_rts(&f->standby.qps[0], why, cap);
}

static void release_standby(struct ib_comm *c) { ib_res_release(c->fo.to, &c->fo.standby); }

/* The old queue pairs take nothing more: what they did not deliver is
 * sent again on the new port. */
static void stop_old(struct ib_comm *c) {
  for (int i = 0; i < c->nqps; i++) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    if (c->qps[i].qp && !c->dev->v->modify_qp(c->qps[i].qp, &a, IBV_QP_STATE))
      c->qps[i].state = IBV_QPS_ERR;
  }
}

/* The connection runs on the standby from now on; a flush queue pair is
 * made again on the new port. 0, or the comm's errno. */
static int switch_to_standby(struct ib_comm *c) {
  struct ib_fo *f = &c->fo;
  const struct verbs_ops *v = c->dev->v;
  bool had_flush = c->has_flush;
  for (int i = 0; i < c->nqps; i++) ib_qp_destroy(&c->qps[i]);
  if (had_flush) {
    ib_qp_destroy(&c->flush_qp);
    v->dereg_mr(c->flush_mr);
    free(c->flush_buf);
    c->flush_mr = NULL;
    c->flush_buf = NULL;
    c->has_flush = false;
  }
  v->destroy_cq(c->cq);
  /* this side's registrations of its control memory, replaced by the standby's */
  if (c->is_send) v->dereg_mr(c->fifo_mr), v->dereg_mr(c->sizes_mr);
  else v->dereg_mr(c->cr_mr), v->dereg_mr(c->shadow_mr);
  ib_comm_adopt(c, &f->standby);
  c->is_split = false;
  ib_fo_unstripe(c, f->to);
  memset(c->unsignaled, 0, sizeof(c->unsignaled));
  bool is_known = false;
  for (int i = 0; i < f->nused; i++) is_known |= f->used[i] == c->dev;
  if (!f->is_return && c->dev == ib_fo_home(c)) f->is_home_down = ib_dev_check_port(c->dev);
  if (f->is_return) f->is_home_down = false;
  if (!is_known && f->nused < IB_FO_MAX_PORTS) f->used[f->nused++] = c->dev;
  c->dev = f->to;
  c->fatal_born = c->fatal_seen = __atomic_load_n(&c->dev->fatal_gen, __ATOMIC_ACQUIRE);
  /* Back on its first port it is as it started: a later failure may move
   * it again (NCCL bounds the probes of one request, not a connection's
   * moves); the returns have their own bound. */
  if (f->is_return) f->returns++, f->moves = 0;
  else f->moves++;
  f->home_up_ns = 0;
  f->is_moved = true;
  f->stage = IB_FO_IDLE;
  c->verdict = IB_VERDICT_NONE;
  free(c->verdict_diag);
  c->verdict_diag = NULL;
  c->first_error[0] = 0;
  if (had_flush && ib_flush_setup(c)) /* logged */
    return ib_fail(c, ENOMEM, true, "%.*s; the flush queue pair cannot be made on %s",
                   FO_CAUSE_SHOWN, f->cause, c->dev->label);
  return 0;
}

/* A move that cannot go on: the connection fails as it would have. */
static int give_up(struct ib_comm *c, int err, bool is_nak, const char *why) {
  if (is_nak) send_nak(c, why);
  release_standby(c);
  return ib_fail(c, err, false, "%.*s; moving to another port failed: %s", FO_CAUSE_SHOWN,
                 c->fo.cause, why);
}

/* ---- the stages ---- */

/* Sender: the standby, then REQ. 0, or the comm's errno. */
static int start_move(struct ib_comm *c, struct ib_dev *to, const char *cause, bool is_peer) {
  char host[64] = "this host", why[1024];
  gethostname(host, sizeof(host) - 1);
  if (c->fo.is_return) snprintf(c->fo.cause, sizeof(c->fo.cause), "%s", cause);
  else if (is_peer && ib_dev_check_port(c->dev)) /* the receiver saw it first: name this port */
    snprintf(c->fo.cause, sizeof(c->fo.cause),
             "%s went down during the transfer (on %s; not active: check its netdev %s and its "
             "link); the receiver saw: %s",
             c->dev->label, host, c->dev->td->netdev ? c->dev->td->netdev : "", cause);
  else if (is_peer) snprintf(c->fo.cause, sizeof(c->fo.cause), "%s", cause);
  else
    snprintf(c->fo.cause, sizeof(c->fo.cause), "%s on %s: %s",
             (c->fo.failed ? c->fo.failed : c->dev)->label, host, cause);
  /* A move back leaves a working path: its writes in flight complete
   * there, and none waits on the peer's answer (it may not call in for a
   * while); the old queue pairs stop when the answer comes (on_ack). */
  if (!c->fo.is_return) stop_old(c);
  int err = make_standby(c, to, why, sizeof(why));
  if (err) return give_up(c, err, true, why);
  struct ib_fo_msg m = {.kind = IB_FO_REQ, .qpn = c->fo.standby.qps[0].qp->qp_num};
  fill_port(to, &m);
  ib_fo_mark_return(c, &m);
  m.addr = (uintptr_t)c->fifo;
  m.rkey = c->fo.standby.fifo_mr->rkey;
  snprintf(m.text, sizeof(m.text), "%s", c->fo.cause);
  err = send_msg(c, &m);
  if (err) return give_up(c, err, false, "the control connection to the peer failed");
  c->fo.stage = IB_FO_WAIT_ACK;
  c->fo.deadline = now_ns() + FO_WAIT_NS;
  INFO(LOG_NET, "send connection with %s: %s %s; moving to %s (qp 0x%x), asking the receiver",
       c->base.peer.desc, c->dev->label, c->fo.is_return ? "is left for a returned port" : "failed",
       to->label, m.qpn);
  return 0;
}

int ib_fo_start_return(struct ib_comm *c, struct ib_dev *home, const char *cause) {
  c->fo.is_return = true;
  if (c->is_send) return start_move(c, home, cause, false);
  struct ib_fo_msg m = {.kind = IB_FO_HINT};
  snprintf(m.text, sizeof(m.text), "%s", cause);
  fill_port(home, &m);
  ib_fo_mark_return(c, &m);
  c->fo.asked_ns = now_ns();
  c->fo.asks++;
  c->fo.is_return = false; /* until the sender's REQ says so */
  INFO(LOG_NET, "receive connection with %s: %s; asking the sender to move back", c->base.peer.desc,
       cause);
  (void)send_msg(c, &m); /* one that cannot go out is asked again later */
  return 0;
}

bool ib_fo_on_error(struct ib_comm *c, const char *diag, bool is_port_down) {
  if (c->fo.stage != IB_FO_IDLE) return true; /* a consequence of the failure being handled */
  struct ib_dev *to;
  (void)is_port_down; /* any failed completion: the path through this port failed */
  c->fo.is_return = false;
  if (cannot_move(c, NULL, &to)) return false;
  if (c->is_send) return start_move(c, to, diag, false) == 0 || c->is_failed;
  /* The receiver's port failed: the sender moves the connection. */
  char host[64] = "this host";
  gethostname(host, sizeof(host) - 1);
  snprintf(c->fo.cause, sizeof(c->fo.cause), "%s on %s: %s",
           (c->fo.failed ? c->fo.failed : c->dev)->label, host, diag);
  struct ib_fo_msg m = {.kind = IB_FO_HINT};
  snprintf(m.text, sizeof(m.text), "%s", c->fo.cause);
  fill_port(to, &m); /* where it will go: the sender picks a port that reaches it */
  if (send_msg(c, &m)) return false;
  stop_old(c);
  c->fo.stage = IB_FO_EXPECT;
  c->fo.deadline = now_ns() + FO_WAIT_NS;
  return true;
}

/* "mlx5_0 port 1", or "its 2 striped ports" for a striped connection. */
static void where_from(const struct ib_comm *c, char *was, size_t cap) {
  if (c->stripe > 1) snprintf(was, cap, "its %d striped ports", c->ndevs);
  else snprintf(was, cap, "%s", c->dev->label);
}

/* Receiver: the sequences of the receives still waiting, ascending. */
static int pending_receives(const struct ib_comm *c, uint32_t *out) {
  int n = 0;
  for (uint32_t k = 0; k < IB_SLOTS; k++) {
    uint32_t seq = c->recv_seq - IB_SLOTS + k;
    const struct ib_req *r = c->slot_reqs[seq % IB_SLOTS];
    if (r && r->seq == seq && !r->is_done) out[n++] = seq;
  }
  return n;
}

/* A striped receiver joins the sender on the port of the same name when
 * it is up (the two ends of one rail), else it takes its standby. */
static struct ib_dev *same_port(const struct ib_comm *c, const char *port) {
  for (int i = 0; c->stripe > 1 && i < c->dev->nmembers; i++) {
    struct ib_dev *m = c->dev->members[i];
    if (!strcmp(m->label, port) && m != c->fo.failed && !ib_dev_check_port(m)) return m;
  }
  return NULL;
}

/* The move's one line on this side: a WARN, or an INFO for a move back. */
static void say_moved(const struct ib_comm *c, const struct ib_dev *from, const char *was,
                      const char *peer_port, const char *what) {
  char how[400];
  ib_fo_how(c, from, was, peer_port, how, sizeof(how));
  const char *dir = c->is_send ? "send" : "receive";
  if (c->fo.is_return) {
    INFO(LOG_NET, "%s connection with %s: %.*s; %s: %s", dir, c->base.peer.desc, FO_CAUSE_SHOWN,
         c->fo.cause, how, what);
    return;
  }
  bool is_wrapped = !c->is_send; /* the receiver quotes the sender's diagnosis */
  WARN("%s connection with %s: %s%.*s%s; %s: %s", dir, c->base.peer.desc,
       is_wrapped ? "the connection's port failed (" : "", FO_CAUSE_SHOWN, c->fo.cause,
       is_wrapped ? ")" : "", how, what);
}

static void on_req(struct ib_comm *c, const struct ib_fo_msg *m) {
  struct ib_dev *to;
  char why[1024];
  snprintf(c->fo.cause, sizeof(c->fo.cause), "%s", m->text);
  c->fo.is_return = ib_fo_is_return(m);
  const char *no = cannot_move(c, m->gid, &to);
  if (no) {
    (void)give_up(c, ECONNRESET, true, no);
    return;
  }
  if (same_port(c, m->port)) to = same_port(c, m->port);
  memcpy(c->fo.peer_gid, m->gid, 16);
  c->fo.has_peer_gid = true;
  struct ib_dev *from = c->dev;
  int err = make_standby(c, to, why, sizeof(why));
  if (!err) err = connect_standby(c, m, why, sizeof(why));
  if (err) {
    (void)give_up(c, err, true, why);
    return;
  }
  stop_old(c);
  c->fo.stage = IB_FO_WAIT_GO;  /* errors of the old queue pairs are ignored from here */
  if (ib_poll(c, NULL)) return; /* what landed completes */
  struct ib_fo_msg a = {.kind = IB_FO_ACK, .qpn = c->fo.standby.qps[0].qp->qp_num};
  fill_port(to, &a);
  a.addr = (uintptr_t)c->cr;
  a.rkey = c->fo.standby.cr_mr->rkey;
  a.npending = pending_receives(c, a.pending);
  char was[80];
  where_from(c, was, sizeof(was));
  if (switch_to_standby(c)) return;
  c->fo.stage = IB_FO_WAIT_GO;
  c->fo.deadline = now_ns() + FO_WAIT_NS;
  c->peer_fifo_addr = m->addr;
  c->peer_fifo_rkey = m->rkey;
  if (send_msg(c, &a)) {
    (void)ib_fail(c, ECONNRESET, false, "%.*s; the control connection failed during the move",
                  FO_CAUSE_SHOWN, c->fo.cause);
    return;
  }
  char what[80];
  snprintf(what, sizeof(what), "%d receives still waiting are posted again there", a.npending);
  say_moved(c, from, was, m->port, what);
}

static bool is_pending(const struct ib_fo_msg *m, uint32_t seq) {
  for (int i = 0; i < m->npending; i++)
    if (m->pending[i] == seq) return true;
  return false;
}

/* Sender: posted messages the receiver no longer waits for landed; the
 * others go again. Returns how many landed. */
static int settle_posted(struct ib_comm *c, const struct ib_fo_msg *m) {
  int landed = 0;
  c->fo.replay_seq = c->send_seq - IB_SLOTS;
  for (int slot = 0; slot < IB_SLOTS; slot++) {
    struct ib_slot *sl = &c->slots[slot];
    if (!sl->is_posted || !sl->n || !sl->reqs[0]) continue;
    if (is_pending(m, sl->reqs[0]->seq)) {
      sl->is_replay = true;
      sl->pending = 0;
      c->fo.nreplay++;
      continue;
    }
    for (int i = 0; i < sl->n; i++)
      if (sl->reqs[i]) sl->reqs[i]->is_done = true;
    sl->is_posted = false;
    sl->n = 0;
    landed++;
  }
  return landed;
}

static void on_ack(struct ib_comm *c, const struct ib_fo_msg *m) {
  char why[1024];
  int err = connect_standby(c, m, why, sizeof(why));
  if (err) {
    (void)give_up(c, err, true, why);
    return;
  }
  char was[80];
  where_from(c, was, sizeof(was));
  struct ib_dev *from = c->dev;
  memcpy(c->fo.peer_gid, m->gid, 16);
  c->fo.has_peer_gid = true;
  if (c->fo.is_return) stop_old(c); /* the receiver's old queue pairs take nothing more */
  int landed = settle_posted(c, m);
  if (switch_to_standby(c)) return;
  c->peer_cr_addr = m->addr;
  c->peer_cr_rkey = m->rkey;
  /* Every clear-to-send comes again, with the receiver's keys on its new port. */
  for (int s = 0; s < IB_SLOTS; s++)
    for (int i = 0; i < IB_MAX_RECVS; i++)
      __atomic_store_n(&ib_fifo_at(c, s, i)->idx, 0, __ATOMIC_RELEASE);
  struct ib_fo_msg go = {.kind = IB_FO_GO};
  if (send_msg(c, &go)) {
    (void)ib_fail(c, ECONNRESET, false, "%.*s; the control connection failed during the move",
                  FO_CAUSE_SHOWN, c->fo.cause);
    return;
  }
  char what[96];
  snprintf(what, sizeof(what), "%d messages in flight had landed, %d are sent again there", landed,
           c->fo.nreplay);
  say_moved(c, from, was, m->port, what);
}

/* Receiver: the receives still waiting, and their clear-to-sends, again. */
static void on_go(struct ib_comm *c) {
  c->fo.stage = IB_FO_IDLE;
  uint32_t pending[IB_SLOTS];
  int n = pending_receives(c, pending);
  for (int i = 0; i < n && !c->is_failed; i++) {
    int slot = (int)(pending[i] % IB_SLOTS);
    struct ib_req *r = c->slot_reqs[slot];
    if (ib_fo_recv_keys(c, r, slot, r->n)) return;
    if (ib_post_recvs(c, pending[i], slot)) return;
    (void)ib_post_cts(c, pending[i], slot, r->n);
  }
}

static void dispatch(struct ib_comm *c, const struct ib_fo_msg *m) {
  struct ib_dev *to;
  const uint8_t *toward;
  switch (m->kind) {
  case IB_FO_HINT:
    if (!c->is_send || c->fo.stage != IB_FO_IDLE) return;
    c->fo.is_return = ib_fo_is_return(m);
    /* the port the receiver will move to, from a HINT that names one */
    toward = gid_is_zero(m->gid) ? NULL : m->gid;
    if (toward && cannot_move(c, toward, &to))
      toward = NULL; /* none reaches it: the
                      * receiver chooses again at REQ */
    if (cannot_move(c, toward, &to)) {
      if (c->fo.is_return) return; /* the receiver stays where it is: nothing is lost */
      snprintf(c->fo.cause, sizeof(c->fo.cause), "%s", m->text);
      (void)give_up(c, ECONNRESET, true, cannot_move(c, toward, &to));
      return;
    }
    (void)start_move(c, to, m->text, true);
    return;
  case IB_FO_REQ:
    if (!c->is_send && (c->fo.stage == IB_FO_IDLE || c->fo.stage == IB_FO_EXPECT)) on_req(c, m);
    return;
  case IB_FO_ACK:
    if (c->is_send && c->fo.stage == IB_FO_WAIT_ACK) on_ack(c, m);
    return;
  case IB_FO_GO:
    if (!c->is_send && c->fo.stage == IB_FO_WAIT_GO) on_go(c);
    return;
  default:
    release_standby(c);
    (void)ib_fail(c, ECONNRESET, false, "%.*s; the %s side cannot move to another port: %s",
                  FO_CAUSE_SHOWN, c->fo.cause[0] ? c->fo.cause : "a port failed",
                  c->is_send ? "receiving" : "sending", m->text);
  }
}

bool ib_fo_on_msg(void *comm, const struct ctrl_msg *msg) {
  struct ib_comm *c = comm;
  if (c->is_polling) return false; /* handled after the completion queue is drained */
  struct ib_fo_msg m;
  char why[300];
  if (ib_fo_decode(msg->body, msg->len, &m, why, sizeof(why))) {
    (void)ib_fail(c, EPROTO, true, "a fail-over message from the peer cannot be read: %s", why);
    return true;
  }
  dispatch(c, &m);
  return true;
}

int ib_fo_progress(struct ib_comm *c) {
  if (c->is_failed) return c->fail_err;
  int err = ctrl_flush(&c->ctrl);
  if (err)
    return ib_fail(c, ECONNRESET, false,
                   "%.*s; the control connection failed while the connection moved to another "
                   "port (%s): %s",
                   FO_CAUSE_SHOWN, c->fo.cause[0] ? c->fo.cause : "a port failed",
                   ib_fo_stage_name(c->fo.stage),
                   err == ETIMEDOUT ? "the peer read nothing for 2 s" : strerror(err));
  if (c->fo.stage == IB_FO_IDLE) return 0; /* the move's last message went out */
  bool closed = false;
  if (ib_ctrl_step(c, &closed, &err)) return c->fail_err;
  if (closed)
    return ib_fail(c, ECONNRESET, false,
                   "%.*s; the peer's control connection closed while the connection moved to "
                   "another port (%s): its process died or it closed this connection",
                   FO_CAUSE_SHOWN, c->fo.cause, ib_fo_stage_name(c->fo.stage));
  if (!c->is_failed && c->fo.stage != IB_FO_IDLE && now_ns() > c->fo.deadline) {
    /* A move back waits for as long as the receiver does not call in: the
     * old path still carries what was posted, and a peer that died closes
     * the control connection. */
    if (c->fo.is_return && c->fo.stage == IB_FO_WAIT_ACK) {
      c->fo.deadline = now_ns() + FO_WAIT_NS;
      INFO(LOG_NET,
           "send connection with %s: the receiver has not answered the move back to %s "
           "for 30 s (it has posted no receive since); still waiting",
           c->base.peer.desc, c->fo.to->label);
      return 0;
    }
    return give_up(c, ETIMEDOUT, true, "the peer did not answer within 30 s");
  }
  return c->is_failed ? c->fail_err : 0;
}

int ib_fo_post_slot(struct ib_comm *c, struct ib_slot *sl) {
  sl->is_posted = sl->is_replay = true;
  c->fo.nreplay++;
  return ib_fo_replay(c);
}

int ib_fo_replay(struct ib_comm *c) {
  if (c->fo.stage != IB_FO_IDLE || c->fo.is_replaying) return 0;
  c->fo.is_replaying = true;
  int err = 0;
  for (; c->fo.nreplay && !err && c->fo.replay_seq != c->send_seq; c->fo.replay_seq++) {
    uint32_t seq = c->fo.replay_seq;
    int slot = (int)(seq % IB_SLOTS);
    struct ib_slot *sl = &c->slots[slot];
    if (!sl->is_replay || sl->reqs[0]->seq != seq) continue;
    bool is_back = true;
    for (int i = 0; i < sl->n; i++)
      is_back &= __atomic_load_n(&ib_fifo_at(c, slot, i)->idx, __ATOMIC_ACQUIRE) == seq + 1;
    if (!is_back) break; /* its clear-to-send is on its way */
    sl->is_replay = false;
    c->fo.nreplay--;
    err = ib_post_slot_now(c, seq);
  }
  c->fo.is_replaying = false;
  return err ? c->fail_err : 0;
}
