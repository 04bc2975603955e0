/* SPDX-License-Identifier: Apache-2.0 */
/* Rank 0's side: the rendezvous server (the role torch's TCPStore plays
 * for torchrun) and the coordinator of the probe, run by one thread.
 *
 * Stages: ARRIVAL (ranks connect, say hello and send their facts; bounded
 * by the arrival deadline), PAIRS (the rounds of pair tests: each pair of a
 * round walks its devices one step at a time; a step's two sides exchange
 * listen handles through here and each reports its result), END (every
 * rank is told, the connections close). A rank whose connection closes
 * before the end is dead: its step fails with that cause and its later
 * pairs are not run. Everything is bounded by the probe's --timeout. */
#ifndef DIAG_TOOLS_PROBE_COORD_H
#define DIAG_TOOLS_PROBE_COORD_H

#include <pthread.h>
#include <stdint.h>

#include "tools/probe/launch.h"
#include "tools/probe/rdv_conn.h"
#include "tools/probe/schedule.h"

enum coord_stage { CS_ARRIVAL, CS_PAIRS, CS_END };

/* One device of one pair of hosts under test. */
struct coord_step {
  int active;
  uint32_t id;
  int pair; /* index into sched.pairs */
  int a, b; /* ranks; a sends first */
  int dev, ndev;
  int64_t deadline_ns;
  int have[2];
  struct wire_result res[2]; /* [0] a's, [1] b's */
  char fail[512];            /* why rank 0 ended it, "" when both reported */
};

#define COORD_MAX_PENDING 256       /* connections that have not said who they are */
#define COORD_PENDING_PER_SOURCE 64 /* of them from one address (a node's ranks come at once) */
#define COORD_HELLO_MAX 4096        /* the largest first message taken before a hello */

struct coord {
  const struct probe_opts *o;
  const struct probe_launch *l;
  struct probe_run *run;
  int lfd[2], nlfd;
  int npending;
  struct rdv_conn pending[COORD_MAX_PENDING];
  int64_t pending_deadline[COORD_MAX_PENDING];
  struct rdv_conn *conns; /* [world], fd -1 when none */
  int *reported;          /* [world]: facts received */
  int nreported;
  enum coord_stage stage;
  int64_t t0, arrival_deadline, end_deadline;
  struct sched sched;
  int round;
  int retest;               /* the rounds now run are the retests of slow-looking pairs */
  struct coord_step *steps; /* one per pair of the current round */
  int nsteps;
  uint32_t next_id;
  int64_t last_progress_ns;
  pthread_t thread;
  int listen_err; /* errno when the port could not be taken */
  char listen_why[512];
  /* What the connections report back (coord_rank_lost, coord_on_message,
   * set by coord_listen): rdv_server.c calls into coord.c only through these. */
  void (*on_rank_lost)(struct coord *c, int rank, const char *why);
  void (*on_message)(struct coord *c, int rank, int type, const uint8_t *body, uint32_t len);
};

/* Takes the port (before anything slow, so early ranks find it). 0, or an
 * errno with c->listen_why set. */
int coord_listen(struct coord *c, const struct probe_opts *o, const struct probe_launch *l,
                 struct probe_run *run);
int coord_start(struct coord *c);
void coord_join(struct coord *c);
void coord_free(struct coord *c);

/* rdv_server.c: the connections. */
void server_poll(struct coord *c, int timeout_ms);
int server_send(struct coord *c, int rank, struct wire_buf *b);
void server_send_note(struct coord *c, int rank, int type, uint32_t step, uint64_t value,
                      const char *text);
void server_close_all(struct coord *c);
/* A rank's connection ended before the end: it is dead. */
void coord_rank_lost(struct coord *c, int rank, const char *why);

/* coord.c: the messages of identified ranks. */
void coord_on_message(struct coord *c, int rank, int type, const uint8_t *body, uint32_t len);
double coord_elapsed_s(const struct coord *c);

/* coord_steps.c: the pair rounds. */
void steps_plan(struct coord *c);
void steps_tick(struct coord *c); /* deadlines, next steps, next round */
void steps_on_handle(struct coord *c, int rank, const struct wire_handle *h);
void steps_on_result(struct coord *c, int rank, const struct wire_result *r);
void steps_rank_dead(struct coord *c, int rank);
void steps_finish_all(struct coord *c, const char *why);

#endif
