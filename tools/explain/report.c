/* SPDX-License-Identifier: Apache-2.0 */
/* Findings as text (what a user of a 16-node job reads: the cause, the fix
 * with its export lines, the hosts, the lines that show it) and as JSON
 * ({schema, version, input, findings}: what was read, the NCCL versions named and the lines
 * not read; each finding {rule, confidence, cause, fix, exports, hosts,
 * evidence}). Log
 * lines are untrusted: control bytes never reach the terminal, and the JSON
 * stays valid UTF-8. */
#include <string.h>

#include "common/strutil.h"
#include "common/version.h"
#include "tools/explain/correlate.h"
#include "tools/explain/explain.h"
#include "tools/explain/rules.h"
#include "tools/json_out.h"
#include "tools/textwrap.h"

static const char *conf_name(enum confidence c) {
  return c == CONF_HIGH ? "high" : c == CONF_MEDIUM ? "medium" : "low";
}

/* Words wrapped at 100 columns; continuation lines indented. */
static void wrap(FILE *out, const char *lead, int indent, const char *text) {
  char clean[2400];
  text_clean(text, clean, sizeof(clean));
  int col = fprintf(out, "%s", lead);
  const char *p = clean;
  while (*p) {
    size_t n = strcspn(p, " ");
    if (col > indent && col + (int)n + 1 > 100) col = fprintf(out, "\n%*s", indent, "") - 1;
    else if (col > indent) col += fprintf(out, " ");
    col += fprintf(out, "%.*s", (int)n, p);
    p += n;
    while (*p == ' ') p++;
  }
  fprintf(out, "\n");
}

/* --- what the input showed ------------------------------------------ */

#define VERSIONS_MAX 8

struct versions {
  int n;
  char v[VERSIONS_MAX][24];
};

static void version_add(struct versions *vs, const char *p) {
  char v[24];
  size_t n = 0;
  while (n + 1 < sizeof(v) && ((p[n] >= '0' && p[n] <= '9') || p[n] == '.')) v[n] = p[n], n++;
  while (n && v[n - 1] == '.') n--;
  v[n] = 0;
  if (!strchr(v, '.')) return; /* "2.19.3", not a stray number */
  for (int i = 0; i < vs->n; i++)
    if (!strcmp(vs->v[i], v)) return;
  if (vs->n < VERSIONS_MAX) snprintf(vs->v[vs->n++], sizeof(vs->v[0]), "%s", v);
}

/* Every NCCL version the input names: "NCCL version 2.19.3+cuda12.3" lines
 * (any host, or none), and the versions the hosts' lines gave. */
static void input_versions(const struct logset *ls, const struct corr *c, struct versions *vs) {
  vs->n = 0;
  for (int i = 0; i < c->nhosts; i++)
    if (c->hosts[i].version[0]) version_add(vs, c->hosts[i].version);
  for (size_t i = 0; i < ls->nrecs; i++) {
    const char *p = strstr(ls->recs[i].raw, "NCCL version ");
    if (p) version_add(vs, p + strlen("NCCL version "));
  }
}

static const char *file_name(const struct logset *ls, int file) {
  return file >= 0 && file < ls->nfiles ? ls->files[file].name : "?";
}

static void text_input(FILE *out, const struct logset *ls, const struct corr *c) {
  struct versions vs;
  input_versions(ls, c, &vs);
  fprintf(out, "NCCL version%s: ", vs.n == 1 ? "" : "s");
  if (!vs.n) fprintf(out, "none named in the input");
  for (int i = 0; i < vs.n; i++) fprintf(out, "%s%s", i ? ", " : "", vs.v[i]);
  fprintf(out, "\n");
  if (!ls->nunread) return;
  char clean[200];
  text_clean(ls->unread_first, clean, sizeof(clean));
  fprintf(
    out,
    "not read: %ld line%s NCCL INFO or WARN in a form this tool does not know; first: %s:%d: %s\n",
    ls->nunread, ls->nunread == 1 ? " names" : "s name", file_name(ls, ls->unread_file),
    ls->unread_lineno, clean);
}

static void text_summary(FILE *out, const struct logset *ls, const struct corr *c) {
  long lines = 0;
  for (int i = 0; i < ls->nfiles; i++) lines += ls->files[i].nlines;
  fprintf(out, "nccl-net-diag explain: %d file%s, %ld lines, %d host%s", ls->nfiles,
          ls->nfiles == 1 ? "" : "s", lines, c->nhosts, c->nhosts == 1 ? "" : "s");
  char clean[EXPLAIN_HOST_MAX * 2];
  for (int i = 0; i < c->nhosts && i < 8; i++) {
    text_clean(c->hosts[i].name, clean, sizeof(clean));
    fprintf(out, "%s%s", i ? ", " : " (", clean);
  }
  if (c->nhosts > 8) fprintf(out, " and %d more", c->nhosts - 8);
  fprintf(out, "%s\n", c->nhosts ? ")" : "");
  if (ls->is_capped)
    fprintf(out,
            "note: the input is larger than this tool keeps in memory; its end was not read\n");
  text_input(out, ls, c);
}

static void text_finding(FILE *out, const struct logset *ls, int n, const struct finding *f,
                         bool all) {
  char lead[64], where[300], clean[600];
  snprintf(lead, sizeof(lead), "%d. [%s]", n,
           f->conf == CONF_LOW ? "no confident cause" : conf_name(f->conf));
  const char *cause = f->cause;
  if (f->conf == CONF_LOW && !strncmp(cause, "no confident cause: ", 20)) cause += 20;
  fprintf(out, "\n%s\n", lead);
  wrap(out, f->conf == CONF_LOW ? "   known: " : "   cause: ", 10, cause);
  wrap(out, f->conf == CONF_LOW ? "   next:  " : "   fix:   ", 10, f->fix);
  for (int i = 0; i < f->nexports; i++) {
    text_clean(f->exports[i], clean, sizeof(clean));
    fprintf(out, "          export %s\n", clean);
  }
  if (f->nhosts) {
    char hosts[FINDING_HOSTS_MAX * (EXPLAIN_HOST_MAX + 2) + 32] = "";
    for (int i = 0; i < f->nhosts; i++)
      snprintf(hosts + strlen(hosts), sizeof(hosts) - strlen(hosts), "%s%s", i ? ", " : "",
               f->hosts[i]);
    if (f->nhosts_more)
      snprintf(hosts + strlen(hosts), sizeof(hosts) - strlen(hosts), " and %d more",
               f->nhosts_more);
    wrap(out, "   hosts: ", 10, hosts);
  }
  fprintf(out, "   evidence:\n");
  size_t shown = all ? f->ncovered : (size_t)f->nev;
  for (size_t i = 0; i < shown; i++) {
    const struct rec *r = all ? f->covered[i] : f->ev[i];
    rec_where(ls, r, where, sizeof(where));
    text_clean(r->raw, clean, sizeof(clean));
    fprintf(out, "     %s: %s\n", where, clean);
  }
  if (!all && f->nev_more)
    fprintf(out, "     (and %ld more line%s; -v quotes them all)\n", f->nev_more,
            f->nev_more == 1 ? "" : "s");
}

/* A healthy nccl-tests run: what it measured. */
static void text_nccltests(FILE *out, const struct logset *ls) {
  struct nt_summary s;
  if (!nccltests_summary(ls, &s)) return;
  fprintf(out, "nccl-tests: %ld row%s, %ld wrong value%s", s.rows, s.rows == 1 ? "" : "s", s.wrong,
          s.wrong == 1 ? "" : "s");
  if (s.avg_busbw >= 0) fprintf(out, "; average bus bandwidth %.2f GB/s", s.avg_busbw);
  if (s.rows) fprintf(out, "; highest bus bandwidth of a row %.2f GB/s", s.max_busbw);
  struct nt_link l;
  if (s.rows && nccltests_link(ls, &l)) {
    double pct = 100.0 * s.max_busbw / l.gbs;
    fprintf(out, "; the links: %.*f GB/s a host (%d %s link%s), the highest row at %.0f%% of them",
            l.gbs < 10 ? 1 : 0, l.gbs, l.links, l.is_ib ? "IB" : "socket", l.links == 1 ? "" : "s",
            pct);
    if (pct < 60)
      fprintf(out, " (healthy, but well below the links: %s)",
              l.is_ib ? "check GPU Direct RDMA, NCCL_IB_HCA and the GPU-NIC PCIe placement"
                      : "try more sockets per connection (NCCL_SOCKET_NTHREADS, "
                        "NCCL_NSOCKS_PERTHREAD) and check the interface's MTU and the CPU load");
  }
  fprintf(out, "\n");
}

static void text_report(FILE *out, const struct logset *ls, const struct corr *c,
                        const struct findings *fs, bool all_evidence) {
  text_summary(out, ls, c);
  if (!fs->n) {
    bool has_nccl = false;
    for (size_t i = 0; i < ls->nrecs && !has_nccl; i++) has_nccl = explain_rec_known(&ls->recs[i]);
    fprintf(out, "%s\n",
            has_nccl ? "no problem found in these logs" : "no NCCL output found in the input");
    text_nccltests(out, ls);
    return;
  }
  int nconf = 0;
  for (int i = 0; i < fs->n; i++) nconf += fs->v[i]->conf != CONF_LOW;
  fprintf(out, "%d finding%s", fs->n, fs->n == 1 ? "" : "s");
  if (nconf < fs->n)
    fprintf(out, " (%d with no confident cause: what is known and what to run next)",
            fs->n - nconf);
  fprintf(out, "\n");
  for (int i = 0; i < fs->n; i++) text_finding(out, ls, i + 1, fs->v[i], all_evidence);
}

void report_text(FILE *out, const struct logset *ls, const struct corr *c,
                 const struct findings *fs, bool all_evidence) {
  struct text_wrap w;
  text_report(text_wrap_open(&w, out), ls, c, fs, all_evidence);
  text_wrap_close(&w);
}

/* --- JSON --------------------------------------------------------------- */

/* Lines quoted per finding; the rest are counted in more_evidence. */
#define JSON_EVIDENCE_MAX 50

static void json_finding(struct json *j, const struct logset *ls, const struct finding *f) {
  json_obj(j, NULL);
  json_str(j, "rule", f->rule);
  json_str(j, "confidence", conf_name(f->conf));
  json_bool(j, "confident", f->conf != CONF_LOW);
  json_str(j, "cause", f->cause);
  json_str(j, "fix", f->fix);
  json_arr(j, "exports");
  char buf[200];
  for (int i = 0; i < f->nexports; i++) {
    snprintf(buf, sizeof(buf), "export %s", f->exports[i]);
    json_str(j, NULL, buf);
  }
  json_close_arr(j);
  json_arr(j, "hosts");
  for (int i = 0; i < f->nhosts; i++) json_str(j, NULL, f->hosts[i]);
  json_close_arr(j);
  json_arr(j, "evidence");
  size_t n = f->ncovered < JSON_EVIDENCE_MAX ? f->ncovered : JSON_EVIDENCE_MAX;
  for (size_t i = 0; i < n; i++) {
    const struct rec *r = f->covered[i];
    json_obj(j, NULL);
    json_str(j, "file", r->file >= 0 && r->file < ls->nfiles ? ls->files[r->file].name : "?");
    json_int(j, "line", r->lineno);
    json_str(j, "host", r->host);
    json_str(j, "text", r->raw);
    json_close_obj(j);
  }
  json_close_arr(j);
  json_int(j, "more_evidence", (long long)(f->ncovered - n));
  json_close_obj(j);
}

static void json_input(struct json *j, const struct logset *ls, const struct corr *c) {
  long lines = 0;
  for (int i = 0; i < ls->nfiles; i++) lines += ls->files[i].nlines;
  json_obj(j, "input");
  json_int(j, "files", ls->nfiles);
  json_int(j, "lines", lines);
  json_arr(j, "hosts");
  for (int i = 0; i < c->nhosts; i++) json_str(j, NULL, c->hosts[i].name);
  json_close_arr(j);
  struct versions vs;
  input_versions(ls, c, &vs);
  json_arr(j, "nccl_versions");
  for (int i = 0; i < vs.n; i++) json_str(j, NULL, vs.v[i]);
  json_close_arr(j);
  struct nt_summary nt;
  if (!nccltests_summary(ls, &nt)) json_null(j, "nccl_tests");
  else {
    json_obj(j, "nccl_tests");
    json_int(j, "rows", nt.rows);
    json_int(j, "wrong", nt.wrong);
    if (nt.avg_busbw >= 0) json_num(j, "avg_busbw_gbs", nt.avg_busbw, 2);
    else json_null(j, "avg_busbw_gbs");
    json_num(j, "max_busbw_gbs", nt.max_busbw, 2);
    struct nt_link l;
    if (nt.rows && nccltests_link(ls, &l)) {
      json_num(j, "link_gbs", l.gbs, 2);
      json_num(j, "link_pct", 100.0 * nt.max_busbw / l.gbs, 1);
    } else {
      json_null(j, "link_gbs");
      json_null(j, "link_pct");
    }
    json_close_obj(j);
  }
  json_bool(j, "truncated", ls->is_capped);
  json_int(j, "unread_lines", ls->nunread);
  json_int(j, "stateless_lines", ls->ninert); /* counted, not kept: input_inert.c */
  if (!ls->nunread) json_null(j, "first_unread");
  else {
    json_obj(j, "first_unread");
    json_str(j, "file", file_name(ls, ls->unread_file));
    json_int(j, "line", ls->unread_lineno);
    json_str(j, "text", ls->unread_first);
    json_close_obj(j);
  }
  json_close_obj(j);
}

void report_json(FILE *out, const struct logset *ls, const struct corr *c,
                 const struct findings *fs) {
  struct json j;
  json_begin(&j, out);
  json_str(&j, "schema", "nccl-net-diag.explain/1");
  json_str(&j, "version", DIAG_VERSION);
  json_input(&j, ls, c);
  json_arr(&j, "findings");
  for (int i = 0; i < fs->n; i++) json_finding(&j, ls, fs->v[i]);
  json_close_arr(&j);
  json_end(&j);
}
