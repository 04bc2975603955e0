/* SPDX-License-Identifier: Apache-2.0 */
/* nccl_e2e: all_reduce bus bandwidth, from bw_min to bw_max bytes, doubling.
 * Prints one "BW ..." line per size for the runner's table; every timed
 * result is also checked element by element. */
#include "e2e.h"

#define BW_SEED 1000

/* Iterations for one size: the byte budget, within the iteration bounds. */
static long bw_iters(const struct opts *o, size_t bytes) {
  long iters = (long)(o->bw_budget / bytes);
  if (iters < o->bw_min_iters) iters = o->bw_min_iters;
  if (iters > o->bw_max_iters) iters = o->bw_max_iters;
  return iters;
}

/* Warm-up, then `iters` timed all_reduces; *dt gets seconds per iteration.
 * Returns nonzero when a call failed or the stream did not finish. */
static int bw_time(struct rank_state *s, size_t count, long iters, const char *name, double *dt) {
  int fail = 0;
  watchdog_arm(name, 4 * s->o->timeout_s);
  for (int w = 0; w < s->o->warmup && !fail; w++)
    fail = ncclAllReduce(s->dsend, s->drecv, count, ncclFloat, ncclSum, s->comm, s->stream) !=
           ncclSuccess;
  /* Line both ranks up before the clock starts: a tiny all_reduce. */
  fail = fail || ncclAllReduce(s->dsend, s->drecv, 1, ncclFloat, ncclSum, s->comm, s->stream) !=
                   ncclSuccess;
  fail = fail || wait_stream(s, name);
  double t0 = now_s();
  for (long it = 0; it < iters && !fail; it++)
    fail = ncclAllReduce(s->dsend, s->drecv, count, ncclFloat, ncclSum, s->comm, s->stream) !=
           ncclSuccess;
  fail = fail || wait_stream(s, name);
  *dt = (now_s() - t0) / (double)iters;
  watchdog_disarm();
  return fail;
}

/* Times one size, checks its result and reports both. `factor` turns
 * algorithm bandwidth into bus bandwidth. */
static void bw_size(struct rank_state *s, size_t bytes, double factor) {
  char name[160], sz[32];
  size_str(bytes, sz, sizeof(sz));
  size_t count = bytes / sizeof(float);
  long iters = bw_iters(s->o, bytes);
  snprintf(name, sizeof(name), "all_reduce float sum %s timed (%ld iterations), result correct", sz,
           iters);
  if (s->dead) {
    tap_skip(s, name);
    return;
  }
  double dt;
  if (bw_time(s, count, iters, name, &dt)) {
    s->dead = 1; /* later sizes would only hang */
    tap_result(s, 0, name);
    printf("# %s: %s\n", name, ncclGetLastError(s->comm));
    return;
  }
  struct verdict v = {0};
  if (cudaMemcpy(s->hrecv, s->drecv, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
    tap_result(s, 0, name);
    return;
  }
  check_float_sum(&v, (const float *)s->hrecv, count, s->o->nranks, BW_SEED, 0);
  double algbw = (double)bytes / dt / 1e9;
  printf("BW label=%s bytes=%zu iters=%ld time_us=%.1f algbw_gbs=%.3f busbw_gbs=%.3f\n",
         s->o->label ? s->o->label : "-", bytes, iters, dt * 1e6, algbw, algbw * factor);
  tap_result(s, v.bad == 0, name);
  print_verdict(&v, count);
}

void run_bw(struct rank_state *s) {
  const int n = s->o->nranks;
  const double factor = 2.0 * (n - 1) / n; /* all_reduce: bus bytes per algorithm byte */
  /* The input depends on the element index only, so one fill serves every size. */
  fill_float((float *)s->hsend, s->o->bw_max / sizeof(float), s->o->rank, BW_SEED, 0);
  if (s->o->bw_max &&
      cudaMemcpy(s->dsend, s->hsend, s->o->bw_max, cudaMemcpyHostToDevice) != cudaSuccess) {
    tap_result(s, 0, "bandwidth: upload of the all_reduce input");
    return;
  }
  printf("# all_reduce bus bandwidth (%s), %d ranks: busbw = algbw * 2(n-1)/n\n",
         s->o->label ? s->o->label : "unlabelled", n);
  for (size_t bytes = s->o->bw_min; bytes && bytes <= s->o->bw_max; bytes *= 2)
    bw_size(s, bytes, factor);
}
