/* SPDX-License-Identifier: Apache-2.0 */
/* An RDMA connection (see ib.h for the protocol), shared by ib_comm.c,
 * ib_send.c, ib_recv.c and ib_poll.c. A comm is driven by one thread at a
 * time (NCCL's contract), so nothing here is locked. */
#ifndef DIAG_TRANSPORT_IB_COMM_H
#define DIAG_TRANSPORT_IB_COMM_H

#include <stdbool.h>

#include "transport/ctrl.h"
#include "transport/ib/dev/ib.h"
#include "transport/run/stall.h"

#define IB_SEND_REQS (IB_MAX_REQS * IB_MAX_RECVS) /* a sender may see 32 x maxRecvs */

/* wr_id = kind << 32 | slot */
enum { WR_DATA = 1, WR_RECV = 2, WR_CTS = 3, WR_FLUSH = 4 };
#define WR_ID(kind, slot) (((uint64_t)(kind) << 32) | (uint32_t)(slot))

struct ib_req {
  struct transport_req base;
  bool is_send;
  bool is_done;
  bool is_flush;
  uint32_t seq;   /* FIFO slot sequence; a flush's own sequence */
  int n;          /* receive: buffers; send: 1 */
  uint64_t bytes; /* send: its size; receive: the capacity of its buffers */
  int tag;        /* the first buffer's */
  int sizes[IB_MAX_RECVS];
  bool is_gpu; /* a buffer of the request is GPU memory */
  int64_t posted_ns;
  struct ib_mh *alt[IB_MAX_RECVS]; /* its buffers registered on the port it moved to */
};

/* The sends matched to one FIFO slot so far (a grouped receive needs all
 * of them before anything is posted). */
struct ib_slot {
  int n, matched;
  bool is_used[IB_MAX_RECVS];
  struct ib_req *reqs[IB_MAX_RECVS];
  void *bufs[IB_MAX_RECVS];
  uint32_t lkeys[IB_MAX_RECVS];
  struct ib_mh *mhs[IB_MAX_RECVS]; /* striped: their keys on the other ports */
  bool is_posted;
  bool is_replay; /* posted on a port that failed, not landed: posted again after the move */
  int pending; /* signaled writes of the posted slot not completed yet (one per queue pair used) */
};

/* Port fail-over (ib_failover.c): the stages of a move to another port
 * of the connection's virtual NIC. */
enum ib_fo_stage {
  IB_FO_IDLE,     /* on its port */
  IB_FO_WAIT_ACK, /* sender: asked the receiver to move, waits for its answer */
  IB_FO_EXPECT,   /* receiver: its queue pair failed, waits for the sender to move */
  IB_FO_WAIT_GO,  /* receiver: moved, waits for the sender's go to repost */
};
#define IB_FO_MAX_PORTS 8

/* What a connection runs on at one port: its completion queue, its queue
 * pairs and this side's registrations of its control memory. Connection
 * setup and a move to another port each build one and hand it to
 * ib_comm_adopt, the one place a comm takes them. */
struct ib_res {
  struct ibv_cq *cq;
  int nqps;
  struct ib_qp qps[IB_MAX_QPS];
  struct ibv_mr *fifo_mr, *sizes_mr; /* sender: the CTS FIFO the peer writes, the grouped sizes */
  struct ibv_mr *cr_mr, *shadow_mr;  /* receiver: the completion records, its CTS entries */
};

struct ib_fo {
  enum ib_fo_stage stage;
  int moves;
  bool is_moved;
  int nused;
  struct ib_dev *used[IB_FO_MAX_PORTS]; /* the ports it ran on (registrations made there) */
  struct ib_dev *to;                    /* during a move: the standby's port */
  struct ib_dev *failed;                /* striped: the port whose completion failed */
  struct ib_res standby;                /* during a move: what the connection moves onto */
  int64_t deadline;
  char cause[700]; /* the failed port's diagnosis */
  uint32_t replay_seq;
  int nreplay;
  bool is_replaying;
  /* the peer's port now: its hello's until a move tells another */
  bool has_peer_gid;
  uint8_t peer_gid[16];
  /* moving back to the port it started on (NCCL_IB_RESILIENCY_PORT_RECOVERY) */
  bool is_return;     /* the move under way is one */
  bool is_home_down;  /* this side's first port was down when it left it: this side
                       * moves back (the other's port may be down still) */
  int returns;        /* moves back so far */
  int64_t home_up_ns; /* since when that port is seen active again, 0 not yet */
  int64_t asked_ns;   /* receiver: when it asked the sender for one */
  int asks;           /* receiver: how often (a sender that cannot is not asked forever) */
};

/* A failure seen but not judged yet: the proxy thread must not wait for
 * the evidence, later calls collect it (ib_poll.c). */
enum ib_verdict {
  IB_VERDICT_NONE,
  IB_VERDICT_HANGUP, /* the control socket closed: the fabric may still complete work */
  IB_VERDICT_WC,     /* a completion failed: the peer's control socket may yet explain it */
};

struct ib_comm {
  struct transport_comm base;
  struct hello peer_hello; /* its RDMA identity, for completion-error diagnoses */
  char *settings_diff;     /* send side: what the two hosts' hellos differ in, or NULL */
  bool is_send;
  struct ib_dev *dev;
  struct ctrl_chan ctrl; /* the control connection after setup (transport/ctrl.h) */
  struct ibv_cq *cq;
  int nqps;
  struct ib_qp qps[IB_MAX_QPS];
  bool is_split; /* every message is spread over all queue pairs */
  /* Striped over a fused NIC's ports (ib_stripe.c): a message goes over
   * `stripe` queue pairs in turn (1: one, unstriped); queue pair j runs
   * on this side's port devs[j % ndevs] (dev->members[members[]]) towards
   * the peer's port j % nrdevs. [0] of each array is the plain field. */
  int stripe, ndevs, nrdevs;
  struct ib_dev *devs[IB_MAX_STRIPE];
  int members[IB_MAX_STRIPE];
  struct ibv_cq *cqs[IB_MAX_STRIPE];
  struct ibv_mr *cr_mrs[IB_MAX_STRIPE];    /* receiver: its completion records */
  struct ibv_mr *sizes_mrs[IB_MAX_STRIPE]; /* sender: the grouped sizes */
  uint32_t peer_cr_rkeys[IB_MAX_STRIPE];   /* sender: the peer's records, per its port */
  int cts_w;                               /* CTS entry width (ib_cts_at): 2 striped */
  bool is_ar;            /* adaptive routing: large data apart from the immediate */
  uint64_t ar_threshold; /* NCCL_IB_AR_THRESHOLD */
  /* per queue pair: unsignaled writes since its last signaled one */
  uint8_t unsignaled[IB_MAX_QPS];
  /* send side */
  struct ib_cts *fifo;
  struct ibv_mr *fifo_mr;
  uint64_t peer_cr_addr;
  uint32_t peer_cr_rkey;
  uint32_t *sizes_out; /* grouped sizes, written into the peer's records */
  struct ibv_mr *sizes_mr;
  uint32_t send_seq;
  struct ib_slot slots[IB_SLOTS];
  /* receive side */
  struct ib_cts *shadow;
  struct ibv_mr *shadow_mr;
  uint32_t *cr;
  struct ibv_mr *cr_mr;
  uint64_t peer_fifo_addr;
  uint32_t peer_fifo_rkey;
  uint32_t recv_seq;
  struct ib_req *slot_reqs[IB_SLOTS];
  uint8_t recv_pending[IB_SLOTS]; /* immediates a receive still waits for */
  /* flush (GPU memory): a queue pair connected to itself, on the GID the
   * connection uses on gid_dev (a repaired pair's, ib_repair.h) */
  const struct ib_dev *gid_dev;
  int gid_index;
  uint8_t gid[16];
  bool has_flush;
  struct ib_qp flush_qp;
  uint32_t *flush_buf;
  struct ibv_mr *flush_mr;
  struct ib_req *flush_reqs[IB_SLOTS];
  uint8_t flush_pending[IB_SLOTS];       /* striped: the ports' reads not completed yet */
  struct ib_qp flush_qps[IB_MAX_STRIPE]; /* striped: the other ports' ([0] unused) */
  struct ibv_mr *flush_mrs[IB_MAX_STRIPE];
  uint32_t flush_seq;
  /* requests and state */
  struct ib_req reqs[IB_SEND_REQS];
  int inflight;
  bool has_success;      /* a completion succeeded: errors after it are not path errors */
  uint32_t max_ok_bytes; /* the largest message whose writes were acknowledged */
  char first_error[640];
  int64_t last_ctrl_check;
  uint32_t idle_calls; /* calls that found nothing to do: the clock is read every IB_IDLE_EVERY */
  enum ib_verdict verdict;
  int64_t verdict_since;
  char *verdict_diag; /* IB_VERDICT_WC: the completion's diagnosis */
  /* a send that waits for the receiver's clear-to-send (no request yet) */
  uint32_t cts_wait_seq;
  int64_t cts_wait_since; /* 0: not waiting */
  bool has_warned_cts;
  bool is_tag_unmatched; /* the entry is there, but no free entry carries the send's tag */
  int cts_wait_tag;
  bool has_warned_stall;           /* a no-progress warning since the last completion */
  struct run_watch watch;          /* the run-time stall verdict's (transport/run/stall.h) */
  unsigned fatal_seen, fatal_born; /* the device's fatal generation: checked, at creation */
  unsigned fatal_seen_m[IB_MAX_STRIPE], fatal_born_m[IB_MAX_STRIPE]; /* striped: devs[k >= 1] */
  bool is_failed;
  int fail_err;    /* the first failure's errno, classed as transport_result() expects */
  bool is_polling; /* inside ib_poll: a fail-over message waits until it returns */
  struct ib_fo fo;
};

/* The first of the queue pairs message seq goes on, and how many. */
static inline int ib_msg_first(const struct ib_comm *c, uint32_t seq) {
  return c->is_split ? 0 : (int)((seq * (uint32_t)c->stripe) % (uint32_t)c->nqps);
}
static inline int ib_msg_qps(const struct ib_comm *c) { return c->is_split ? c->nqps : c->stripe; }
/* Entry i of FIFO slot `slot` (sender: the FIFO; receiver: its shadow). */
static inline struct ib_cts *ib_fifo_at(const struct ib_comm *c, int slot, int i) {
  return ib_cts_at(c->is_send ? c->fifo : c->shadow, slot, i, c->cts_w);
}

/* The comm takes r's objects (its old ones of those kinds are gone); a
 * registration r leaves NULL stays the comm's. r is left empty. */
void ib_comm_adopt(struct ib_comm *c, struct ib_res *r);
/* Destroys what r holds, on dev; r is left empty. */
void ib_res_release(struct ib_dev *dev, struct ib_res *r);
struct ib_req *ib_req_get(struct ib_comm *c);
void ib_req_put(struct ib_comm *c, struct ib_req *r);
/* Fails the comm with err (see transport_result): logs once (WARN), tells
 * the peer why on the control socket when notify is set, and makes every
 * later call on the comm return the first failure. Returns the comm's errno. */
int ib_fail(struct ib_comm *c, int err, bool notify, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

ncclResult_t ib_isend(struct transport_comm *xc, void *data, size_t size, int tag, void *mh,
                      void **request);
ncclResult_t ib_irecv(struct transport_comm *xc, int n, void **data, size_t *sizes, int *tags,
                      void **mhandles, void **request);
ncclResult_t ib_iflush(struct transport_comm *xc, int n, void **data, int *sizes, void **mhandles,
                       void **request);
/* Sends that found their FIFO slot complete (all of a group): posted.
 * These return 0 or the comm's errno once it failed. */
int ib_post_slot(struct ib_comm *c, uint32_t seq);
/* Drains the completion queue; *found (may be NULL) counts the completions. */
int ib_poll(struct ib_comm *c, int *found);
/* A call that found nothing to do: every IB_IDLE_EVERY of them reads the
 * clock once and looks at the peer (and, for r, the stall warning). An
 * unjudged failure is judged on every call. Returns the comm's errno once
 * it failed. */
#define IB_IDLE_EVERY 64
int ib_idle(struct ib_comm *c, struct ib_req *r, int64_t *now);
ncclResult_t ib_test(void *request, int *done, int *sizes);
/* Rate-limited look at the control socket (the peer died, or gave up) and
 * at the peer process's liveness (transport/liveness.h). */
int ib_check_peer(struct ib_comm *c, int64_t now);
/* One step of the control channel, never waiting (ib_ctrl.c): what the
 * peer said is acted on (a fail-over message, its abort notice), a message
 * cut short for 1 s fails the comm. *closed: the peer closed its side
 * (*sock_err: the socket's errno, 0 for an orderly close). Returns the
 * comm's errno once it failed, else 0. */
int ib_ctrl_step(struct ib_comm *c, bool *closed, int *sock_err);
/* A completion failed with this diagnosis: judged at once when the port is
 * down or the control socket already closed, else by later calls
 * (ib_settle). Returns the comm's errno once it failed. */
int ib_wc_verdict(struct ib_comm *c, const char *diag, bool is_port_down);
/* Judges a pending failure as far as the evidence allows now. */
int ib_settle(struct ib_comm *c, int64_t now);
/* A send still waiting for its clear-to-send: warns once when it has
 * waited NCCL_DIAG_STALL_WARN_SEC, naming the message, what it waits for
 * and the peer's state. */
void ib_check_cts_wait(struct ib_comm *c, int64_t now, uint32_t seq, size_t size, int tag);
/* The fatal-event guard, one line at the top of isend, irecv, iflush and
 * test (as NCCL's fatal-count check): one atomic load and a compare while
 * no fatal event of the device happened; the device's records are read
 * out of line (ib_fatal.c), as are a striped connection's other ports'.
 * 0, or the comm's errno once an event affecting it failed it. */
int ib_fatal_check(struct ib_comm *c, unsigned gen);
static inline int ib_fatal_guard(struct ib_comm *c) {
  unsigned gen = __atomic_load_n(&c->dev->fatal_gen, __ATOMIC_ACQUIRE);
  if (__builtin_expect(gen == c->fatal_seen && c->ndevs < 2, 1)) return 0;
  return ib_fatal_check(c, gen);
}
/* The flush queue pair (connected to itself): 0 or an errno (logged). */
int ib_flush_setup(struct ib_comm *c);
/* One slot's sends on the connection's queue pairs now (ib_send.c). */
int ib_post_slot_now(struct ib_comm *c, uint32_t seq);
/* A receive's immediate(s), and its clear-to-send entries (ib_recv.c):
 * 0 or the comm's errno. */
int ib_post_recvs(struct ib_comm *c, uint32_t seq, int slot);
int ib_post_cts(struct ib_comm *c, uint32_t seq, int slot, int n);

/* ---- port fail-over (ib_failover.c), NCCL_IB_RESILIENCY_PORT_FAILOVER ---- */
const char *ib_fo_stage_name(enum ib_fo_stage stage);
/* A completion failed with this diagnosis: true when the connection moves
 * instead (or is moving), false when the failure is judged as before. */
bool ib_fo_on_error(struct ib_comm *c, const char *diag, bool is_port_down);
/* While a move is under way: one step (reads the peer's messages, checks
 * the deadline). Returns the comm's errno once it failed. */
int ib_fo_progress(struct ib_comm *c);
/* A whole fail-over message from the peer: true when handled, false to
 * keep it for a later call (the completion queue is being drained). */
bool ib_fo_on_msg(void *comm, const struct ctrl_msg *m);
/* Sender, after a move: posts the messages to replay whose clear-to-sends
 * are back, in order. 0 or the comm's errno. */
int ib_fo_replay(struct ib_comm *c);
/* Sender: a slot complete while messages wait to be sent again goes
 * behind them. 0 or the comm's errno. */
int ib_fo_post_slot(struct ib_comm *c, struct ib_slot *sl);

/* Where a connection may move (transport/ib/failover/ib_fo_ports.c): a port of its virtual NIC,
 * else a port of this host that is up and reaches toward (the GID the
 * peer moved to; NULL: the peer's port, or any it lists), preferring the
 * port it started on, then its own (may_stay), then its NIC's. NULL: none. */
struct ib_dev *ib_fo_choose_port(const struct ib_comm *c, const uint8_t *toward, bool may_stay);
bool ib_fo_is_member(const struct ib_dev *of, const struct ib_dev *d);
/* The port the connection started on, and the peer's port now. */
struct ib_dev *ib_fo_home(const struct ib_comm *c);
const uint8_t *ib_fo_peer_gid(const struct ib_comm *c);
/* Moving back (transport/ib/failover/ib_fo_return.c). Flags a REQ or HINT as a move back: older
 * peers ignore the flag (a HINT's or REQ's pending list is unused). */
struct ib_fo_msg;
void ib_fo_mark_return(const struct ib_comm *c, struct ib_fo_msg *m);
bool ib_fo_is_return(const struct ib_fo_msg *m);
/* "moved from A to B of the same virtual NIC, the receiver to C (...)" */
void ib_fo_how(const struct ib_comm *c, const struct ib_dev *from, const char *was,
               const char *peer_port, char *out, size_t cap);
/* From the idle check: the port it started on active again for
 * NCCL_IB_RESILIENCY_PORT_RECOVERY_START_DELAY ms starts a move back.
 * 0 or the comm's errno. */
int ib_fo_return_step(struct ib_comm *c, int64_t now);
/* ib_failover.c: the sender moves to home; the receiver asks it to. */
int ib_fo_start_return(struct ib_comm *c, struct ib_dev *home, const char *cause);

/* The fail-over seam: all the data path asks of a move (ib_send.c,
 * ib_recv.c, ib_poll.c read no fo field). A completion error goes to
 * ib_fo_on_error; the rest are these. */
/* A move is under way: new work waits, NCCL calls again. */
static inline bool ib_fo_moving(const struct ib_comm *c) { return c->fo.stage != IB_FO_IDLE; }
/* The connection moved since setup: a buffer needs its key on the new port. */
static inline bool ib_fo_moved(const struct ib_comm *c) { return c->fo.is_moved; }
/* Messages wait to be sent again on the new port. */
static inline bool ib_fo_replay_pending(const struct ib_comm *c) { return c->fo.nreplay != 0; }
/* Progress: what a move needs stepped (its messages, its last message
 * still going out). */
static inline bool ib_fo_needs_step(const struct ib_comm *c) {
  return c->fo.stage != IB_FO_IDLE || ctrl_is_sending(&c->ctrl);
}
/* After a move: the keys of a slot's buffers (sender) or of a receive's
 * buffers (receiver, into its CTS entries) on the new port. 0 or the
 * comm's errno. */
int ib_fo_send_keys(struct ib_comm *c, struct ib_slot *sl);
/* r's registration k of [addr, addr + size) on the comm's port now. */
int ib_fo_key(struct ib_comm *c, struct ib_req *r, int k, uintptr_t addr, size_t size);
int ib_fo_recv_keys(struct ib_comm *c, struct ib_req *r, int slot, int n);
/* A striped connection that moved runs on its one new port (to) from then on. */
void ib_fo_unstripe(struct ib_comm *c, struct ib_dev *to);
/* Its registrations on a new port are released with the request. */
void ib_fo_req_done(struct ib_comm *c, struct ib_req *r);
/* Whether mh is a registration on a port this comm ran on. */
bool ib_fo_owns(const struct ib_comm *c, const struct ib_mh *mh);
/* For a port failure with the setting at 0: the advice to turn it on when
 * another port of the virtual NIC is up ("" when none). */
void ib_fo_advice(const struct ib_comm *c, char *buf, size_t cap);
/* Releases the standby and the registrations of a comm being closed. */
void ib_fo_close(struct ib_comm *c);

#endif
