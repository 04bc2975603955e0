/* SPDX-License-Identifier: Apache-2.0 */
/* The slow link, named while the job runs: a connection that moves, while
 * busy, well under its siblings (same process, transport and direction)
 * and whose sockets show why. Judged over windows of RUN_SLOW_WINDOW_SEC
 * by the liveness thread (never NCCL's proxy thread), from the figures the
 * data path keeps anyway (stats.h) and TCP_INFO read there.
 *
 * Why this criterion: healthy connections of one job spread to a third of
 * their median over a run (scheduling, a step's skew), so a ratio alone
 * gives false findings; and a lossy link's rate swings from window to
 * window with where its losses fall (a window without a retransmit
 * timeout runs near its siblings), so one window's ratio misses it. Each
 * connection is judged over its last RUN_SLOW_SPAN windows as a whole
 * (bytes over busy time, counters summed). A finding needs all of: at
 * least RUN_SLOW_WINDOWS windows, with enough bytes and busy time to mean
 * anything; at least two measured siblings; the ratio under
 * NCCL_DIAG_SLOW_PERCENT of their median; evidence on its own sockets that
 * its siblings lack (retransmits or lost segments, or packets arriving out
 * of order, in RUN_SLOW_WINDOWS of its windows, four times its siblings'
 * and at least RUN_SLOW_LOSS_PER_MILLE of its data segments: a loaded
 * host's healthy sockets retransmit a few; or a smoothed RTT four times
 * theirs, twice when it moves under a tenth of their rate). An RDMA connection's evidence is its
 * port's (slow_port.h): resends, sequence errors and ACK timeouts, or CNPs and ECN marks, in
 * RUN_SLOW_WINDOWS windows and four times those of its siblings' other
 * ports, or a link rate under three quarters of theirs, or (a sender) its
 * writes taking twice its siblings' time to complete; siblings on the
 * same port running at their rate put a port's loss on this path. It is
 * said once per
 * episode: again only after a whole span ran like its siblings with clean
 * sockets. */
#ifndef DIAG_TRANSPORT_RUN_SLOW_H
#define DIAG_TRANSPORT_RUN_SLOW_H

#include <stdbool.h>
#include <stdint.h>

#define RUN_SLOW_WINDOW_SEC 5
#define RUN_SLOW_WINDOWS 3 /* windows a judgement needs; lossy in this many of them */
#define RUN_SLOW_SPAN 4
/* A span counts for a connection with at least this much traffic. */
#define RUN_SLOW_MIN_BYTES (1u << 20)
#define RUN_SLOW_MIN_BUSY_NS 10000000LL
/* Loss that counts: this share (per mille) of its data segments sent again
 * (a sender) or received out of order (a receiver). */
#define RUN_SLOW_LOSS_PER_MILLE 5

/* From each pass of the liveness thread: judges a window when one ended. */
void run_slow_tick(int64_t now);

/* Whether connection id was named slow, and the ratio it was named with. */
bool run_slow_of(uint32_t id, double *ratio);
/* Slow links named in this process so far, for the summary. */
int run_slow_count(void);
/* Lossy RDMA ports named so far (slow_port.h), for the summary. */
int run_slow_port_count(void);

#endif
