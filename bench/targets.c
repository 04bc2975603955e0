/* SPDX-License-Identifier: Apache-2.0 */
/* The README's targets, judged on the rows of this run: each verdict names
 * the worst ratio it saw and the row it saw it in, so a miss says where. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench_report.h"
#include "common/size.h"

enum { T_BIG, T_RATE, T_LAT, T_CPU, T_CMP_GBPS, T_CMP_LAT, T_SCALE };

static void where(char *out, size_t cap, const struct row *r) {
  char sz[24];
  size_format(sz, sizeof(sz), r->size);
  snprintf(out, cap, "%s %s, %d comm%s", mode_name[r->mode], sz, r->ncomms,
           r->ncomms > 1 ? "s" : "");
}

/* A ratio that must stay at or above (is_low) or at or below (!is_low) a line. */
static void see(struct verdict *v, double ratio, bool is_low, const struct row *r) {
  if (!(ratio > 0)) return; /* not measured */
  int worse = !v->is_seen || (is_low ? ratio < v->worst : ratio > v->worst);
  v->is_seen = true;
  if (worse) {
    v->worst = ratio;
    where(v->where, sizeof(v->where), r);
  }
}

/* The baseline ratio of the same mode and size at the fewest comms. */
static const struct row *fewest_comms(const struct report *rep, const struct row *r) {
  const struct row *f = NULL;
  for (int i = 0; i < rep->nrows; i++) {
    const struct row *o = &rep->rows[i];
    if (o->mode == r->mode && o->size == r->size && o->best > 0 && (!f || o->ncomms < f->ncomms))
      f = o;
  }
  return f;
}

static void judge_row(const struct report *rep, const struct row *r, struct verdict *v) {
  int bw = r->mode != MODE_LAT;
  if (r->best > 0) {
    if (bw && r->size >= (1 << 20)) see(&v[T_BIG], r->r_gbps, true, r);
    if (bw && r->size <= 4096) see(&v[T_RATE], r->r_gbps, true, r);
    if (!bw && r->size == 8) see(&v[T_LAT], r->r_p50, false, r);
    if (r->mode == MODE_UNI && r->size >= (1 << 20)) see(&v[T_CPU], r->r_cpu, false, r);
    const struct row *f = bw ? fewest_comms(rep, r) : NULL;
    if (f && f->ncomms < r->ncomms && f->r_gbps > 0)
      see(&v[T_SCALE], r->r_gbps / f->r_gbps, true, r);
  }
  if (r->cmp > 0 && bw) see(&v[T_CMP_GBPS], r->c_gbps, true, r);
  if (r->cmp > 0 && !bw && r->size == 8) see(&v[T_CMP_LAT], r->c_p50, false, r);
}

void targets_judge(const struct report *rep, struct verdict v[NTARGETS]) {
  static const struct {
    const char *name;
    double line;
    bool is_low;
  } t[NTARGETS] = {
    [T_BIG] = {"GB/s >= 0.9x baseline at >= 1 MiB (uni, bidir)", 0.9, true},
    [T_RATE] = {"message rate >= 0.5x baseline at 8 B - 4 KiB (uni, bidir)", 0.5, true},
    [T_LAT] = {"8-byte ping-pong p50 <= 1.05x baseline", 1.05, false},
    [T_CPU] = {"CPU s/GB <= 1.0x baseline (uni, >= 1 MiB)", 1.0, false},
    [T_CMP_GBPS] = {"GB/s >= 1.0x compare at every size", 1.0, true},
    [T_CMP_LAT] = {"8-byte p50 <= 1.0x compare", 1.0, false},
    [T_SCALE] = {"baseline ratio with more comms >= 0.9x the fewest comms' ratio", 0.9, true},
  };
  for (int i = 0; i < NTARGETS; i++) v[i] = (struct verdict){.name = t[i].name};
  for (int i = 0; i < rep->nrows; i++) judge_row(rep, &rep->rows[i], v);
  for (int i = 0; i < NTARGETS; i++)
    v[i].has_passed =
      v[i].is_seen && (t[i].is_low ? v[i].worst >= t[i].line : v[i].worst <= t[i].line);
}

/* How busy others kept the host while we measured: the noise floor. */
static void report_noise(FILE *f, const struct report *rep) {
  double all[BENCH_MAX_ROWS];
  double worst = 0;
  int n = 0;
  for (int i = 0; i < rep->nrows; i++) {
    const struct row *r = &rep->rows[i];
    double row_max = 0;
    int seen = 0;
    for (int v = 0; v < r->nvariant; v++)
      for (int k = 0; k < r->variants[v].nrep; k++)
        if (isfinite(r->variants[v].foreign[k]))
          row_max = fmax(row_max, r->variants[v].foreign[k]), seen = 1;
    if (!seen) continue;
    all[n++] = row_max;
    worst = fmax(worst, row_max);
  }
  if (n)
    fprintf(f,
            "# other load on the host while measuring: median row %.0f %%, worst %.0f %% of "
            "its CPUs%s\n",
            100 * median(all, n < 64 ? n : 64), 100 * worst,
            worst > 0.15 ? " (noisy: repeat when the host is quiet, or use --wait-quiet)" : "");
}

void report_targets(FILE *f, const struct report *rep) {
  struct verdict v[NTARGETS];
  targets_judge(rep, v);
  fprintf(f, "#\n");
  report_noise(f, rep);
  if (!rep->o->has_targets) return;
  for (int i = 0; i < NTARGETS; i++) {
    if (!v[i].is_seen) fprintf(f, "# target: %-64s not measured in this run\n", v[i].name);
    else
      fprintf(f, "# target: %-64s %s (worst ratio %.2f, %s)\n", v[i].name,
              v[i].has_passed ? "MET" : "MISSED", v[i].worst, v[i].where);
  }
}
