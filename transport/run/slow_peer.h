/* SPDX-License-Identifier: Apache-2.0 */
/* The other end of a slow link. A path shaped or congested one way shows
 * its evidence only to its sender (a receiver's socket has no fresh RTT
 * and counts no resends), so the end that names a connection slow tells
 * the peer process in its liveness checks (transport/run/waitfor.h's
 * RUN_FLAG_SLOW bits), and the peer names its side of the same path with
 * what the sender measured. All of it runs on the liveness thread, which
 * both checks, answers and judges: no lock. */
#ifndef DIAG_TRANSPORT_RUN_SLOW_PEER_H
#define DIAG_TRANSPORT_RUN_SLOW_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/run/slow_say.h"

/* What a check to the process with this token says: RUN_FLAG_SLOW and
 * its bits when a connection of ours with it is named slow, else 0. */
uint16_t run_slow_peer_flags(uint64_t peer_token);
/* A check from the process whose token's low half is tok32 carried flags
 * (from: its address, for the log). */
void run_slow_peer_heard(uint32_t tok32, uint16_t flags, int64_t now);

/* From the judge (slow.c), after each window's judgement: the named
 * connections s[0..n) of this process, for the next checks. */
void slow_peer_publish(const struct slow_sample *s, int n);
/* What the peer of connection i says of their shared path: true, with
 * the flags it sent, when it named it within the last RUN_SLOW_SPAN
 * windows in the direction that is i's. */
bool slow_peer_names(const struct run_conn_info *i, int64_t now, uint16_t *flags);

#endif
