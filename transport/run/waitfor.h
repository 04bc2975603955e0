/* SPDX-License-Identifier: Apache-2.0 */
/* The wait-for facts exchanged on the liveness channel (liveness_int.h's
 * frame flags): a check tells the peer that the checker waits on it; an
 * answer tells how long the answerer's caller has posted nothing. */
#ifndef DIAG_TRANSPORT_RUN_WAITFOR_H
#define DIAG_TRANSPORT_RUN_WAITFOR_H

#include <stdbool.h>
#include <stdint.h>

#define RUN_FLAG_WAITING 0x0001u  /* in a check: a request of mine waits on you */
#define RUN_FLAG_ROOT6 0x0002u    /* in a check: I read LIVE_ROOT6 (a root's IPv6 address) */
#define RUN_FLAG_IDLE_SET 0x8000u /* in an answer: the low 15 bits are my caller's idle s */
/* In a check: a connection of mine with you is named slow (slow_peer.h);
 * its direction, evidence and ratio ride in the other bits, and the
 * check's extra field carries the low half of my token. */
#define RUN_FLAG_SLOW 0x0004u
#define RUN_FLAG_SLOW_SEND 0x0008u /* it is my send: the path from me to you */
#define RUN_FLAG_SLOW_EV_SHIFT 4   /* 4 bits: enum slow_evidence */
#define RUN_FLAG_SLOW_PCT_SHIFT 8  /* 7 bits: its ratio to its siblings, percent */

/* An answer's extra field (0 from older plugins): a port of the answerer
 * that is down now (the low 16 bits: for how many seconds), or that came
 * back (the low 16 bits: how many seconds ago), port_state.h. */
#define RUN_PORT_DOWN 0x80000000u
#define RUN_PORT_WAS_DOWN 0x40000000u
#define RUN_PORT_TELL_SEC 60 /* a return is told this long: longer than a slow-link span */

/* The root of this process's stall, told to a peer that waits on it. */
/* RUN_ROOT_PORT: an RDMA port of pid's process is down (older plugins
 * take a verdict they do not know for none). */
enum run_root_verdict {
  RUN_ROOT_NONE,
  RUN_ROOT_SILENT,
  RUN_ROOT_IDLE,
  RUN_ROOT_LINK,
  RUN_ROOT_PORT
};
struct run_root {
  uint16_t verdict;
  uint32_t pid;
  uint32_t ip4;        /* network order bytes, as read from memory */
  uint32_t pid2, ip4b; /* RUN_ROOT_LINK: the path's other end; 0 when unknown */
  uint8_t has6;        /* bit e: end e (0: pid, 1: pid2) is at the IPv6 address ip6[e] */
  uint8_t ip6[2][16];
};
void run_root_set(const struct run_root *r);
/* false when this process has no root (no stall, or none known). */
bool run_root_get(struct run_root *r);

/* The flags of this process's answer. */
uint16_t run_answer_flags(int64_t now);
/* The answerer's caller idle seconds from its answer's flags; -1 when it
 * did not say (an older plugin). */
int run_idle_from_flags(uint16_t flags);
/* A check said its sender waits on this process (src: its address): when
 * this process's own caller has posted nothing for the stall time, this is
 * the root of the peers' stall: say so once (on the liveness thread). */
void run_waited_on(const char *src, int64_t now);

#endif
