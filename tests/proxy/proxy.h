/* SPDX-License-Identifier: Apache-2.0 */
/* A driver that calls the plugin the way NCCL's proxy thread does
 * (src/transport/net.cc, src/proxy.cc): one thread per rank progresses every
 * connection; several channels per peer, each with its own send and receive
 * comm; connect and accept called again and again until they hand back a
 * comm; NCCL_STEPS requests in flight per connection; test() on the oldest
 * request of each connection, round-robin; grouped receives (n > 1) whose
 * tags the sender posts out of step; iflush and irecvConsumed where the
 * table has them; a comm closed right after its last test() said done. */
#ifndef DIAG_TESTS_PROXY_H
#define DIAG_TESTS_PROXY_H

#include <stddef.h>
#include <stdint.h>

#include "tools/netload.h"

#define PROXY_STEPS 8     /* NCCL_STEPS */
#define PROXY_SHARED 16   /* NCCL_SHARED_STEPS: a group of n posts 16/n ahead */
#define PROXY_MAX_GROUP 8 /* NCCL_NET_MAX_RECVS */
#define PROXY_HELLO_TAG 0x7ffe
#define PROXY_MAX_ENV 16

struct proxy_opts {
  int abi;
  int channels, steps, group, depth;
  int late_accept_ms, close_lag_ms;
  int timeout_s;
  int rounds; /* connect, move and close this many times in one process */
  int flush;  /* iflush after every received step with bytes */
  int listen_per_channel;
  int slow_last_ms; /* rank 1 first tests a connection's last step this long after posting it */
  int in_step;      /* a group's tags post their sends in step (NCCL's subs need not) */
  size_t max_size;
  uint64_t seed;
  int transport_ib;
  const char *netns[2];
  const char *envs[2][PROXY_MAX_ENV];
  int nenv[2];
  const char *label;
};

struct proxy_sub { /* one tag of a send connection, progressing on its own as NCCL's subs do */
  int posted, done, filled;
  long long last_posted_ms;
  void *reqs[PROXY_STEPS];
};

struct proxy_send {
  int ch;
  void *comm, *mh;
  uint8_t *buf;
  size_t bytes;
  int hello; /* 0 not posted, 1 posted, 2 done */
  void *hello_req;
  struct proxy_sub subs[PROXY_MAX_GROUP];
  int closed;
  long long finished_ms;
};

struct proxy_recv {
  int ch; /* -1 until the hello names it */
  void *comm, *mh;
  uint8_t *buf;
  size_t bytes;
  int hello;
  void *hello_req;
  int posted, received;
  long long last_posted_ms;
  void *reqs[PROXY_STEPS];
  int tags[PROXY_STEPS][PROXY_MAX_GROUP];
  void *flush_req;
  int flushing;
  int closed;
  long long finished_ms;
};

struct proxy_rank {
  int rank, peer, ctl;
  const struct proxy_opts *o;
  struct netload nl;
  int dev, group, depth, nlisten;
  size_t slot;
  void **listens;
  int accepted, listens_closed;
  struct proxy_send *sends;
  struct proxy_recv *recvs;
  long long t0, deadline;
  uint64_t rng;
  long nulls_send, nulls_recv, calls_connect, calls_accept;
  int failed, round;
  char first_fault[300]; /* the first failure, for the TAP line */
  char peer_state;       /* 0, or what the peer wrote: 'D' done, 'F' failed */
};

/* proxy_data.c */
size_t proxy_msg_size(const struct proxy_opts *o, int src, int ch, int step, int tag);
void proxy_fill(uint8_t *p, size_t n, uint64_t seed);
size_t proxy_check(const uint8_t *p, size_t n, uint64_t seed); /* first bad byte, or n */
uint64_t proxy_msg_seed(const struct proxy_opts *o, int src, int ch, int step, int tag);
/* One round over one connection: 1 when something moved, 0 idle, -1 failed. */
int proxy_send_round(struct proxy_rank *r, struct proxy_send *s);
int proxy_recv_round(struct proxy_rank *r, struct proxy_recv *v);
void proxy_fail(struct proxy_rank *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *proxy_res_name(int res);
long long proxy_ms(void);

/* proxy_rank.c */
int proxy_rank_run(struct proxy_rank *r, int report_fd);

#endif
