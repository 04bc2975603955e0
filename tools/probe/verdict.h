/* SPDX-License-Identifier: Apache-2.0 */
/* From what the two sides of a pair saw to the pair's result, and from all
 * results to the problems: failed pairs (with the plugin's own diagnosis),
 * slow pairs, ranks that never came or died, refused connections. */
#ifndef DIAG_TOOLS_PROBE_VERDICT_H
#define DIAG_TOOLS_PROBE_VERDICT_H

#include <stdint.h>

#include "tools/probe/probe.h"
#include "tools/probe/rdv_wire.h"

/* One direction: rx received it, tx sent it; fail is rank 0's own reason
 * when it ended the step ("" none); lat_ns from the first side. */
void verdict_direction(const struct probe_run *r, struct probe_pair *p, const char *fail,
                       const struct wire_result *rx, int have_rx, const struct wire_result *tx,
                       int have_tx, uint64_t lat_ns);
/* The short cause for the matrix of a pair the probe did not run, from
 * the probe's own reason in p->error. */
void verdict_cause(struct probe_pair *p);
/* The short cause of a failed direction, from structured facts only: the
 * probe's own reasons, a size-dependent stall, the plugin's cause code,
 * the two ports' subnets; never the plugin's words (verdict_cause.c). */
void verdict_label(const struct probe_run *r, struct probe_pair *p, const char *fail,
                   const struct wire_result *rx, int have_rx, const struct wire_result *tx,
                   int have_tx);
/* One host in every failed pair of one cause (no answer to TCP connects,
 * large messages stalling): that host named once (verdict_hosts.c). */
void verdict_hosts(struct probe_run *r);
/* Sets slow on every passing pair far below the median of its transport
 * (with enough pairs and bytes to tell); returns how many. */
int verdict_mark_slow(struct probe_run *r);
/* A passing direction the plugin repaired (its "repaired" event): code
 * "repaired" and its message; then each such pair as a warning to fix
 * (verdict_repair.c). */
void verdict_repaired(struct probe_pair *p, const struct wire_result *rx,
                      const struct wire_result *tx, int have_tx);
void verdict_repaired_pairs(struct probe_run *r);

#endif
