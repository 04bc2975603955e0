/* SPDX-License-Identifier: Apache-2.0 */
/* INFO lines that carry no state any rule reads (channels, rings, trees,
 * thresholds, comm init progress, timings): a 1,024-node job prints a
 * hundred of them per rank. The reader keeps the first one of each host
 * (so the host is known) and counts the rest, so memory follows the
 * number of processes and what they said, not the number of lines. */
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "tools/explain/explain.h"

/* Prefixes of NCCL 2.4-2.30 INFO messages no rule or host fact reads. */
static const char *const inert[] = {
  "Channel ",
  "Ring ",
  "Rings ",
  "Trees ",
  "Tree ",
  "Pattern ",
  "Connected all ",
  "Connected NVLS",
  "Connected binomial trees",
  "threadThresholds ",
  "P2P Chunksize",
  "NVLS multicast support",
  "NVLS comm ",
  "Setting affinity for GPU",
  "cudaDriverVersion",
  "ncclCommInitRank comm ",
  "ncclCommInitRankConfig comm ",
  "ncclCommSplit comm ",
  "Init timings",
  "TUNER/Plugin",
  "PROFILER/Plugin",
  "Using non-device net plugin",
  "CC Off",
  "Comm config ",
  "MNNVL ",
  "comm 0x",
  "Allocated ",
  "[Proxy Service",
  "Assigned NET plugin",
};

static bool is_inert(const struct rec *r) {
  if (r->level != REC_INFO || r->is_diag || !r->has_prefix) return false;
  const char *t = r->text;
  if (strstr(t, "coll channels,")) return true; /* "32 coll channels, 32 collnet ..." */
  for (size_t i = 0; i < sizeof(inert) / sizeof(inert[0]); i++)
    if (!strncmp(t, inert[i], strlen(inert[i]))) return true;
  return false;
}

static size_t host_hash(const char *s) {
  size_t h = 1469598103934665603ULL;
  while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
  return h;
}

/* Adds the host to the set; true when it was there already. */
static bool host_seen(struct logset *ls, const char *host) {
  if (ls->nhostset * 2 >= ls->caphostset) {
    size_t cap = ls->caphostset ? 2 * ls->caphostset : 256;
    char(*v)[EXPLAIN_HOST_MAX] = calloc(cap, sizeof(*v));
    if (!v) return false; /* keep the line: correct, only larger */
    for (size_t i = 0; i < ls->caphostset; i++) {
      if (!ls->hostset[i][0]) continue;
      size_t k = host_hash(ls->hostset[i]) & (cap - 1);
      while (v[k][0]) k = (k + 1) & (cap - 1);
      memcpy(v[k], ls->hostset[i], EXPLAIN_HOST_MAX);
    }
    free(ls->hostset);
    ls->hostset = v, ls->caphostset = cap;
  }
  size_t k = host_hash(host) & (ls->caphostset - 1);
  for (; ls->hostset[k][0]; k = (k + 1) & (ls->caphostset - 1))
    if (!strcmp(ls->hostset[k], host)) return true;
  scopy(ls->hostset[k], EXPLAIN_HOST_MAX, host);
  ls->nhostset++;
  return false;
}

bool logset_drop_inert(struct logset *ls, const struct rec *r) {
  if (!is_inert(r) || !r->host[0]) return false;
  if (!host_seen(ls, r->host)) return false;
  ls->ninert++;
  return true;
}
