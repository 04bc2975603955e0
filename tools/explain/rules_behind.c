/* SPDX-License-Identifier: Apache-2.0 */
/* PyTorch's own line when a collective times out and the flight recorder
 * dumps (2.4+):
 *   "[PG ID 0 PG GUID 0(default_pg) Rank 6] Received a dump signal due to a
 *    collective timeout from rank 7 and we will try our best to dump the
 *    debug info. Last enqueued NCCL work: 56116, last completed NCCL work:
 *    56116."
 * Every rank of the group prints it. Within one group, a rank whose last
 * enqueued work is lower than the others' never issued the collective
 * they wait for: its host thread is behind (stuck above NCCL, or took
 * another path), and the timeouts elsewhere follow from it. Equal numbers
 * say nothing of who is behind, so no finding is made from them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/explain/rules.h"

#define BEHIND_RANKS_MAX 512

struct behind_rank {
  char pg[48];
  long rank, enqueued;
};

bool behind_match(const struct rec *r) {
  return strstr(r->text, "Received a dump signal due to a collective timeout") &&
         strstr(r->text, "Last enqueued");
}

/* The group and rank of "[PG ID 0 PG GUID 0(default_pg) Rank 6]", else
 * the launcher's "[rank6]:"; the enqueued count. */
static bool behind_parse(const struct rec *r, struct behind_rank *b) {
  const char *t = r->raw, *p;
  long n;
  b->pg[0] = 0, b->rank = -1;
  if ((p = text_after(t, "PG GUID "))) text_token(p, "", b->pg, sizeof(b->pg));
  if ((p = text_after(t, " Rank ")) && text_long(p, &n)) b->rank = n;
  else if ((p = text_after(t, "[rank")) && text_long(p, &n)) b->rank = n;
  p = text_after(t, "Last enqueued ");
  if (p) p = strstr(p, "work:");
  if (!p || b->rank < 0) return false;
  p += 5;
  while (*p == ' ') p++;
  return text_long(p, &b->enqueued);
}

/* The ranks of group pg at its lowest enqueued count, when counts differ. */
static bool behind_group(const struct behind_rank *v, size_t n, const char *pg, char *who,
                         size_t cap, long *low, long *high) {
  *low = -1, *high = -1;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v[i].pg, pg)) continue;
    if (*low < 0 || v[i].enqueued < *low) *low = v[i].enqueued;
    if (v[i].enqueued > *high) *high = v[i].enqueued;
  }
  if (*low == *high) return false;
  who[0] = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v[i].pg, pg) || v[i].enqueued != *low) continue;
    char one[32];
    snprintf(one, sizeof(one), "%ld", v[i].rank);
    size_t k = strlen(who);
    if (strstr(who, one) || k + strlen(one) + 3 >= cap) continue;
    snprintf(who + k, cap - k, "%s%s", k ? ", " : "", one);
  }
  return true;
}

void behind_build(const struct explain_ctx *cx, const struct hits *h) {
  struct behind_rank *v = calloc(BEHIND_RANKS_MAX, sizeof(*v));
  if (!v) return;
  size_t n = 0;
  for (size_t i = 0; i < h->n && n < BEHIND_RANKS_MAX; i++)
    if (behind_parse(h->v[i], &v[n])) n++;
  char who[200];
  long low, high;
  for (size_t i = 0; i < n; i++) {
    if (!behind_group(v, n, v[i].pg, who, sizeof(who), &low, &high)) continue;
    struct finding *f = finding_new(cx->out, "rank-behind", CONF_MEDIUM);
    if (!f) break;
    for (size_t k = 0; k < h->n; k++) finding_evidence(f, h->v[k]);
    finding_cause(
      f,
      "in process group %s, rank%s %s issued collectives only up to #%ld while other ranks reached #%ld (PyTorch's 'Last enqueued NCCL work' at the timeout): %s behind, above NCCL, and the other ranks' timeouts follow from it",
      v[i].pg[0] ? v[i].pg : "?", strchr(who, ',') ? "s" : "", who, low, high,
      strchr(who, ',') ? "they are" : "it is");
    finding_fix(
      f,
      "look at what rank %s was doing instead of its next collective: its own log before the timeout (an exception, a slow data loader or checkpoint, a branch other ranks did not take), py-spy dump --pid <pid> on it while it hangs; the flight recorder's dump (fr_trace) names the collective",
      who);
    break; /* one group: the first that differs */
  }
  free(v);
}
