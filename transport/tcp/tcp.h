/* SPDX-License-Identifier: Apache-2.0 */
/* TCP transport internals.
 *
 * A connection is one control socket plus N data sockets. Every message
 * starts with a 24-byte header on the control socket. Small messages
 * (<= inline limit) follow their header there. Larger ones are cut into at
 * most N stripes of `chunk` bytes, one per data socket starting at socket
 * seq % N; both sides derive the same cut from the header, so the sender's
 * settings are the only ones that matter.
 *
 * The control socket is moved by the caller's thread in test(), in
 * batches: isend only queues its header (and inline payload), and the
 * next test() writes every queued message in one sendmsg; on the receive
 * side one recv brings whatever has arrived into a staging buffer, whose
 * headers are matched to as many posted receives as there are. So a window
 * of small messages costs one syscall each way, not one per message.
 *
 * Data sockets: stripes up to caller_max bytes (NCCL_DIAG_CALLER_MAX: 4
 * MiB when the peer is on this host, 1 MiB otherwise) are moved by the
 * caller's thread in test() (a hand-off costs more than they take);
 * larger ones by the device's shared helper threads (tcp_pool.c): at most
 * NCCL_DIAG_SOCKET_POOL per device, serving the data sockets of every
 * connection on it through epoll, so thousands of connections need no
 * threads of their own. A connection's sockets are spread over
 * min(NCCL_SOCKET_NTHREADS, pool) of them, socket k on helper k % that,
 * as NCCL's socket k is served by its thread k % NCCL_SOCKET_NTHREADS.
 * Without helpers (NCCL_SOCKET_NTHREADS=0) the caller moves everything.
 * A per-socket owner flag keeps the caller and a helper from touching a
 * socket at once. Each data socket has a single-producer (the comm's
 * driving thread) single-consumer ring of stripes; a request is done when
 * its header and payload bytes are. */
#ifndef DIAG_TRANSPORT_TCP_H
#define DIAG_TRANSPORT_TCP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/ctrl.h"
#include "transport/frame.h"
#include "transport/run/stall.h"
#include "transport/transport.h"

#define TCP_MAX_REQS NCCL_NET_MAX_REQUESTS
/* Requests are allocated this many at a time, as a comm needs them: most
 * comms of a job never have more than a few in flight. */
#define TCP_REQ_CHUNK 8
#define TCP_REQ_CHUNKS (TCP_MAX_REQS / TCP_REQ_CHUNK)
_Static_assert(TCP_MAX_REQS % TCP_REQ_CHUNK == 0, "whole chunks of requests");
#define TCP_RING TCP_MAX_REQS /* stripes per data socket: a message has at most one per socket */
#define TCP_STAGE 16384       /* receive staging buffer, allocated while in use */

struct tcp_comm;
struct tcp_worker;

struct tcp_req {
  struct transport_req base;
  struct tcp_req *next; /* in the comm's free list, send queue or posted list */
  bool is_send;
  bool is_hdr_done; /* header (and inline payload) fully moved */
  bool has_warned_stall;
  uint32_t still_mark; /* its progress when last seen moving (tcp_stall.c), low bits */
  uint8_t *data;
  size_t cap;  /* recv: capacity */
  size_t size; /* send: size; recv: from the header */
  int tag;
  uint32_t seq;      /* send: its number; recv: the number it will take, then took */
  size_t inline_off; /* recv: inline payload bytes copied */
  size_t out_off;    /* send: header and inline bytes written */
  size_t out_total;
  atomic_llong pending;     /* data-socket bytes still to move */
  int64_t still_ns;         /* posted, or last seen moving */
  uint8_t hdr[MSG_HDR_LEN]; /* send: the encoded header */
};

struct tcp_task {
  uint8_t *buf;
  uint32_t len; /* a stripe is at most 1 GiB */
  uint32_t off;
  struct tcp_req *req;
};

struct tcp_sock {
  int fd;
  int index;
  struct tcp_comm *comm;
  struct tcp_worker *worker;       /* its helper, NULL when the caller moves everything */
  atomic_int owner;                /* SOCK_FREE, or who is moving its bytes right now */
  atomic_uint head;                /* consumer */
  atomic_uint tail;                /* producer */
  struct tcp_task tasks[TCP_RING]; /* a ring: head..tail */
  int lowat;                       /* SO_RCVLOWAT the helper last set (receive side) */
  /* the helper's own: in its active list, and readable/writable since the
   * last EAGAIN (edge-triggered epoll) */
  struct tcp_sock *next_active;
  bool is_active, is_ready;
  /* the kick list: a driving thread hands the helper new work */
  struct tcp_sock *next_kick;
  atomic_bool is_kicked;
};

struct tcp_comm {
  struct transport_comm base;
  bool is_send;
  bool is_same_host; /* both ends on this host (see tcp_comm_create) */
  bool is_attached;  /* its data sockets are in the helpers' epoll sets */
  bool is_quiesced;  /* failed: the helpers no longer touch it */
  int ctrl_fd;
  int nsocks, nhelpers;
  struct tcp_sock *socks; /* nsocks of them, each with its ring */
  uint64_t moved;         /* bytes the driving thread moved: progress for the idle wait */
  size_t inline_max, min_chunk;
  size_t caller_max; /* stripes the caller moves itself when there are helpers */
  int64_t stall_ns;
  struct run_watch watch; /* the run-time stall verdict's (transport/run/stall.h) */
  char *settings_diff;    /* settings the two hosts' hellos differ in, or NULL */

  struct tcp_req *req_chunks[TCP_REQ_CHUNKS]; /* TCP_REQ_CHUNK each, allocated as needed */
  int nreq_chunks;
  bool is_req_oom; /* the last chunk could not be allocated */
  struct tcp_req *free_reqs;
  uint32_t next_seq; /* send: the next message's number; recv: the next header's */
  int peer_mtu;      /* its interface MTU, from its hello: 0 unknown (in padding) */

  /* send side: messages whose header (or inline payload) is not all
   * written, oldest first; when to look for the receiver's notice next */
  struct tcp_req *out_head, *out_tail;
  int64_t next_notice_ns;

  /* recv side: posted receives waiting for their header, oldest first */
  struct tcp_req *posted_head, *posted_tail;
  uint32_t next_post_seq; /* the message number the next posted receive takes */
  struct tcp_req *cur;    /* inline payload being read */
  uint8_t *stage;         /* bytes read from the control socket, not yet parsed */
  size_t stage_off, stage_len;
  uint8_t hdr_buf[MSG_HDR_LEN];
  size_t hdr_got;
  bool has_warned_tag;
  /* the sender's end of the control stream was read: a clean close, which
   * fails only the receives still waiting for their header or payload */
  bool is_peer_closed;

  /* first error, set by whichever thread detects it (and logs it): an
   * errno classed as transport_result() expects; atomic because a helper
   * reads it while the caller's thread may be setting it */
  atomic_bool is_failed;
  atomic_int fail_err;
  pthread_mutex_t err_lock;
  /* send side: the receiver's abort notice, read without waiting through
   * the control channel's decoder (ctrl.h), allocated at its first byte. A
   * helper that hit a reset and the caller's check race for it, and both
   * must tell its reason. CLOSED and BAD stay once seen. */
  pthread_mutex_t notice_lock;
  struct ctrl_in *notice_in;
  enum ctrl_read notice_st;
  int notice_err;       /* CLOSED: the socket's errno, 0 for the receiver's close */
  int64_t notice_since; /* the first check that found part of a notice */
  char *notice;
  /* send side: a socket failed; the receiver resets the data sockets right
   * after writing its notice, so the failure is held (under err_lock) for
   * the notice that explains it, and later calls judge it: nothing waits. */
  atomic_bool is_held;
  int held_err;
  int64_t held_since;
  char *held_msg;

  /* recv side: the sender's abort notice, its reason still arriving */
  char *abort_reason;
  size_t abort_len, abort_got;
  int64_t abort_since;
};

/* The comm failed, or holds a failure (is_held): helpers leave it alone. */
static inline bool tcp_is_down(struct tcp_comm *c) {
  return atomic_load_explicit(&c->is_failed, memory_order_acquire) ||
         atomic_load_explicit(&c->is_held, memory_order_acquire);
}

/* ---- tcp_comm.c: lifetime, failure, requests ---- */

/* Fails the comm with err (see transport_result) and returns the comm's
 * errno: the first failure wins, is logged once and is what every later
 * call returns. flags: TCP_F_NOTIFY tells the peer why and resets the data
 * sockets (failures we detect in the protocol); TCP_F_SOCKET marks a
 * socket error, for which the send side first looks for the peer's own
 * notice. */
enum { TCP_F_NOTIFY = 1, TCP_F_SOCKET = 2 };
int tcp_fail(struct tcp_comm *c, int err, int flags, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

/* What the driving thread returns once the comm failed (the comm's errno):
 * it first takes the comm from the helpers, so none still reads or writes
 * a caller's buffer when the caller, told of the failure, frees it. */
int tcp_failed(struct tcp_comm *c);

/* A free request of the comm, or NULL: all TCP_MAX_REQS in use, or (then
 * c->is_req_oom) no memory for another chunk of them. */
struct tcp_req *tcp_req_get(struct tcp_comm *c);
void tcp_req_put(struct tcp_comm *c, struct tcp_req *r);

/* ---- tcp_mr.c: registrations ---- */
ncclResult_t tcp_reg_mr(struct transport_comm *xc, void *data, size_t size, int type,
                        void **mhandle);
ncclResult_t tcp_dereg_mr(struct transport_comm *xc, void *mhandle);
/* Whether an isend/irecv buffer lies inside the registration it names (a
 * NULL handle names none); why says how not. */
bool tcp_mr_covers(const void *mhandle, const void *data, size_t size, char *why, size_t cap);

/* ---- tcp_abort.c: what one side tells the other when it gives up ---- */

/* Tells the peer why this side gives up (an abort frame on the control
 * socket) and resets the data sockets. */
void tcp_abort_peer(struct tcp_comm *c, const char *reason);
/* Send side: whether the receiver has said something (it only ever sends
 * an abort notice, or closes); if so the comm fails with its words. A
 * clean close (the end of the stream, no notice) fails the comm only when
 * is_close_fatal: a request of ours is still in flight, or a new one is
 * being posted; a receiver that closes after taking everything leaves the
 * sender's delivered requests to complete. Looks at most every
 * millisecond: 0 or the comm's errno. */
int tcp_check_notice(struct tcp_comm *c, bool is_close_fatal);
/* Send side: a message is still going out (its header, inline payload or
 * a stripe not all written). */
bool tcp_send_in_flight(struct tcp_comm *c);
/* The receiver's abort notice into reason, once all of it arrived: read
 * from the control socket without waiting by whichever thread asks, kept
 * for the others. false while none (or only part of one) is there. */
bool tcp_peer_notice(struct tcp_comm *c, char *reason, size_t cap);
/* Send side, under err_lock: whether the socket failure msg is held for
 * the receiver's notice (true: nothing published yet), or is to be
 * published now (false: *msg and *err may name the held failure). */
bool tcp_hold(struct tcp_comm *c, char *msg, size_t cap, int *err);
/* Send side, from the driving thread: a held failure published once its
 * notice came, the receiver closed, or the hold ran out. 0 while it holds,
 * else the comm's errno. */
int tcp_judge_held(struct tcp_comm *c);
/* Receive side, at close: when data is still in flight (a receive posted
 * or part-read, or bytes nobody took), tells the sender so, so its
 * pending sends fail with that reason instead of succeeding. */
void tcp_close_notice(struct tcp_comm *c);

/* ---- tcp_data.c: stripes and data-socket work ---- */
void tcp_stripe(size_t size, size_t chunk, int nsocks, uint32_t seq, int k, int *sock, size_t *off,
                size_t *len);
int tcp_nstripes(size_t size, size_t chunk);
size_t tcp_chunk_for(const struct tcp_comm *c, size_t size);
enum { SOCK_FREE = 0, SOCK_CALLER = 1, SOCK_HELPER = 2 };
/* Queues a message's stripes on their sockets' rings (r->pending set
 * first) and hands the helpers the stripes that are theirs; the caller
 * moves its own share in test(). */
void tcp_push_message(struct tcp_comm *c, uint8_t *buf, size_t size, size_t chunk, uint32_t seq,
                      struct tcp_req *r);
/* Moves bytes on one socket without blocking, stopping before a task
 * longer than max_task, and adds how many to *moved. *is_blocked is set
 * when the socket took no more (EAGAIN). 0, or the errno that failed the
 * comm (tcp_fail has logged it). A request whose last byte it moves wakes
 * idle waiters. */
int tcp_sock_progress(struct tcp_comm *c, struct tcp_sock *s, size_t max_task, size_t *moved,
                      bool *is_blocked);
/* The length of the stripe at the head of the socket's ring, 0 if none. */
size_t tcp_head_len(struct tcp_sock *s);
/* The caller's share of the data sockets (see above): moves the stripes
 * it owns by size, hands the rest to the helpers. 0 or the comm's errno. */
int tcp_caller_progress(struct tcp_comm *c, size_t *moved);

/* ---- tcp_pool.c: the device's shared helper threads ---- */

/* Spreads the comm's data sockets over its device's helpers (starting
 * them if needed) and adds them to their epoll sets. 0 or an errno
 * (logged). */
int tcp_pool_attach(struct tcp_comm *c, int nthreads);
/* Takes the comm's sockets from the helpers and returns once none of them
 * touches the comm again. Idempotent. */
void tcp_pool_detach(struct tcp_comm *c);
/* The comm is gone: with the device's last comm its helpers stop. */
void tcp_pool_release(struct tcp_comm *c);
/* A socket's head stripe is its helper's: make sure the helper looks. */
void tcp_pool_kick(struct tcp_sock *s);

/* ---- tcp_stall.c: the no-progress warning ---- */

/* Warns once when r has not moved for NCCL_DIAG_STALL_WARN_SEC, with the
 * cause: a path-MTU black hole when its header went through but its
 * payload does not while the peer answers, else what the peer's liveness
 * says. */
void tcp_check_stall(struct tcp_comm *c, struct tcp_req *r);
/* What r waits for, for the run-time stall verdict. */
enum run_wait tcp_wait_kind(const struct tcp_comm *c, const struct tcp_req *r);

/* What the cause is chosen from, and what its text names. */
struct tcp_stall {
  bool is_send;
  bool is_partial; /* the header went through, payload bytes did not */
  enum liveness_view live;
  char what[320]; /* "send of message 3 (4194304 bytes) to host-b (...)" */
  long long secs, left;
  bool has_info; /* TCP_INFO of the stalled socket, below, was read */
  char sock_name[32];
  unsigned unacked, retransmits, total_retrans, probes, pmtu, mss;
  int local_mtu, peer_mtu; /* 0 unknown */
  char local_if[IF_NAMESIZE];
  const char *peer_host;
  char peer_ip[64];
  bool is_ipv6;
};
/* Whether s is a path-MTU black hole: a partial receive from a peer that
 * answers; a partial send whose socket retransmits into an open window. */
bool tcp_stall_is_mtu(const struct tcp_stall *s);
/* Its warning: the cause first (the two ends' MTUs when they differ),
 * both MTUs, the socket's evidence, the fix and the ping that checks it. */
void tcp_stall_mtu_text(const struct tcp_stall *s, char *buf, size_t cap);

/* ---- tcp_send.c (isend) and tcp_recv.c (irecv): the control socket ---- */
ncclResult_t tcp_isend(struct transport_comm *xc, void *data, size_t size, int tag, void *mh,
                       void **request);
/* Writes the queued headers and inline payloads: 0, or the comm's errno
 * once it failed. */
int tcp_send_progress(struct tcp_comm *c);
ncclResult_t tcp_irecv(struct transport_comm *xc, int n, void **data, size_t *sizes, int *tags,
                       void **mhandles, void **request);
/* Parses what has arrived, matching headers to posted receives: 0, or the
 * comm's errno once it failed. */
int tcp_recv_progress(struct tcp_comm *c);
/* After the sender's clean close: fails the comm when r can no longer
 * complete (its header or inline payload had not all arrived). 0 or the
 * comm's errno. */
int tcp_recv_check_closed(struct tcp_comm *c, const struct tcp_req *r);
/* Frees the staging buffer once it holds nothing and nothing waits. */
void tcp_stage_trim(struct tcp_comm *c);

/* TCP comm from a completed setup (tcp_comm.c); takes ownership of the
 * sockets (closes them on failure). 0 or an errno (logged). */
int tcp_comm_create(struct transport_setup *s, struct transport_comm **out);
/* The sockets kind of connection setup (tcp_setup.c, transport/setup_ops.h). */
struct transport_setup_ops;
extern const struct transport_setup_ops tcp_setup_ops;

#endif
