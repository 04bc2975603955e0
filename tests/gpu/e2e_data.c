/* SPDX-License-Identifier: Apache-2.0 */
/* nccl_e2e: the data each rank sends and the element-by-element checks.
 *
 * Every element is a pure function of (index, rank, case seed), so each
 * rank computes what every other rank sent. Reductions use small integers in
 * float, whose sums are exact, so the comparison can be exact too. */
#include "e2e.h"

void fill_float(float *p, size_t n, int rank, int seed, uint64_t first) {
  for (size_t i = 0; i < n; i++) p[i] = fval(first + i, rank, seed);
}

void fill_byte(uint8_t *p, size_t n, int rank, int seed) {
  for (size_t i = 0; i < n; i++) p[i] = bval(i, rank, seed);
}

void note_bad(struct verdict *v, size_t i, double got, double want) {
  if (v->bad < MAX_REPORTED_MISMATCHES) {
    v->first_bad[v->bad] = i;
    v->got[v->bad] = got;
    v->want[v->bad] = want;
  }
  v->bad++;
}

void print_verdict(const struct verdict *v, size_t n) {
  if (!v->bad) return;
  printf("#   %zu of %zu elements wrong\n", v->bad, n);
  for (size_t k = 0; k < v->bad && k < MAX_REPORTED_MISMATCHES; k++)
    printf("#   element %zu: got %g, expected %g\n", v->first_bad[k], v->got[k], v->want[k]);
}

/* A float sum over all ranks: element i must be the sum of every rank's
 * value at index first + i (first is nonzero for a rank's reduce_scatter
 * slice). */
void check_float_sum(struct verdict *v, const float *got, size_t count, int nranks, int seed,
                     uint64_t first) {
  for (size_t i = 0; i < count; i++) {
    float want = 0;
    for (int q = 0; q < nranks; q++) want += fval(first + i, q, seed);
    if (got[i] != want) note_bad(v, i, got[i], want);
  }
}

/* Bytes as rank `rank` sent them; mismatches are reported at report_base + i
 * (the offset of this block in the whole receive buffer). */
void check_bytes(struct verdict *v, const uint8_t *got, size_t count, int rank, int seed,
                 size_t report_base) {
  for (size_t i = 0; i < count; i++) {
    uint8_t want = bval(i, rank, seed);
    if (got[i] != want) note_bad(v, report_base + i, got[i], want);
  }
}
