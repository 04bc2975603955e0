/* SPDX-License-Identifier: Apache-2.0 */
/* What every rank does (rank 0 too, over its own rendezvous): say who it
 * is, send its facts, then run the pair tasks rank 0 hands it until the
 * end. */
#ifndef DIAG_TOOLS_PROBE_WORKER_H
#define DIAG_TOOLS_PROBE_WORKER_H

#include <stdint.h>

#include "tools/probe/facts.h"
#include "tools/probe/launch.h"
#include "tools/probe/rdv_client.h"

struct worker {
  const struct probe_opts *o;
  const struct probe_launch *l;
  struct facts_ctx *fx;
  struct rdv_client rc;
  int64_t deadline_ns; /* this rank gives up waiting for rank 0 */
  int got_bye;
  int have_stash;
  struct wire_task stash; /* a task that arrived while another ended */
  char why[1024];         /* this rank's own failure, "" none */
};

/* Runs to the end. host/port/from: where to reach rank 0 (rank 0 itself
 * passes its loopback). Returns 0, or 1 with w->why set (this rank failed:
 * refused, rank 0 unreachable or gone). */
int worker_run(struct worker *w, const struct probe_facts *f, const char *host, int port,
               const char *from);

#endif
