/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL's RAS client (ncclras, or `nc localhost 28028`, NCCL 2.24+) in its
 * text form: the Errors and Warnings sections name job processes that are
 * DEAD (unreachable on the RAS network), communicators INCOMPLETE (ranks
 * that sent no data), ERROR (init or async errors by rank) and MISMATCH
 * (ranks of a communicator in different states, or at different operation
 * counts: the rank at the lowest count is the one behind). Each names its
 * ranks as "Rank R ... -- GPU g managed by process P on node H". A dead
 * process is the root: the missing data and the rank behind follow from
 * it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/explain/rules.h"

enum ras_sec { RAS_NONE, RAS_DEAD, RAS_MISSING, RAS_ERROR, RAS_STATUS, RAS_COUNTS };

struct ras_state {
  enum ras_sec sec;
  char dead[300], missing[300], errors[300], behind[300];
  long low;        /* the lowest operation count seen; -1: a rank launched none */
  bool has_counts; /* a count line was read */
  char err_name[40];
};

static const char *skip_sp(const char *t) {
  while (*t == ' ' || *t == '\t') t++;
  return t;
}

static bool ras_is_comm_head(const char *t, const char *state) {
  const char *p = t;
  if (*p != '#') return false;
  p = strstr(p, ") ");
  return p && !strncmp(p + 2, state, strlen(state));
}

bool ras_relevant(const char *text) {
  const char *t = skip_sp(text);
  if (!*t || !strchr("0123456789RPMCIAEWG#", *t)) return false; /* most lines: one test */
  return (strstr(t, "job process") && strstr(t, "considered dead")) ||
         strstr(t, "Missing communicator data from") ||
         (strstr(t, "managed by process") && strstr(t, " on node ")) ||
         (!strncmp(t, "Process ", 8) && strstr(t, " on node ") && strstr(t, "managing GPU")) ||
         strstr(t, "Communicator ranks have different") || strstr(t, "launched up to operation") ||
         strstr(t, "not launched any operations") ||
         ((!strncmp(t, "Initialization error", 20) || !strncmp(t, "Asynchronous error", 18)) &&
          strstr(t, " rank")) ||
         (strstr(t, " ranks reported ") && strstr(t, "nccl")) ||
         strstr(t, "while gathering communicator data") ||
         strstr(t, "Warning: missing data from") || ras_is_comm_head(t, "INCOMPLETE") ||
         ras_is_comm_head(t, "ERROR") || ras_is_comm_head(t, "MISMATCH");
}

bool ras_match(const struct rec *r) { return r->level == REC_TEXT && ras_relevant(r->text); }

/* "... on node H" -> H; "... process P" -> P. */
static void ras_who(const char *t, char *node, size_t ncap, char *pid, size_t pcap) {
  node[0] = pid[0] = 0;
  const char *p = text_after(t, " on node ");
  if (p) text_token(p, "", node, ncap);
  p = text_after(t, "by process ");
  if (!p) p = text_after(t, "Process ");
  if (p) text_token(p, "", pid, pcap);
}

static void ras_add(char *list, size_t cap, const char *what) {
  if (strstr(list, what) || strlen(list) + strlen(what) + 3 >= cap) return;
  size_t n = strlen(list);
  snprintf(list + n, cap - n, "%s%s", n ? ", " : "", what);
}

/* A rank's count line: "Rank R has launched up to operation K -- ..." or
 * "Rank R has not launched any operations -- ..." (the grouped "N ranks
 * have ..." carries no node, only the count). */
static void ras_count(struct ras_state *s, const char *t, const char *who) {
  long k = -1;
  const char *p = text_after(t, "up to operation ");
  if (p && !text_long(p, &k)) return;
  if (!p && !strstr(t, "not launched any")) return;
  if (!s->has_counts || k < s->low) s->low = k, s->behind[0] = 0;
  s->has_counts = true;
  if (k == s->low && who[0] && !strncmp(t, "Rank ", 5)) ras_add(s->behind, sizeof(s->behind), who);
}

static void ras_line(struct ras_state *s, const char *text, struct finding *f) {
  const char *t = skip_sp(text);
  char node[64], pid[24], who[128] = "";
  ras_who(t, node, sizeof(node), pid, sizeof(pid));
  long rank = -1;
  if (!strncmp(t, "Rank ", 5)) text_long(t + 5, &rank);
  if (node[0]) {
    finding_host(f, node);
    if (rank >= 0) snprintf(who, sizeof(who), "rank %ld (process %s on %s)", rank, pid, node);
    else snprintf(who, sizeof(who), "process %s on %s", pid, node);
  } else if (rank >= 0) snprintf(who, sizeof(who), "rank %ld", rank);
  if (strstr(t, "considered dead")) s->sec = RAS_DEAD;
  else if (strstr(t, "Missing communicator data") || strstr(t, "Warning: missing data"))
    s->sec = RAS_MISSING;
  else if (strstr(t, "Initialization error") || strstr(t, "Asynchronous error")) s->sec = RAS_ERROR;
  else if (strstr(t, "different status")) s->sec = RAS_STATUS;
  else if (strstr(t, "operation counts")) s->sec = RAS_COUNTS;
  else if (*t == '#') s->sec = RAS_NONE;
  const char *rep = text_after(t, " reported ");
  if (rep && s->sec == RAS_ERROR) text_token(rep, "", s->err_name, sizeof(s->err_name));
  if (s->sec == RAS_COUNTS) {
    ras_count(s, t, who);
    return;
  }
  if (!who[0]) return;
  if (s->sec == RAS_DEAD) ras_add(s->dead, sizeof(s->dead), who);
  else if (s->sec == RAS_MISSING) ras_add(s->missing, sizeof(s->missing), who);
  else if (s->sec == RAS_ERROR) ras_add(s->errors, sizeof(s->errors), who);
  else if (s->sec == RAS_STATUS) ras_add(s->behind, sizeof(s->behind), who);
}

static void ras_cause(const struct ras_state *s, char *buf, size_t cap) {
  size_t n = 0;
  if (s->dead[0])
    n += (size_t)snprintf(buf + n, cap - n, "%s%s dead (unreachable on the RAS network)",
                          n ? "; " : "", s->dead);
  if (s->missing[0] && n < cap)
    n += (size_t)snprintf(buf + n, cap - n, "%sno communicator data from %s", n ? "; " : "",
                          s->missing);
  if (s->errors[0] && n < cap)
    n += (size_t)snprintf(buf + n, cap - n, "%s%s reported %s", n ? "; " : "", s->errors,
                          s->err_name[0] ? s->err_name : "an error");
  if (s->behind[0] && n < cap)
    n += (size_t)snprintf(buf + n, cap - n, "%s%s behind the other ranks of its communicator%s",
                          n ? "; " : "", s->behind,
                          s->has_counts && s->low < 0 ? " (launched no operation)" : "");
  if (!n) snprintf(buf, cap, "ranks that disagree (RAS names no process)");
}

void ras_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *f = finding_new(cx->out, "ras", CONF_MEDIUM);
  if (!f) return;
  struct ras_state s = {0};
  for (size_t i = 0; i < h->n; i++) {
    ras_line(&s, h->v[i]->text, f);
    finding_evidence(f, h->v[i]);
  }
  char what[900];
  ras_cause(&s, what, sizeof(what));
  if (s.dead[0]) f->conf = CONF_HIGH;
  finding_cause(
    f, "NCCL's RAS report (ncclras) names %s%s", what,
    s.dead[0] ? ": the dead process failed first, the other ranks' errors and hangs follow from it"
              : "");
  if (s.dead[0] || s.missing[0])
    finding_fix(
      f,
      "look at the named node first: that process's own log and exit (the launcher's report, dmesg for an Xid or an out-of-memory kill, its network link); restart the job without that node if it is faulty");
  else
    finding_fix(
      f,
      "look at the named rank first: its own log for the error or what it waits on (py-spy dump --pid <pid> on that node); a rank that launched fewer operations took another code path or is stuck before the collective");
}
