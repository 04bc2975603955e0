/* SPDX-License-Identifier: Apache-2.0 */
/* The rendezvous secret: what every rank of one job presents in its hello
 * and rank 0 checks before it believes a claim to a rank, as NCCL's
 * bootstrap checks the 64-bit magic of its unique id. Derived from what the
 * launcher gives every rank alike, or from NCCL_DIAG_PROBE_SECRET /
 * --job-id; how strong it is depends on its inputs, and a weak one is said
 * (rdv_secret_note). */
#ifndef DIAG_TOOLS_PROBE_RDV_SECRET_H
#define DIAG_TOOLS_PROBE_RDV_SECRET_H

#include <stddef.h>
#include <stdint.h>

#include "tools/probe/launch.h"

enum rdv_secret_strength {
  RDV_SECRET_NONE,   /* nothing shared: any host that reaches the port can claim a rank */
  RDV_SECRET_WEAK,   /* shared, but readable or guessable by others (a job id) */
  RDV_SECRET_STRONG, /* NCCL_DIAG_PROBE_SECRET, a long --job-id, a random run id */
};

/* Sets l->secret, l->secret_strength and l->secret_from from the
 * environment (get) and job_id (--job-id, or NULL); l->job as the launcher
 * named it must be set already. */
void rdv_secret_derive(struct probe_launch *l, const char *job_id, probe_getenv_fn get, void *arg);

/* One line for rank 0 to print when the secret is not strong (buf ""
 * when it is): what it comes from, why that is weak, and the fix. */
void rdv_secret_note(const struct probe_launch *l, char *buf, size_t cap);

#endif
