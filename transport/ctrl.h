/* SPDX-License-Identifier: Apache-2.0 */
/* A connection's control channel after setup: framed messages (frame.h)
 * both ways on the control socket, none of them ever waited for, since
 * NCCL's proxy thread is shared by every connection of the process.
 *
 * - One header decoder (ctrl_in_*): bytes go in as they arrive, a message
 *   is handed on only once all of it is there. It reads no socket, so a
 *   fuzz target drives it.
 * - One reader (ctrl_read): non-blocking reads into the decoder, a partial
 *   message kept across calls; it never reads past the message it holds,
 *   so what follows waits on the socket.
 * - One outgoing queue (ctrl_send): what the socket does not take now goes
 *   out with later calls (ctrl_flush). An abort notice goes behind a
 *   message already started, never into its middle, and the channel then
 *   shuts its side.
 * - A handler table by kind (ctrl_step), as libfabric's xnet_start_op[].
 *
 * Kinds: ABORT and FAILOVER are in use. REPAIR (a connection mending a
 * lost path) and QUERY (a question between peers at run time, such as a
 * counter or a setting) are reserved: they have a flag and a bound, and a
 * channel without a row for them refuses them as it refuses any kind it
 * does not know. */
#ifndef DIAG_TRANSPORT_CTRL_H
#define DIAG_TRANSPORT_CTRL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/frame.h"

enum ctrl_kind { CTRL_ABORT, CTRL_FAILOVER, CTRL_REPAIR, CTRL_QUERY, CTRL_KINDS };
#define CTRL_F_REPAIR 8                /* reserved: no sender yet */
#define CTRL_F_QUERY 16                /* reserved: no sender yet */
#define CTRL_BODY_MAX MSG_FAILOVER_MAX /* the largest body of any kind */

/* What one step of the decoder or the reader has. */
enum ctrl_read {
  CTRL_R_NONE,   /* nothing waits */
  CTRL_R_PART,   /* part of a message: the rest comes with a later call */
  CTRL_R_MSG,    /* a whole message, held until ctrl_done */
  CTRL_R_BAD,    /* bytes that are not a message of ours (why says how) */
  CTRL_R_CLOSED, /* the peer closed its side, or the socket failed */
};

struct ctrl_msg {
  enum ctrl_kind kind;
  uint32_t seq;
  const uint8_t *body;
  size_t len;
};

struct ctrl_in {
  uint8_t buf[MSG_HDR_LEN + CTRL_BODY_MAX];
  size_t got, want; /* want: the header's length, then the whole message's */
  struct ctrl_msg msg;
  char why[160];
};

/* The decoder: how many bytes it takes next, and where they go. */
size_t ctrl_in_need(const struct ctrl_in *in);
uint8_t *ctrl_in_space(struct ctrl_in *in);
/* n bytes were put at ctrl_in_space: PART, MSG (in->msg) or BAD (in->why). */
enum ctrl_read ctrl_in_add(struct ctrl_in *in, size_t n);
/* The held message is handled: the decoder starts the next. */
void ctrl_in_reset(struct ctrl_in *in);

struct ctrl_chan {
  int fd;
  struct ctrl_in in;
  int64_t in_since; /* the first call that found a message cut short */
  uint8_t out[2 * (MSG_HDR_LEN + CTRL_BODY_MAX) + MSG_HDR_LEN + MSG_ABORT_MAX];
  size_t out_len, out_off;
  int64_t out_since; /* the first call that found the socket full */
  bool is_ending;    /* an abort notice queued: shut this side once it is out */
  bool is_shut;
  int closed_err; /* CTRL_R_CLOSED: the socket's errno, 0 for the peer's close */
};

void ctrl_init(struct ctrl_chan *ch, int fd);
/* One non-blocking read step. A held message comes back until ctrl_done. */
enum ctrl_read ctrl_read(struct ctrl_chan *ch);
void ctrl_done(struct ctrl_chan *ch);
/* Seconds-scale limits the old blocking reads and writes had: 0 while a cut
 * message or a full queue may still move, ETIMEDOUT once it stood still. */
int ctrl_in_stalled(struct ctrl_chan *ch, int64_t now);
/* Queues a message and sends what the socket takes now: 0, ENOBUFS (the
 * queue is full), or the socket's errno. */
int ctrl_send(struct ctrl_chan *ch, uint8_t flags, uint32_t seq, const uint8_t *body, size_t len);
/* Queues the abort notice after what is queued, then shuts this side. */
void ctrl_send_abort(struct ctrl_chan *ch, uint32_t seq, const char *reason);
/* Sends what is queued, as far as the socket takes it: 0, or an errno
 * (ETIMEDOUT: the peer read nothing for 2 s). */
int ctrl_flush(struct ctrl_chan *ch);
static inline bool ctrl_is_sending(const struct ctrl_chan *ch) { return ch->out_off < ch->out_len; }

/* A row of the handler table: true when it took the message, false to
 * keep it held for a later call (the owner is busy). */
typedef bool (*ctrl_handler)(void *owner, const struct ctrl_msg *m);
/* One read step and, for a whole message, its row; a kind with no row is
 * BAD. Returns what the read had (MSG only once a row took it). */
enum ctrl_read ctrl_step(struct ctrl_chan *ch, const ctrl_handler rows[CTRL_KINDS], void *owner);

#endif
