/* SPDX-License-Identifier: Apache-2.0 */
/* What the plugin already diagnosed, hangs without an NCCL error, and the
 * WARN lines no rule explains. */
#include <stdio.h>
#include <string.h>

#include "tools/explain/rules.h"

/* A repaired pair (rules_repair.c), a stall (rules_waitfor.c) and a port's
 * flap (rules_flap.c), among others, have rules of their own. */
bool diag_match(const struct rec *r) {
  return r->is_diag && r->level == REC_WARN && !repair_match(r) && !waitfor_match(r) &&
         !slow_match(r) && !failover_match(r) && !flap_match(r);
}

/* The same diagnosis from many ranks differs only in numbers (qp numbers,
 * ports, sizes): compare with digits folded. */
static void fold(const char *t, char *out, size_t cap) {
  size_t o = 0;
  for (; *t && o + 1 < cap && o < 160; t++) {
    bool is_num = (*t >= '0' && *t <= '9') ||
                  (o && out[o - 1] == '#' && ((*t >= 'a' && *t <= 'f') || *t == 'x'));
    if (is_num && o && out[o - 1] == '#') continue;
    out[o++] = is_num ? '#' : *t;
  }
  out[o] = 0;
}

/* The plugin's message carries its fix after the cause: the sentences that
 * tell what to set or do, and every NCCL_X=value it names. */
static const char *diag_fix(struct finding *f, const char *t) {
  static const char *const verbs[] = {"set ",    "use ", "exclude ", "install ",
                                      "export ", "run ", "give ",    "pass "};
  const char *best = NULL;
  for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
    for (const char *p = t; (p = strcasestr(p, verbs[i])); p++)
      if (p == t || (p - t >= 2 && p[-1] == ' ' && strchr(".:;", p[-2]))) { /* a clause's verb */
        if (!best || p < best) best = p;
        break;
      }
  finding_fix(f, "%s", best ? best : "as the plugin's message says (quoted as evidence)");
  for (const char *p = best ? best : t; (p = strstr(p, "NCCL_"));) {
    char tok[160];
    size_t n = text_token(p, ",;)'\"", tok, sizeof(tok));
    const char *eq = strchr(tok, '=');
    /* "(NCCL_DIAG_FALLBACK=auto)" describes; "with NCCL_IB_HCA=^x" prescribes */
    if (eq && eq[1] && !strchr(tok, '<') && p > t && p[-1] != '(') finding_export(f, "%s", tok);
    p += n ? n : 1;
  }
  return best;
}

void diag_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *groups[32];
  char keys[32][168];
  int ngroups = 0;
  for (size_t i = 0; i < h->n; i++) {
    char key[168];
    fold(h->v[i]->text, key, sizeof(key));
    int g = 0;
    while (g < ngroups && strcmp(keys[g], key)) g++;
    if (g == ngroups && ngroups < 32) {
      struct finding *f = finding_new(cx->out, "plugin-diagnosis", CONF_HIGH);
      if (!(groups[g] = f)) return;
      const char *t = h->v[i]->text, *fix = diag_fix(f, t);
      int n = fix ? (int)(fix - t) : (int)strlen(t); /* the cause: the message before its fix */
      while (n > 0 && strchr(" .:;", t[n - 1])) n--;
      finding_cause(f, "libnccl-net-diag diagnosed on %s: %.*s",
                    h->v[i]->host[0] ? h->v[i]->host : "a host", n > 1000 ? 1000 : n, t);
      snprintf(keys[ngroups++], sizeof(keys[0]), "%s", key);
    }
    if (g < ngroups) finding_evidence(groups[g], h->v[i]);
  }
}

/* --- hangs --------------------------------------------------------------- */

bool watchdog_match(const struct rec *r) {
  return strstr(r->text, "Watchdog caught collective operation timeout") != NULL;
}

static bool has_nccl_warn(const struct logset *ls) {
  for (size_t i = 0; i < ls->nrecs; i++)
    if (ls->recs[i].level == REC_WARN) return true;
  return false;
}

void watchdog_build(const struct explain_ctx *cx, const struct hits *h) {
  if (has_nccl_warn(cx->ls)) return; /* the failure NCCL saw is the other rules' */
  /* RAS or the flight recorder named the rank behind: the timeouts are its consequence */
  static const char *const roots[] = {"ras", "flight-recorder", "rank-behind"};
  for (int k = 0; k < 3; k++)
    if (h->n && rules_consequence(cx, roots[k], h->v[0], NULL)) {
      for (size_t i = 1; i < h->n; i++) rules_consequence(cx, roots[k], h->v[i], NULL);
      return;
    }
  struct finding *f = finding_new(cx->out, "watchdog-timeout", CONF_LOW);
  if (!f) return;
  char ops[600] = "";
  for (size_t i = 0; i < h->n && strlen(ops) < 480; i++) {
    char op[64] = "?", seq[24] = "?", tmo[24] = "?";
    long rank = -1;
    const char *t = h->v[i]->text, *p;
    text_token(text_after(t, "OpType="), ",)", op, sizeof(op));
    text_token(text_after(t, "SeqNum="), ",)", seq, sizeof(seq));
    text_token(text_after(t, "Timeout(ms)="), ",)", tmo, sizeof(tmo));
    if (!(p = text_after(t, "[Rank "))) p = text_after(t, " Rank ");
    text_long(p, &rank);
    char one[160];
    snprintf(one, sizeof(one), "rank %ld: %s SeqNum=%s after %s ms", rank, op, seq, tmo);
    if (!strstr(ops, one))
      snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), "%s%s", ops[0] ? "; " : "", one);
    finding_evidence(f, h->v[i]);
  }
  finding_cause(
    f,
    "no confident cause: collectives timed out in PyTorch's watchdog (%s) and NCCL logged no error: a hang (a rank that never joined the collective, a deadlock above NCCL, or a stalled network NCCL did not report), not a failure NCCL saw",
    ops);
  finding_fix(
    f,
    "collect next: NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET on every rank, TORCH_NCCL_DUMP_ON_TIMEOUT=1 (which rank did not join), py-spy dump --pid <pid> on every rank while it hangs, and ncclras on a node (NCCL 2.24+)");
  finding_export(f, "NCCL_DEBUG=INFO");
  finding_export(f, "NCCL_DEBUG_SUBSYS=INIT,NET");
  finding_export(f, "TORCH_NCCL_DUMP_ON_TIMEOUT=1");
}

/* --- what no rule explains ------------------------------------------------ */

/* Any line of the input that says this (a "Last error:" line is not
 * always among the hits). */
static bool input_says(const struct logset *ls, const char *what) {
  for (size_t i = 0; i < ls->nrecs; i++)
    if (strstr(ls->recs[i].raw, what)) return true;
  return false;
}

/* What a message NCCL words tersely usually means, as a lead. */
static void message_hint(struct finding *f, const struct logset *ls, const struct rec *first) {
  size_t n = strlen(f->fix);
  if (strstr(first->text, "does not loop back to start"))
    snprintf(
      f->fix + n, sizeof(f->fix) - n,
      "; a ring that does not loop back means the ranks computed different topologies: run the same NCCL version on every host, leave NCCL_HOSTID unset, and use NCCL 2.20 or later (2.19 could read unset PCI link speeds)");
  else if (input_says(ls, "no algorithm/protocol available"))
    snprintf(
      f->fix + n, sizeof(f->fix) - n,
      "; 'no algorithm/protocol available' means NCCL_ALGO or NCCL_PROTO (set in this job, a launcher or nccl.conf) leave nothing that implements this collective: unset them, or add an algorithm and protocol that do (NCCL 2.12+ names the setting in the message)");
  else if (strstr(first->text, "watchdog thread terminated") && strstr(first->text, "CUDA error"))
    snprintf(
      f->fix + n, sizeof(f->fix) - n,
      "; a CUDA error reported by PyTorch's NCCL watchdog comes from the GPU work it waits on (a kernel that faulted, or a GPU that failed: dmesg shows Xid errors), not from the network; rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel");
  else if (strstr(first->text, "uda") || strstr(first->text, "CUDA")) cuda_hint(f, first);
  else if (rules_failed_init_trace(first->text))
    snprintf(
      f->fix + n, sizeof(f->fix) - n,
      "; these lines are NCCL's return trace with no WARN before them: the failing step did not say why, so the other ranks' logs (or NCCL_DEBUG_SUBSYS=ALL) hold the reason");
}

/* A verbs call NCCL reports with no errno (before 2.12 it printed none):
 * what usually lies behind it, as a lead, not a cause. */
static void verbs_hint(struct finding *f, const struct rec *first) {
  const char *t = first->text;
  if (!strstr(t, "Call to ibv_") || strstr(t, "error") || strstr(t, "errno")) return;
  size_t n = strlen(f->fix);
  snprintf(
    f->fix + n, sizeof(f->fix) - n,
    "; a verbs call that fails with no errno is most often, in a container, the locked-memory limit (ulimit -l; docker run --ulimit memlock=-1) or RDMA devices the container cannot open (/dev/infiniband)");
}

/* Settings meant for NCCL's own tests, set in a job: a lead whatever the
 * error (NCCL_GRAPH_FILE replaces the search with a graph saved on another
 * machine, which fails or corrupts when the topology differs). */
static void setting_hint(struct finding *f, const struct corr *c) {
  for (int i = 0; i < c->nhosts; i++) {
    const char *v = corr_env(&c->hosts[i], "NCCL_GRAPH_FILE");
    if (!v) continue;
    size_t n = strlen(f->cause);
    snprintf(f->cause + n, sizeof(f->cause) - n,
             "; %s runs with NCCL_GRAPH_FILE=%.120s, which replaces NCCL's own topology search "
             "with a saved graph and fails when this machine differs from the one it was saved on: "
             "unset it (the environment, /etc/nccl.conf or ~/.nccl.conf; some images set it)",
             c->hosts[i].name, v);
    return;
  }
}

void unknown_build(const struct explain_ctx *cx, const struct hits *h) {
  if (cx->out->n) return; /* other findings explain the job; these follow from them */
  bool has_warn = false, has_info = false;
  for (size_t i = 0; i < h->n; i++) has_warn |= h->v[i]->level == REC_WARN;
  for (size_t i = 0; i < cx->ls->nrecs && !has_info; i++)
    has_info = cx->ls->recs[i].level == REC_INFO && !cx->ls->recs[i].is_diag;
  struct finding *f = finding_new(cx->out, "unexplained-warn", CONF_LOW);
  if (!f) return;
  const struct rec *first = NULL;
  for (size_t i = 0; i < h->n; i++)
    if (!has_warn || h->v[i]->level == REC_WARN) {
      first = first ? first : h->v[i];
      finding_evidence(f, h->v[i]);
    }
  if (has_info) {
    finding_cause(
      f,
      "no confident cause: NCCL failed (\"%.300s\") and no rule of this tool recognises it in this NCCL_DEBUG=INFO log",
      first->text);
    finding_fix(
      f,
      "explain the logs of every rank together (the first rank to fail names the cause; NCCL_DEBUG_FILE=/tmp/nccl.%%h.%%p gives one file per process), run nccl-net-diag doctor on the hosts named, and add NCCL_DEBUG_SUBSYS=ALL if one rank's log shows no WARN");
    verbs_hint(f, first);
    message_hint(f, cx->ls, first);
    setting_hint(f, cx->corr);
    return;
  }
  if (has_warn) {
    finding_cause(
      f, "no confident cause: NCCL warned \"%.300s\" and no rule of this tool recognises it",
      first->text);
    finding_fix(
      f,
      "run nccl-net-diag doctor on the hosts named; collect every rank's log with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET and explain them together");
  } else {
    finding_cause(
      f, "no confident cause: NCCL failed (\"%.300s\") but the log has no NCCL lines that say why",
      first->text);
    finding_fix(
      f,
      "rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET (NCCL_DEBUG_FILE=/tmp/nccl.%%h.%%p for one file per process) and explain those logs");
  }
  finding_export(f, "NCCL_DEBUG=INFO");
  finding_export(f, "NCCL_DEBUG_SUBSYS=INIT,NET");
  verbs_hint(f, first);
  message_hint(f, cx->ls, first);
  setting_hint(f, cx->corr);
}
