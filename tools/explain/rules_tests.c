/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-tests output (all_reduce_perf and its siblings), the tool people run
 * beside NCCL: its table rows ("size count type redop root time algbw busbw
 * #wrong" out of place, then in place), its summary ("# Out of bounds
 * values : N OK|FAILED", "# Avg bus bandwidth : X") and its own failures
 * ("Test NCCL failure", "Test CUDA failure", read by the cuda and other
 * rules). A row or summary with wrong values is a failure; a healthy table
 * is not, and the report states its bus bandwidth. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/explain/rules.h"

/* The words of a row: two integers (bytes, elements), the type, the
 * reduction, the root, then two groups of time, algbw, busbw, #wrong. */
bool nccltests_row(const char *t, struct nt_row *row) {
  char w[14][32];
  int n = 0;
  const char *p = t;
  while (*p == ' ' || *p == '\t') p++;
  /* a launcher's prefix: "[1,0]<stdout>:", "[rank0]:", "91:" */
  const char *colon = strchr(p, ':');
  if (colon && (colon[1] == ' ' || colon[1] == '\t') && colon - p < 40 &&
      (*p == '[' || isdigit((unsigned char)*p)) && !memchr(p, ' ', (size_t)(colon - p)))
    p = colon + 1;
  while (*p == ' ' || *p == '\t') p++;
  if (!isdigit((unsigned char)*p)) return false; /* most lines: not a row, no tokens read */
  while (n < 14) {
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) break;
    size_t k = text_token(p, "", w[n], sizeof(w[n]));
    if (!k) break;
    p += k;
    n++;
  }
  while (*p == ' ' || *p == '\t') p++;
  if (n < 9 || *p) return false;
  for (int i = 0; i < 2; i++)
    for (const char *c = w[i]; *c; c++)
      if (!isdigit((unsigned char)*c)) return false;
  if (!isalpha((unsigned char)w[2][0]) || !isalpha((unsigned char)w[3][0])) return false;
  memset(row, 0, sizeof(*row));
  row->bytes = strtod(w[0], NULL);
  /* some collectives print no root column: the groups then start one earlier */
  int g = strchr("-0123456789", w[4][0]) && n >= 13 ? 5 : 4;
  if (n < g + 4) return false;
  for (int k = 0; k < 2 && g + 4 * k + 3 < n; k++) {
    row->busbw[k] = strtod(w[g + 4 * k + 2], NULL);
    const char *wr = w[g + 4 * k + 3];
    if (isdigit((unsigned char)wr[0])) row->wrong += strtol(wr, NULL, 10);
  }
  return true;
}

/* "# Out of bounds values : 248 FAILED", "Out of bounds values: 50 FAILED" */
static bool oob_count(const char *t, long *n) {
  const char *p = text_after(t, "Out of bounds values");
  if (!p) return false;
  while (*p == ' ' || *p == ':') p++;
  return text_long(p, n);
}

static bool is_summary_line(const char *t) {
  return strstr(t, "Out of bounds values") || strstr(t, "Avg bus bandwidth");
}

/* nccl-tests' header: "# nThread 1 nGpus 8 minBytes 8 maxBytes ...", "#  Rank  0
 * Group  0 Pid 1234 on host device  0 [0x1b] NVIDIA H100", the table's
 * column names. */
static bool is_header_line(const char *t) {
  return (strstr(t, "nThread ") && strstr(t, "nGpus ") && strstr(t, "minBytes")) ||
         (strstr(t, " Group ") && strstr(t, " Pid ") && strstr(t, " device ") &&
          strstr(t, "Rank")) ||
         (strstr(t, "redop") && strstr(t, "busbw")) || strstr(t, "out-of-place");
}

bool nccltests_relevant(const char *t) {
  struct nt_row row;
  return is_summary_line(t) || is_header_line(t) || nccltests_row(t, &row);
}

bool nccltests_match(const struct rec *r) {
  long n = 0;
  struct nt_row row;
  if (oob_count(r->raw, &n)) return n > 0 || strstr(r->raw, "FAILED");
  return r->level == REC_TEXT && nccltests_row(r->text, &row) && row.wrong > 0;
}

void nccltests_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *f = finding_new(cx->out, "nccl-tests", CONF_LOW);
  if (!f) return;
  long oob = 0, rows = 0, wrong = 0;
  double first_bytes = -1;
  for (size_t i = 0; i < h->n; i++) {
    struct nt_row row;
    long n = 0;
    if (oob_count(h->v[i]->raw, &n)) oob = n > oob ? n : oob;
    else if (nccltests_row(h->v[i]->text, &row)) {
      rows++, wrong += row.wrong;
      if (first_bytes < 0) first_bytes = row.bytes;
    }
    finding_evidence(f, h->v[i]);
  }
  char what[200];
  if (rows)
    snprintf(what, sizeof(what), "%ld wrong value%s in %ld row%s of its table, first at %.0f bytes",
             wrong, wrong == 1 ? "" : "s", rows, rows == 1 ? "" : "s", first_bytes);
  else snprintf(what, sizeof(what), "%ld out-of-bounds value%s", oob, oob == 1 ? "" : "s");
  finding_cause(
    f,
    "no confident cause: nccl-tests checked the results and found %s (\"Out of bounds values\" FAILED): the collective delivered wrong data, a failure even when the bandwidth looks normal; on one host this is most often GPU peer-to-peer over PCIe broken by ACS or the IOMMU, or GPUs NCCL's release does not know",
    what);
  finding_fix(
    f,
    "rerun with NCCL_P2P_DISABLE=1, then NCCL_SHM_DISABLE=1, to find the path that corrupts (if P2P: disable ACS on the PCIe switches, or run with iommu=pt); check the GPUs' memory errors (nvidia-smi -q -d ECC); use an NCCL and nccl-tests built for these GPUs and the same on every host");
}

/* The healthy table's summary, for the report: rows, wrong values and the
 * average bus bandwidth the test printed (the last one in the input). */
bool nccltests_summary(const struct logset *ls, struct nt_summary *s) {
  memset(s, 0, sizeof(*s));
  s->avg_busbw = -1;
  for (size_t i = 0; i < ls->nrecs; i++) {
    const struct rec *r = &ls->recs[i];
    struct nt_row row;
    long n;
    const char *p = strstr(r->raw, "Avg bus bandwidth");
    if (p && (p = strchr(p, ':'))) s->avg_busbw = strtod(p + 1, NULL), s->has = true;
    else if (oob_count(r->raw, &n)) s->wrong += n, s->has = true;
    else if (r->level == REC_TEXT && nccltests_row(r->text, &row)) {
      s->rows++, s->wrong += row.wrong, s->has = true;
      if (row.busbw[0] > s->max_busbw) s->max_busbw = row.busbw[0];
      if (row.busbw[1] > s->max_busbw) s->max_busbw = row.busbw[1];
    }
  }
  return s->has;
}
