/* SPDX-License-Identifier: Apache-2.0 */
/* The NCCL-shape table (--nccl-shape): one line per direction, size and
 * channel count with ours, the compared plugin's and their ratio, since
 * that grid is what a user of NCCL judges a network plugin by. It is a
 * view of the run's bandwidth rows, printed after them and kept in the
 * JSON as "nccl_shape". */
#include <math.h>
#include <stdio.h>

#include "bench/bench_report.h"
#include "common/size.h"
#include "tools/json_out.h"

/* The compared plugin's median GB/s of a row, or NAN without one. */
static double cmp_gbps(const struct row *r) {
  return r->cmp > 0 && r->variants[r->cmp].nrep ? r->variants[r->cmp].m_gbps : NAN;
}

/* Cells in the table's order: by direction, then size, then channels (the
 * rows come by comm count, since each count is connected on its own). */
static int cells(const struct report *rep, const struct row **out) {
  int n = 0;
  const struct opts *o = rep->o;
  for (int mode = MODE_UNI; mode <= MODE_BIDIR; mode++)
    for (int si = 0; si < o->nsizes; si++)
      for (int i = 0; i < rep->nrows; i++)
        if (rep->rows[i].mode == mode && rep->rows[i].size == o->sizes[si])
          out[n++] = &rep->rows[i];
  return n;
}

void report_shape(FILE *f, const struct report *rep) {
  if (!rep->o->is_nccl_shape) return;
  const char *who = rep->o->compare ? "compare" : "-";
  fprintf(f,
          "#\n# NCCL's shape: one connection per channel, %d in flight on each, every "
          "connection driven round-robin by one thread (NCCL's proxy)\n",
          rep->o->window);
  fprintf(f, "# ours and %s: GB/s received, medians of %d repetitions; bidir: both ways summed\n",
          who, rep->o->reps);
  fprintf(f, "# %-9s %9s %8s |%9s %9s %7s\n", "direction", "size", "channels", "ours",
          rep->o->compare ? "compare" : "-", "ratio");
  const struct row *rows[BENCH_MAX_ROWS];
  int n = cells(rep, rows);
  for (int i = 0; i < n; i++) {
    const struct row *r = rows[i];
    int mode = r->mode;
    char sz[24];
    size_format(sz, sizeof(sz), r->size);
    double c = cmp_gbps(r);
    fprintf(f, "  %-9s %9s %8d |%9.3f ", mode == MODE_UNI ? "one-way" : "both-ways", sz, r->ncomms,
            r->variants[0].m_gbps);
    if (isnan(c)) fprintf(f, "%9s %7s\n", "-", "-");
    else fprintf(f, "%9.3f %7.2f\n", c, r->c_gbps);
  }
}

void json_shape(struct json *j, const struct report *rep) {
  if (!rep->o->is_nccl_shape) return;
  json_arr(j, "nccl_shape");
  const struct row *rows[BENCH_MAX_ROWS];
  int n = cells(rep, rows);
  for (int i = 0; i < n; i++) {
    const struct row *r = rows[i];
    int mode = r->mode;
    double c = cmp_gbps(r);
    json_obj(j, NULL);
    json_str(j, "direction", mode == MODE_UNI ? "one-way" : "both-ways");
    json_int(j, "size", (long long)r->size);
    json_int(j, "channels", r->ncomms);
    json_int(j, "in_flight", r->window);
    json_sig(j, "ours_gbps", r->variants[0].m_gbps);
    json_sig(j, "compare_gbps", c);
    json_sig(j, "ratio", isnan(c) ? NAN : r->c_gbps);
    json_close_obj(j);
  }
  json_close_arr(j);
}
