/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the liveness files: liveness.c (records and the public calls),
 * liveness_thread.c (the thread that checks and answers), liveness_wire.c
 * (the check's frames) and liveness_observe.c (what a lost peer's message
 * says). */
#ifndef DIAG_TRANSPORT_LIVENESS_INT_H
#define DIAG_TRANSPORT_LIVENESS_INT_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "transport/liveness.h"

/* One frame each way, fixed size: a check (PING) carries the token of the
 * process it is meant for, which only a peer with an established connection
 * learned (from that process's hello); the answer (PONG) carries the same
 * token back. A connection whose first frame is not a check with this
 * process's token gets nothing back and is closed (liveness_answer.c).
 * Older answerers sent NOT_ME with their own token to a wrong one: still
 * understood from them (the process at that port is another one). */
#define LIVE_MAGIC 0x706c7664u /* "dvlp" */
#define LIVE_VERSION 1
#define LIVE_FRAME_LEN 24
/* LIVE_ROOT follows a PONG only when the check said its sender waits on us
 * (transport/run/waitfor.h), so older checkers, which never say so, never
 * see one: flags the root's verdict, seq its pid, token its IPv4 address. */
/* LIVE_ROOT6 follows a LIVE_ROOT only when the check said RUN_FLAG_ROOT6
 * (older checkers never do): one frame per half of an end's IPv6 address,
 * seq that end's pid, token the 8 bytes, extra end * 2 + half. */
enum live_type { LIVE_PING = 1, LIVE_PONG = 2, LIVE_NOT_ME = 3, LIVE_ROOT = 4, LIVE_ROOT6 = 5 };

struct live_frame {
  uint8_t type;
  uint16_t flags; /* the wait-for facts (transport/run/waitfor.h); 0 from older plugins */
  uint32_t seq;
  uint64_t token;
  /* LIVE_ROOT of a path: the other end's pid here and its IPv4 address in
   * token's high half; a check: the low half of the checker's own token
   * (transport/run/slow_peer.h); an answer: the answerer's port state
   * (transport/run/port_state.h). Older plugins write 0 there and never
   * read it */
  uint32_t extra;
};

void live_frame_encode(const struct live_frame *f, uint8_t out[LIVE_FRAME_LEN]);
/* 0, or EPROTO when the bytes are not a frame of ours. */
int live_frame_decode(const uint8_t in[LIVE_FRAME_LEN], struct live_frame *f);
/* The admission test of a connection's first frame (liveness_answer.c):
 * whether it is a check carrying token, this process's. f gets what
 * decoded (its seq is echoed in the answer). */
bool live_frame_admits(const uint8_t in[LIVE_FRAME_LEN], uint64_t token, struct live_frame *f);

/* The checking connection to one peer process: not connected (a first
 * try, or a retry after a failure), connecting, or up and checking. */
enum live_stage { LIVE_IDLE, LIVE_CONNECTING, LIVE_UP };

struct liveness_peer {
  struct liveness_peer *next;
  int refs; /* comms holding it: under the state's lock */
  uint64_t token;
  uint32_t pid;
  char host[64];
  char where[96]; /* its liveness endpoint, "10.0.0.7<41234>" */
  struct sockaddr_storage sa;
  socklen_t sa_len;
  atomic_bool is_lost;
  char why[1400]; /* written once, before is_lost is set */
  _Atomic int64_t last_answer_ns;
  atomic_bool is_waiting;         /* a request of ours waits on it: our checks say so */
  atomic_int idle_s;              /* its caller's idle seconds from its last answer, -1 unknown */
  atomic_uint root_pid, root_ip4; /* the root of its stall, from its LIVE_ROOT */
  atomic_int root_verdict;        /* 0: none said */
  atomic_uint root_pid2,
    root_ip4b;                  /* a path's other end, from a newer plugin's LIVE_ROOT; 0: none */
  _Atomic uint64_t root6[2][2]; /* its LIVE_ROOT6 halves, end by end */
  atomic_uint port_word;        /* its last answer's port state (waitfor.h's RUN_PORT_*) */
  _Atomic int64_t port_word_ns; /* when that answer came */
  atomic_uint root6_got;        /* bit end * 2 + half: that half came after the last LIVE_ROOT */
  /* the check socket while it is quiet (liveness_path.c) */
  atomic_uint path_unacked, path_retrans;
  atomic_bool path_drops, path_is_syn;
  /* the thread's own */
  enum live_stage stage;
  int fd;
  int poll_index; /* its slot in this pass's poll set, -1 when not polled */
  int64_t next_check_ns, next_try_ns, attempt_ns, up_since_ns;
  uint32_t seq;
  unsigned checks, answers;
  unsigned conn_answers;    /* on the current connection */
  unsigned turned_away;     /* connections its port closed before any answer */
  atomic_bool is_unchecked; /* no evidence either way for a timeout: not held against it */
  bool has_said_unchecked;
  int last_err;        /* the last failed connect's errno */
  bool has_said_local; /* this host could not check it (INFO said once) */
  uint8_t in[LIVE_FRAME_LEN];
  size_t got;
};

/* The answering side's listening sockets: one per address of the
 * interfaces the plugin chose, all on one port (the wildcard only when
 * none of them binds). */
#define LIVE_MAX_LISTEN 16

struct liveness_state {
  pthread_mutex_t lock;
  struct liveness_peer *peers;
  bool is_on;
  int listen_fds[LIVE_MAX_LISTEN];
  int nlisten;
  int wake_fd;
  uint16_t port;
  uint64_t token;
  int64_t timeout_ns, interval_ns;
};

struct liveness_state *liveness_state(void);
/* From the liveness thread's pass over peer p: samples its check socket's
 * TCP_INFO while it is quiet (liveness_path.c). */
void live_path_sample(struct liveness_peer *p, int64_t now, int64_t interval_ns);
/* Opens st's listening sockets (liveness_bind.c): 0 or an errno; what it
 * bound is said at INFO by the caller. where gets "10.0.0.7, fd00::7" or
 * "every address". */
int liveness_bind(struct liveness_state *st, char *where, size_t cap);

/* The answering side (liveness_answer.c): connections others opened to
 * this process's port, bounded whatever strangers do: a connection is
 * admitted only by a first frame that is a check with this process's
 * token, within LIVE_ADMIT_NS; unadmitted ones are capped per source
 * address and in total (the oldest is dropped for a newcomer, so a real
 * peer always gets in); admitted ones close when idle; accepts and frames
 * are rationed per pass and per second, so a flooder takes neither the
 * thread's CPU nor the process's descriptors. */
struct live_answerer;
struct live_answer_set {
  struct live_answerer *conns;
  int n, cap, npending, nadmitted;
  int npolled;         /* conns[0..npolled) are in this pass's poll set */
  int first_poll;      /* index of the first listening socket in the poll set */
  int64_t pause_until; /* listening sockets not polled until then */
  int64_t window_ns;   /* the current accept/turn-away accounting window */
  int accepts;         /* in the window */
  unsigned long turned_away, said_turned_away;
  int64_t said_ns;
  bool has_said_shortage;
};
/* How long the next poll may wait (at most ms): until rationed accepts
 * resume. */
int live_answer_wait_ms(const struct live_answer_set *s, int64_t now, int ms);
/* Room the set needs in the poll array. */
int live_answer_nfds(const struct live_answer_set *s, const struct liveness_state *st);
/* Appends the listening sockets and the connections to fds from index n:
 * the new count. */
int live_answer_polls(struct live_answer_set *s, const struct liveness_state *st,
                      struct pollfd *fds, int n, int64_t now);
/* After the poll: accepts, admits, answers, expires. */
void live_answer_pass(struct live_answer_set *s, struct liveness_state *st,
                      const struct pollfd *fds, int64_t now);
/* The thread: started once by liveness_local(). */
void *liveness_thread_main(void *arg);
/* Makes the thread look at the records now (a new one, a dropped one). */
void liveness_wake(struct liveness_state *st);
/* Marks p lost with the message built from what the thread observed:
 * detail names it, cause the likely causes. is_silent: the timeout ran
 * out (else the process is known to be gone). */
void liveness_declare_lost(struct liveness_state *st, struct liveness_peer *p, int64_t now,
                           bool is_silent, const char *detail, const char *cause);
/* Declares p lost when it has not answered for the timeout, with what the
 * checking connection shows (TCP_INFO) as the observation. */
void liveness_check_timeout(struct liveness_state *st, struct liveness_peer *p, int64_t now);

#endif
