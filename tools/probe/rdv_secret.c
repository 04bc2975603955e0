/* SPDX-License-Identifier: Apache-2.0 */
/* See rdv_secret.h. The inputs, strongest first:
 *   NCCL_DIAG_PROBE_SECRET   set by the user on every rank: strong when 16
 *                            characters or more
 *   --job-id ID              the same, on the command line (other users can
 *                            read it in ps): strong when 16 or more
 *   TORCHELASTIC_RUN_ID      torchrun's run id: random with --standalone
 *                            (strong), "none" or a chosen name otherwise
 *   SLURM_JOB_ID.STEP_ID, OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE
 *                            weak: small numbers, listed by squeue and ps
 * always with the launcher's job id (l->job), which every rank must share
 * anyway. The 64-bit value is a hash of them: it hides nothing a guesser
 * could not try, but a stranger who knows only the port has nothing. */
#include "tools/probe/rdv_secret.h"

#include <stdio.h>
#include <string.h>

#define STRONG_LEN 16

static uint64_t mix(uint64_t h, const char *s) {
  for (; s && *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
  h ^= 0xff; /* a separator: ("ab","c") and ("a","bc") differ */
  h *= 0x100000001b3ULL;
  return h;
}

static uint64_t finish(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

void rdv_secret_derive(struct probe_launch *l, const char *job_id, probe_getenv_fn get, void *arg) {
  const char *env = get("NCCL_DIAG_PROBE_SECRET", arg);
  const char *run = get("TORCHELASTIC_RUN_ID", arg);
  uint64_t h = mix(0xcbf29ce484222325ULL, "nccl-net-diag probe rendezvous");
  h = mix(h, l->job);
  h = mix(h, env);
  l->secret = finish(h);
  if (env && strlen(env) >= STRONG_LEN) {
    l->secret_strength = RDV_SECRET_STRONG;
    snprintf(l->secret_from, sizeof(l->secret_from), "NCCL_DIAG_PROBE_SECRET");
  } else if (env && *env) {
    l->secret_strength = RDV_SECRET_WEAK;
    snprintf(l->secret_from, sizeof(l->secret_from),
             "NCCL_DIAG_PROBE_SECRET, which has only %zu characters (guessable)", strlen(env));
  } else if (job_id && strlen(job_id) >= STRONG_LEN) {
    l->secret_strength = RDV_SECRET_STRONG;
    snprintf(l->secret_from, sizeof(l->secret_from), "--job-id");
  } else if (job_id && *job_id) {
    l->secret_strength = RDV_SECRET_WEAK;
    snprintf(l->secret_from, sizeof(l->secret_from),
             "--job-id, which has only %zu characters (guessable, and visible in ps)",
             strlen(job_id));
  } else if (run && strlen(run) >= STRONG_LEN && !strcmp(l->launcher, "torchrun")) {
    l->secret_strength = RDV_SECRET_STRONG;
    snprintf(l->secret_from, sizeof(l->secret_from), "TORCHELASTIC_RUN_ID");
  } else if (l->job[0]) {
    l->secret_strength = RDV_SECRET_WEAK;
    snprintf(l->secret_from, sizeof(l->secret_from),
             "the launcher's job id '%s', which other users can read or guess (squeue, ps, a "
             "small number, or torchrun's default run id)",
             l->job);
  } else {
    l->secret_strength = RDV_SECRET_NONE;
    snprintf(l->secret_from, sizeof(l->secret_from),
             "nothing: the launcher gives no job id (RANK and WORLD_SIZE alone)");
  }
}

void rdv_secret_note(const struct probe_launch *l, char *buf, size_t cap) {
  if (l->secret_strength == RDV_SECRET_STRONG) {
    if (cap) buf[0] = 0;
    return;
  }
  snprintf(buf, cap,
           "the rendezvous secret comes from %s: a host on this network that reaches port %d "
           "could claim a rank. Set NCCL_DIAG_PROBE_SECRET to one random value of 16 or more "
           "characters on every rank (openssl rand -hex 16)",
           l->secret_from, l->port);
}
