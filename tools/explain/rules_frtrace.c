/* SPDX-License-Identifier: Apache-2.0 */
/* PyTorch's flight recorder, as its analyzer (fr_trace in PyTorch's tools,
 * PyTorch 2.5+) prints it after reading every rank's dump
 * (TORCH_NCCL_TRACE_BUFFER_SIZE, TORCH_NCCL_DUMP_ON_TIMEOUT): one block per
 * collective that did not line up across ranks. The block starts with
 *   "Not all ranks joining collective, sequence number: N"
 *   "Collective sequence number: N has errors"
 *   "Input/output mismatch in the collective sequence number: N"
 * and carries "group info:", "collective: nccl:<op>", "missing ranks: {..}",
 * "collective state:" and "error msg: Culprit rank R; Error type: T, <detail>".
 * The first block of each process group is the one that matters: the
 * analyzer stops pairing that group's collectives after it, so later blocks
 * are its echo. A rank that never joined is the rank behind; a culprit rank
 * called another collective (or other sizes) at the same point. */
#include <stdio.h>
#include <string.h>

#include "tools/explain/rules.h"

enum fr_kind { FR_NONE, FR_MISSING, FR_ERRORS, FR_NUMEL };

struct fr_block {
  enum fr_kind kind;
  long seq;
  char group[64], coll[48], missing[96], state[24];
  char culprit[24], type[40], detail[240];
  bool counted;
};

static const char *const fr_heads[] = {
  "Not all ranks joining collective, sequence number:",
  "Collective sequence number:",
  "Input/output mismatch in the collective sequence number:",
};

static int fr_head(const char *t, long *seq) {
  for (int k = 0; k < 3; k++) {
    const char *p = text_after(t, fr_heads[k]);
    if (!p) continue;
    while (*p == ' ') p++;
    if (k == 1 && !strstr(p, "has errors")) return 0;
    if (!text_long(p, seq)) *seq = -1;
    return k + 1;
  }
  return 0;
}

static const char *const fr_fields[] = {"group info:", "collective: nccl:", "missing ranks:",
                                        "collective state:", "error msg: Culprit rank"};

bool frtrace_relevant(const char *t) {
  long seq;
  if (!*t || !strchr("NCIgcmeW", *t)) return false; /* most lines: one test */
  if (fr_head(t, &seq) || strstr(t, "missed FR dumps from ranks")) return true;
  for (size_t k = 0; k < sizeof(fr_fields) / sizeof(fr_fields[0]); k++)
    if (!strncmp(t, fr_fields[k], strlen(fr_fields[k]))) return true;
  return false;
}

bool frtrace_match(const struct rec *r) {
  return r->level == REC_TEXT && frtrace_relevant(r->text);
}

/* "value" of "field: value" up to the line's end, trimmed. */
static void fr_value(const char *t, const char *field, char *out, size_t cap) {
  const char *p = t + strlen(field);
  while (*p == ' ') p++;
  snprintf(out, cap, "%s", p);
  for (size_t n = strlen(out); n && (out[n - 1] == ' ' || out[n - 1] == '\r'); n--) out[n - 1] = 0;
}

/* "Culprit rank 3; Error type: COLLECTIVE_TYPE_MISMATCH, Expected ..." (the
 * first culprit: the analyzer joins several with ", Culprit rank"). */
static void fr_culprit(const char *t, struct fr_block *b) {
  const char *p = text_after(t, "Culprit rank");
  if (!p || b->culprit[0]) return;
  while (*p == ' ') p++;
  text_token(p, ";", b->culprit, sizeof(b->culprit));
  const char *ty = text_after(p, "Error type:");
  if (!ty) return;
  while (*ty == ' ') ty++;
  text_token(ty, ",", b->type, sizeof(b->type));
  const char *d = strchr(ty, ',');
  if (!d) return;
  snprintf(b->detail, sizeof(b->detail), "%s", d + 1 + (d[1] == ' '));
  char *next = strstr(b->detail, ", Culprit rank");
  if (next) *next = 0;
}

static void fr_field(const char *t, struct fr_block *b) {
  if (!strncmp(t, "group info:", 11)) fr_value(t, "group info:", b->group, sizeof(b->group));
  else if (!strncmp(t, "collective: nccl:", 17))
    fr_value(t, "collective: nccl:", b->coll, sizeof(b->coll));
  else if (!strncmp(t, "missing ranks:", 14))
    fr_value(t, "missing ranks:", b->missing, sizeof(b->missing));
  else if (!strncmp(t, "collective state:", 17))
    fr_value(t, "collective state:", b->state, sizeof(b->state));
  else if (!strncmp(t, "error msg:", 10)) fr_culprit(t, b);
}

/* What the block says, in words, appended to buf. */
static void fr_describe(const struct fr_block *b, char *buf, size_t cap) {
  size_t n = strlen(buf);
  const char *g = b->group[0] ? b->group : "?";
  const char *c = b->coll[0] ? b->coll : "a collective";
  if (b->kind == FR_MISSING && b->missing[0])
    snprintf(
      buf + n, cap - n,
      "%srank%s %s never joined %s sequence number %ld of process group %s that the other ranks entered (state %s)",
      n ? "; " : "", strchr(b->missing, ',') ? "s" : "", b->missing, c, b->seq, g,
      b->state[0] ? b->state : "?");
  else if (b->culprit[0])
    snprintf(buf + n, cap - n,
             "%srank %s differs at %s sequence number %ld of process group %s: %s%s%s",
             n ? "; " : "", b->culprit, c, b->seq, g, b->type[0] ? b->type : "a mismatch",
             b->detail[0] ? ", " : "", b->detail);
  else
    snprintf(buf + n, cap - n, "%sranks disagree at %s sequence number %ld of process group %s",
             n ? "; " : "", c, b->seq, g);
}

static bool fr_is_divergence(const struct fr_block *b) {
  return b->culprit[0] && !strstr(b->type, "STATE");
}

static void fr_finish(const struct fr_block *b, char seen[][64], int *nseen, char *what, size_t cap,
                      int *diverged, int *echoes) {
  if (b->kind == FR_NONE) return;
  for (int i = 0; i < *nseen; i++)
    if (!strcmp(seen[i], b->group)) {
      (*echoes)++;
      return;
    }
  if (*nseen < 8) snprintf(seen[(*nseen)++], 64, "%s", b->group);
  if (fr_is_divergence(b)) (*diverged)++;
  fr_describe(b, what, cap);
}

void frtrace_build(const struct explain_ctx *cx, const struct hits *h) {
  char what[900] = "", seen[8][64];
  int nseen = 0, diverged = 0, echoes = 0;
  struct fr_block b = {0};
  struct finding *f = NULL;
  for (size_t i = 0; i < h->n; i++) {
    long seq;
    const char *nodump = text_after(h->v[i]->text, "missed FR dumps from ranks");
    int head = fr_head(h->v[i]->text, &seq);
    if (nodump) {
      char ranks[64] = ""; /* "({12, 13})": a set with spaces, up to its ')' */
      const char *r0 = nodump + strspn(nodump, " (");
      snprintf(ranks, sizeof(ranks), "%.*s", (int)strcspn(r0, ")"), r0);
      size_t n = strlen(what);
      snprintf(what + n, sizeof(what) - n,
               "%sno dump came from rank%s %s (%s or hung before writing one)", n ? "; " : "",
               strchr(ranks, ',') ? "s" : "", ranks, strchr(ranks, ',') ? "they died" : "it died");
      if (!f && !(f = finding_new(cx->out, "flight-recorder", CONF_MEDIUM))) return;
      finding_evidence(f, h->v[i]);
      continue;
    }
    if (head) {
      fr_finish(&b, seen, &nseen, what, sizeof(what), &diverged, &echoes);
      memset(&b, 0, sizeof(b));
      b.kind = head == 1 ? FR_MISSING : head == 2 ? FR_ERRORS : FR_NUMEL, b.seq = seq;
    } else if (b.kind != FR_NONE) fr_field(h->v[i]->text, &b);
    if (b.kind == FR_NONE) continue; /* a field line with no block: not this report */
    if (!f && !(f = finding_new(cx->out, "flight-recorder", CONF_MEDIUM))) return;
    finding_evidence(f, h->v[i]);
  }
  fr_finish(&b, seen, &nseen, what, sizeof(what), &diverged, &echoes);
  if (!f) return;
  if (diverged) f->conf = CONF_HIGH;
  char more[80] = "";
  if (echoes)
    snprintf(more, sizeof(more), " (%d later block%s of the same group%s follow%s from it)", echoes,
             echoes == 1 ? "" : "s", nseen == 1 ? "" : "s", echoes == 1 ? "s" : "");
  finding_cause(
    f,
    "PyTorch's flight recorder shows where the ranks parted: %s%s; the collective timeouts on the other ranks are the consequence, not the cause",
    what, more);
  if (diverged)
    finding_fix(
      f,
      "the culprit rank's code took another path: compare its stack trace in the analyzer's output with the other ranks' at that sequence number (a branch on rank-local data, a skipped or extra collective, tensors of another shape or dtype) and make every rank of the group issue the same collectives in the same order with the same sizes");
  else
    finding_fix(
      f,
      "find out what the rank behind was doing at that point: its own log before the timeout (an exception, an out-of-memory kill, a slow data loader or checkpoint), py-spy dump --pid <pid> on it while it hangs; if it died, the launcher's report names how");
}
