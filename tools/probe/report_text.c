/* SPDX-License-Identifier: Apache-2.0 */
/* The report for people: the hosts, the pair matrix (GB/s from row to
 * column, or the short cause), then the problems, errors first, each with
 * its fix. */
#include <stdio.h>
#include <string.h>

#include "common/ncclver.h"
#include "common/size.h"
#include "tools/probe/probe_report.h"

#define MATRIX_MAX_HOSTS 24 /* above, only the failed and slow pairs are listed */

void probe_report_nccl_version(const struct probe_facts *f, char *buf, size_t cap) {
  if (f->nccl_code) nccl_version_str(f->nccl_code, buf, cap);
  else snprintf(buf, cap, "none found");
}

const char *probe_report_rank_state(const struct probe_run *r, int rank) {
  if (!r->ranks[rank].arrived) return "never arrived";
  if (r->ranks[rank].dead) return "gone";
  if (!r->facts[rank].host[0]) return "no facts";
  return "";
}

static void hosts_table(FILE *f, const struct probe_run *r) {
  fprintf(f, "\nhosts\n  %-4s %-18s %-10s %-8s %-9s %-26s %-5s %s\n", "rank", "host", "NCCL",
          "plugin", "transport", "devices", "MTU", "socket interface");
  for (int k = 0; k < r->world; k++) {
    const struct probe_facts *x = &r->facts[k];
    const char *state = probe_report_rank_state(r, k);
    if (!x->host[0]) {
      fprintf(f, "  %-4d %-18s %s\n", k, "?", state);
      continue;
    }
    char nv[32], devs[128] = "";
    probe_report_nccl_version(x, nv, sizeof(nv));
    size_t o = 0;
    for (int d = 0; d < x->ndev && o < sizeof(devs); d++)
      o += (size_t)snprintf(devs + o, sizeof(devs) - o, "%s%s", d ? "," : "", x->devs[d].name);
    if (!x->ndev) snprintf(devs, sizeof(devs), "none");
    char mtu[16] = "?";
    if (x->sock_mtu > 0) snprintf(mtu, sizeof(mtu), "%d", x->sock_mtu);
    fprintf(f, "  %-4d %-18s %-10s %-8s %-9s %-26s %-5s %s%s%s\n", k, x->host, nv,
            x->plugin_version[0] ? x->plugin_version
            : x->plugin_err[0]   ? "missing"
                                 : "?",
            x->transport, devs, mtu, x->sock_ifs[0] ? x->sock_ifs : "none", state[0] ? "  " : "",
            state);
  }
}

/* The cell of src -> dst: every device's result, the worst one shown. */
static void cell(const struct probe_run *r, int src, int dst, char *buf, size_t cap) {
  const struct probe_pair *worst = NULL;
  double min_gbps = 0;
  for (int i = 0; i < r->npair; i++) {
    const struct probe_pair *p = &r->pairs[i];
    if (p->src != src || p->dst != dst) continue;
    if (!p->ok) {
      if (!worst || worst->ok) worst = p;
    } else if (!worst || (worst->ok && p->gbps < min_gbps)) {
      worst = p;
      min_gbps = p->gbps;
    }
  }
  if (!worst) snprintf(buf, cap, "-");
  else if (worst->ok)
    snprintf(buf, cap, "\xe2\x9c\x93 %.2f%s", worst->gbps, worst->slow ? " slow" : "");
  else snprintf(buf, cap, "\xe2\x9c\x97 %s", worst->cause);
}

static void pair_matrix(FILE *f, const struct probe_run *r) {
  char each[32];
  fprintf(f, "\npairs: %s, %d round%s, %s each way, GB/s from row to column\n", r->pairs_mode,
          r->nrounds, r->nrounds == 1 ? "" : "s", size_format(each, sizeof(each), r->opts->bytes));
  if (r->nhost > MATRIX_MAX_HOSTS) {
    int ok = 0, bad = 0;
    for (int i = 0; i < r->npair; i++) r->pairs[i].ok ? ok++ : bad++;
    fprintf(f, "  %d passed, %d failed or not tested (the problems below list them)\n", ok, bad);
    return;
  }
  fprintf(f, "  %-18s", "");
  for (int c = 0; c < r->nhost; c++) fprintf(f, " %-16.16s", r->facts[r->host_rank[c]].host);
  fputc('\n', f);
  for (int row = 0; row < r->nhost; row++) {
    fprintf(f, "  %-18.18s", r->facts[r->host_rank[row]].host);
    for (int c = 0; c < r->nhost; c++) {
      char text[48];
      if (row == c) snprintf(text, sizeof(text), "-");
      else cell(r, r->host_rank[row], r->host_rank[c], text, sizeof(text));
      /* UTF-8 marks take 3 bytes and one column. */
      int pad = 16 + (text[0] == '\xe2' ? 2 : 0);
      fprintf(f, " %-*s", pad, text);
    }
    fputc('\n', f);
  }
}

static void latency_line(FILE *f, const struct probe_run *r) {
  double lo = 0, hi = 0;
  int n = 0;
  for (int i = 0; i < r->npair; i++) {
    const struct probe_pair *p = &r->pairs[i];
    if (!p->ok || p->lat_us <= 0) continue;
    if (!n || p->lat_us < lo) lo = p->lat_us;
    if (!n || p->lat_us > hi) hi = p->lat_us;
    n++;
  }
  if (n) fprintf(f, "  latency (half a round trip of 8 bytes): %.1f to %.1f us\n", lo, hi);
}

static void problems(FILE *f, const struct probe_run *r) {
  if (!r->nproblem) {
    fprintf(f, "\nno problems found\n");
    return;
  }
  fprintf(f, "\nproblems\n");
  for (int sev = SEV_ERROR; sev >= SEV_NOTE; sev--)
    for (int i = 0; i < r->nproblem; i++) {
      const struct probe_problem *p = &r->problems[i];
      if ((int)p->sev != sev) continue;
      fprintf(f, "  %s: ", probe_sev_name(p->sev));
      for (const char *s = p->text; *s; s++) {
        fputc(*s, f);
        if (*s == '\n') fputs("    ", f);
      }
      fputs("\n    fix: ", f);
      for (const char *s = p->fix; *s; s++) {
        fputc(*s, f);
        if (*s == '\n') fputs("         ", f);
      }
      fputc('\n', f);
    }
}

void probe_report_text(FILE *f, const struct probe_run *r, int exit_status) {
  int errors = 0, warnings = 0;
  for (int i = 0; i < r->nproblem; i++) {
    errors += r->problems[i].sev == SEV_ERROR;
    warnings += r->problems[i].sev == SEV_WARNING;
  }
  int came = 0;
  for (int k = 0; k < r->world; k++) came += r->ranks[k].arrived;
  char ranks[80];
  if (came == r->world)
    snprintf(ranks, sizeof(ranks), "%d rank%s", r->world, r->world == 1 ? "" : "s");
  else
    snprintf(ranks, sizeof(ranks), "%d of %d ranks (%d never arrived)", came, r->world,
             r->world - came);
  fprintf(f, "nccl-net-diag probe: %s on %d host%s (%s), rendezvous %s, %.1f s%s\n", ranks,
          r->nhost, r->nhost == 1 ? "" : "s", r->launcher, r->rendezvous, r->elapsed_s,
          r->timed_out ? " (stopped by --timeout)" : "");
  hosts_table(f, r);
  pair_matrix(f, r);
  latency_line(f, r);
  problems(f, r);
  fprintf(f, "\nresult: %s (%d error%s, %d warning%s), exit status %d\n",
          exit_status ? "PROBLEMS FOUND" : "OK", errors, errors == 1 ? "" : "s", warnings,
          warnings == 1 ? "" : "s", exit_status);
}
