/* SPDX-License-Identifier: Apache-2.0 */
/* Liveness of the peer process behind a connection, answered by the peer's
 * plugin independently of its caller's progress: a peer that is alive but
 * has not posted the matching operation yet keeps answering; a process that
 * no longer runs (killed, stopped, frozen) or cannot be reached stops
 * answering, and after NCCL_DIAG_PEER_TIMEOUT_SEC every request of its
 * connections fails with the observation in words.
 *
 * How: one thread per process (liveness_thread.c) listening on the
 * chosen interfaces' addresses (liveness_bind.c); each side's hello
 * carries its port and a token naming the process (hello.h), which a check
 * must carry to be answered at all (liveness_answer.c). Each process keeps one connection to each
 * peer process it has comms with, whatever their number, sends a check on it every few seconds, and
 * the peer's liveness thread answers. A peer whose kernel acknowledges the checks but whose process
 * does not answer is stopped or frozen; one whose kernel acknowledges nothing is down or cut off;
 * one whose port refuses connections no longer runs. A gap in this process's own running (it was
 * stopped itself) is not held against its peers.
 *
 * A comm holds a reference to its peer's record (comm->live); the data
 * paths ask liveness_peer_lost() when a request has made no progress. */
#ifndef DIAG_TRANSPORT_LIVENESS_H
#define DIAG_TRANSPORT_LIVENESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "transport/hello.h"

struct liveness_peer;

/* This process's endpoint for its hello; starts the check on first use.
 * out->is_present is false when the check is off (NCCL_DIAG_PEER_TIMEOUT_SEC
 * =0) or cannot run here (said once, at INFO). */
void liveness_local(struct hello_live *out);

/* A peer process as its hello named it: what its checks need (a comm
 * keeps this, not the hello). */
struct liveness_who {
  char host[64];
  uint32_t pid;
  struct hello_live live;
};
void liveness_who_from(struct liveness_who *w, const struct hello *peer);

/* The record of the process behind peer at addr (the control connection's
 * remote address), shared by every comm with that process and counted;
 * NULL when the peer announces no endpoint, or is this process. */
struct liveness_peer *liveness_peer_get(const struct liveness_who *peer,
                                        const struct sockaddr *addr, socklen_t len);
/* Drops a reference (NULL is fine); the last one ends the checks. */
void liveness_peer_put(struct liveness_peer *p);

/* true once the peer has stopped answering for the timeout; why then names
 * the peer and what was observed. p may be NULL (never lost). Cheap: an
 * atomic load unless lost. */
bool liveness_peer_lost(const struct liveness_peer *p, char *why, size_t cap);

/* The abort notice for the lost peer itself, should it run again (it was
 * only stopped): "this process (pid 4242 on host-b) did not answer the
 * liveness checks of host-a (pid 17) for 120 s ...". */
void liveness_peer_notice(const struct liveness_peer *p, char *buf, size_t cap);

/* For a no-progress warning, what the peer's process does: buf then says
 * "answered a liveness check 0.4 s ago" or "has not answered liveness
 * checks for 12 s (its connections fail at 120 s)"; "" when unchecked. */
enum liveness_view { LIVENESS_UNCHECKED, LIVENESS_ANSWERS, LIVENESS_SILENT, LIVENESS_LOST };
enum liveness_view liveness_peer_state(const struct liveness_peer *p, char *buf, size_t cap);

/* The stall step (transport/run/stall.c): on, our checks tell the peer
 * that a request of ours waits on it; its answers say how long its caller
 * has posted nothing: seconds, or -1 when unknown (or p is NULL). */
void liveness_peer_set_waiting(struct liveness_peer *p, bool is_waiting);
int liveness_peer_idle_s(const struct liveness_peer *p);
/* The root of the peer's own stall as its answers said: its verdict
 * (transport/run/waitfor.h, 0 = none said), pid and IPv4 address. */
int liveness_peer_root(const struct liveness_peer *p, uint32_t *pid, uint32_t *ip4);
/* What the peer's answers say of its RDMA ports (transport/run/port_state.h):
 * whether one is down now (secs: for how long, as of now), and the last
 * moment one was down, 0 when none was lately. By process token, for the
 * slow-link judge, which holds connections' figures, not their comms. */
bool liveness_peer_port_down(const struct liveness_peer *p, int64_t now, int *secs);
int64_t liveness_token_port_last_down_ns(uint64_t token);
/* The same for one peer: down for *down_s now, or back *back_s ago (within
 * RUN_PORT_TELL_SEC); false when its answers say neither. */
bool liveness_peer_port_lately(const struct liveness_peer *p, int64_t now, int *down_s,
                               int *back_s);
/* The IPv6 addresses of the told root's ends (bit e set: out[e] holds end e's). */
unsigned liveness_peer_root6(const struct liveness_peer *p, uint8_t out[2][16]);
/* A path root's other end (pid, IPv4), when the teller said it; false otherwise. */
bool liveness_peer_root_end(const struct liveness_peer *p, uint32_t *pid, uint32_t *ip4);

/* The check socket's word on the path to a quiet peer: drops is true when
 * our checks go unacknowledged (retransmitted) or our SYN unanswered, which
 * a stopped process's kernel never causes: the path, or the host, is down. */
struct liveness_path {
  bool drops, is_syn;
  unsigned unacked, retrans;
};
bool liveness_peer_path(const struct liveness_peer *p, struct liveness_path *out);

/* The end of a no-progress warning for a request that waits on its peer:
 * what the peer's liveness says and what that means (alive but not at the
 * matching operation yet, silent, or not checked). */
void liveness_stall_advice(const struct liveness_peer *p, char *buf, size_t cap);

/* "control socket: 2048 bytes unacknowledged, 3 retransmissions, the
 * peer's receive window closed (2 probes)" from a connected TCP socket's
 * TCP_INFO, for messages about a stalled connection; "" when unreadable. */
void liveness_describe_socket(int fd, const char *name, char *buf, size_t cap);

#endif
