/* SPDX-License-Identifier: Apache-2.0 */
/* TCP transport internals.
 *
 * A connection is one control socket plus N data sockets. Every message
 * starts with a 24-byte header on the control socket. Small messages
 * (<= inline limit) follow their header there and are moved by the caller's
 * thread (isend/irecv/test), which keeps latency at one syscall each way.
 * Larger ones are cut into at most N stripes of `chunk` bytes, one per data
 * socket starting at socket seq % N; both sides derive the same cut from
 * the header, so the sender's settings are the only ones that matter.
 *
 * Data sockets are served by helper threads (NCCL_SOCKET_NTHREADS, each
 * owning NCCL_NSOCKS_PERTHREAD sockets) that poll and move bytes, or by the
 * caller in test() when there are no helpers. With helpers, stripes up to
 * caller_max bytes (NCCL_DIAG_CALLER_MAX: 4 MiB when the peer is on this
 * host, 1 MiB otherwise) are still moved by the caller's thread in test()
 * (a hand-off to a sleeping helper costs more than they take); larger ones
 * go to the helpers, which sleep (on the receive side until a share of the
 * stripe has arrived, SO_RCVLOWAT) instead of competing with the kernel's
 * TCP work for the CPU. A per-socket owner flag keeps the two
 * from touching a socket at once. Each data socket has a
 * single-producer (the comm's driving thread) single-consumer (its helper)
 * ring of tasks; a request is done when its header and payload bytes are. */
#ifndef DIAG_TRANSPORT_TCP_H
#define DIAG_TRANSPORT_TCP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/frame.h"
#include "transport/transport.h"

#define TCP_MAX_REQS NCCL_NET_MAX_REQUESTS
#define TCP_RING 64 /* tasks per data socket: >= TCP_MAX_REQS stripes */
#define TCP_CTRL_READAHEAD 16384

struct tcp_comm;

struct tcp_req {
  struct transport_req base;
  bool is_send;
  uint8_t *data;
  size_t cap;  /* recv: capacity */
  size_t size; /* send: size; recv: from the header */
  int tag;
  uint32_t seq;
  bool is_hdr_done;     /* header (and inline payload) fully moved */
  size_t inline_off;    /* inline payload bytes moved */
  atomic_llong pending; /* data-socket bytes still to move */
  int64_t posted_ns;
  bool has_warned_stall;
};

struct tcp_task {
  uint8_t *buf;
  size_t len;
  size_t off;
  struct tcp_req *req;
};

struct tcp_sock {
  int fd;
  int index;
  int thread;                      /* its helper, -1 when the caller moves everything */
  atomic_int owner;                /* SOCK_FREE, or who is moving its bytes right now */
  struct tcp_task tasks[TCP_RING]; /* a ring: head..tail */
  atomic_uint head;                /* consumer */
  atomic_uint tail;                /* producer */
  int lowat;                       /* SO_RCVLOWAT the helper last set (receive side) */
};

struct tcp_thread {
  struct tcp_comm *comm;
  pthread_t tid;
  bool is_started;
  int efd; /* eventfd: new work, or stop */
  atomic_bool is_sleeping;
  int first, count; /* the data sockets it owns */
};

/* Control-socket send queue entry (header + optional inline payload). */
struct tcp_out {
  uint8_t hdr[MSG_HDR_LEN];
  struct tcp_req *req;
  size_t total; /* header + inline payload */
  size_t off;
};

struct tcp_comm {
  struct transport_comm base;
  bool is_send;
  int ctrl_fd;
  int nsocks, nthreads;
  bool is_same_host;          /* both ends on this host (see tcp_comm_create) */
  struct tcp_sock *socks;     /* nsocks of them, each with its task ring */
  struct tcp_thread *threads; /* nthreads of them */
  atomic_bool is_stopping;
  uint64_t moved;   /* bytes the driving thread moved: progress for the idle wait */
  bool is_quiesced; /* helpers stopped after a failure */
  size_t inline_max, min_chunk;
  size_t caller_max; /* stripes the caller moves itself when there are helpers */
  int64_t stall_ns;

  struct tcp_req reqs[TCP_MAX_REQS];
  int nfree;
  uint32_t next_seq;

  /* send side: control queue, FIFO */
  struct tcp_out outgoing[TCP_MAX_REQS];
  int outgoing_head, noutgoing;

  /* recv side: posted receives in order; the oldest without a header is
   * the one the next header belongs to */
  struct tcp_req *posted[TCP_MAX_REQS]; /* awaiting their header */
  int posted_head, posted_count;
  struct tcp_req *cur; /* inline payload being read */
  uint8_t *readahead;  /* TCP_CTRL_READAHEAD bytes read from the control socket */
  size_t readahead_off, readahead_len;
  uint8_t hdr_buf[MSG_HDR_LEN];
  size_t hdr_got;
  bool has_warned_tag;

  /* first error, set by whichever thread detects it (and logs it): an
   * errno classed as transport_result() expects */
  atomic_bool is_failed;
  int fail_err;
  pthread_mutex_t err_lock;
};

/* ---- tcp_comm.c: lifetime, failure, requests, registrations ---- */

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
 * it first stops the helper threads, so none still reads or writes a
 * caller's buffer when the caller, told of the failure, frees it. */
int tcp_failed(struct tcp_comm *c);

/* A free request of the comm's pool, or NULL (all TCP_MAX_REQS in use). */
struct tcp_req *tcp_req_get(struct tcp_comm *c);
void tcp_req_put(struct tcp_comm *c, struct tcp_req *r);

/* Whether an isend/irecv buffer lies inside the registration it names (a
 * NULL handle names none); why says how not. */
bool tcp_mr_covers(const void *mhandle, const void *data, size_t size, char *why, size_t cap);

/* ---- tcp_abort.c ---- */

/* Tells the peer why this side gives up (an abort frame on the control
 * socket) and resets the data sockets. */
void tcp_abort_peer(struct tcp_comm *c, const char *reason);

/* ---- tcp_data.c: stripes and data-socket work ---- */
void tcp_stripe(size_t size, size_t chunk, int nsocks, uint32_t seq, int k, int *sock, size_t *off,
                size_t *len);
int tcp_nstripes(size_t size, size_t chunk);
size_t tcp_chunk_for(const struct tcp_comm *c, size_t size);
enum { SOCK_FREE = 0, SOCK_CALLER = 1, SOCK_HELPER = 2 };
/* Queues a message's stripes on their sockets' rings (r->pending set
 * first) and wakes the helpers whose share they are; the caller moves its
 * own share in test(). */
void tcp_push_message(struct tcp_comm *c, uint8_t *buf, size_t size, size_t chunk, uint32_t seq,
                      struct tcp_req *r);
/* Moves bytes on one socket without blocking, stopping before a task
 * longer than max_task, and adds how many to *moved: 0, or the errno that
 * failed the comm (tcp_fail has logged it). A request whose last byte it
 * moves wakes idle waiters. */
int tcp_sock_progress(struct tcp_comm *c, struct tcp_sock *s, size_t max_task, size_t *moved);
/* The caller's share of the data sockets (see above): moves the stripes
 * it owns by size, wakes helpers for the rest. 0 or the comm's errno. */
int tcp_caller_progress(struct tcp_comm *c, size_t *moved);
/* 0 or an errno (logged). */
int tcp_threads_start(struct tcp_comm *c);
void tcp_threads_stop(struct tcp_comm *c);

/* ---- tcp_send.c (isend) and tcp_recv.c (irecv): the control socket ---- */
ncclResult_t tcp_isend(struct transport_comm *xc, void *data, size_t size, int tag, void *mh,
                       void **request);
/* The control socket's queue: 0, or the comm's errno once it failed. */
int tcp_send_progress(struct tcp_comm *c);
ncclResult_t tcp_irecv(struct transport_comm *xc, int n, void **data, size_t *sizes, int *tags,
                       void **mhandles, void **request);
int tcp_recv_progress(struct tcp_comm *c);

#endif
