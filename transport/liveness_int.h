/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the liveness files: liveness.c (records and the public calls),
 * liveness_thread.c (the thread that checks and answers), liveness_wire.c
 * (the check's frames) and liveness_observe.c (what a lost peer's message
 * says). */
#ifndef DIAG_TRANSPORT_LIVENESS_INT_H
#define DIAG_TRANSPORT_LIVENESS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "transport/liveness.h"

/* One frame each way, fixed size: a check (PING) carries the token of the
 * process it is meant for; the answer (PONG) carries the answerer's, or
 * NOT_ME when the process at that port is another one. */
#define LIVE_MAGIC 0x706c7664u /* "dvlp" */
#define LIVE_VERSION 1
#define LIVE_FRAME_LEN 24
enum live_type { LIVE_PING = 1, LIVE_PONG = 2, LIVE_NOT_ME = 3 };

struct live_frame {
  uint8_t type;
  uint32_t seq;
  uint64_t token;
};

void live_frame_encode(const struct live_frame *f, uint8_t out[LIVE_FRAME_LEN]);
/* 0, or EPROTO when the bytes are not a frame of ours. */
int live_frame_decode(const uint8_t in[LIVE_FRAME_LEN], struct live_frame *f);

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
  /* the thread's own */
  enum live_stage stage;
  int fd;
  int poll_index; /* its slot in this pass's poll set, -1 when not polled */
  int64_t next_check_ns, next_try_ns, attempt_ns;
  uint32_t seq;
  unsigned checks, answers;
  int last_err;        /* the last failed connect's errno */
  bool has_said_local; /* this host could not check it (INFO said once) */
  uint8_t in[LIVE_FRAME_LEN];
  size_t got;
};

struct liveness_state {
  pthread_mutex_t lock;
  struct liveness_peer *peers;
  bool is_on;
  int listen_fd, wake_fd;
  uint16_t port;
  uint64_t token;
  int64_t timeout_ns, interval_ns;
};

struct liveness_state *liveness_state(void);
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
