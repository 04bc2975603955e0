/* SPDX-License-Identifier: Apache-2.0 */
/* nccl_e2e: the correctness cases. Each collective runs over every size
 * with its own case seed, and every element of its result is checked on the
 * host against the value it must have. */
#include "e2e.h"

#include <string.h>

enum coll { ALLREDUCE, ALLREDUCE_INPLACE, ALLGATHER, REDUCESCATTER, BROADCAST, SENDRECV, NCOLL };
static const char *const coll_names[NCOLL] = {"allreduce",     "allreduce_inplace", "allgather",
                                              "reducescatter", "broadcast",         "sendrecv"};

/* One case: what it runs, its TAP name and what its check found. The name
 * is also what the watchdog prints, so it lives as long as the case. */
struct one_case {
  enum coll c;
  size_t bytes; /* the larger of the case's two buffers */
  int seed;
  char sz[32]; /* bytes, for the name */
  char name[160];
  struct verdict v;
  size_t checked; /* elements compared */
};

static int case_allreduce(struct rank_state *s, struct one_case *k) {
  const int r = s->o->rank;
  size_t count = k->bytes / sizeof(float);
  snprintf(k->name, sizeof(k->name), "%s float sum %s (%zu elements)", coll_names[k->c], k->sz,
           count);
  fill_float((float *)s->hsend, count, r, k->seed, 0);
  size_t b = count * sizeof(float);
  if (k->c == ALLREDUCE_INPLACE) {
    /* In place: the input goes straight into the receive buffer. */
    if (b) CUDA_OK(cudaMemcpy(s->drecv, s->hsend, b, cudaMemcpyHostToDevice), "upload");
    NCCL_OK(s, ncclAllReduce(s->drecv, s->drecv, count, ncclFloat, ncclSum, s->comm, s->stream),
            k->name);
  } else {
    if (upload(s, b, b)) return -1;
    NCCL_OK(s, ncclAllReduce(s->dsend, s->drecv, count, ncclFloat, ncclSum, s->comm, s->stream),
            k->name);
  }
  if (wait_stream(s, k->name) || download(s, b)) return -1;
  check_float_sum(&k->v, (const float *)s->hrecv, count, s->o->nranks, k->seed, 0);
  k->checked = count;
  return 0;
}

static int case_allgather(struct rank_state *s, struct one_case *k) {
  const int n = s->o->nranks, r = s->o->rank;
  size_t count = k->bytes / (size_t)n; /* bytes each rank contributes */
  snprintf(k->name, sizeof(k->name), "allgather uint8 %s (%zu per rank)", k->sz, count);
  fill_byte(s->hsend, count, r, k->seed);
  if (upload(s, count, count * n)) return -1;
  NCCL_OK(s, ncclAllGather(s->dsend, s->drecv, count, ncclUint8, s->comm, s->stream), k->name);
  if (wait_stream(s, k->name) || download(s, count * n)) return -1;
  for (int q = 0; q < n; q++)
    check_bytes(&k->v, s->hrecv + (size_t)q * count, count, q, k->seed, (size_t)q * count);
  k->checked = count * n;
  return 0;
}

static int case_reducescatter(struct rank_state *s, struct one_case *k) {
  const int n = s->o->nranks, r = s->o->rank;
  size_t count = k->bytes / (sizeof(float) * (size_t)n); /* elements each rank receives */
  snprintf(k->name, sizeof(k->name), "reducescatter float sum %s (%zu per rank)", k->sz, count);
  fill_float((float *)s->hsend, count * n, r, k->seed, 0);
  if (upload(s, count * n * sizeof(float), count * sizeof(float))) return -1;
  NCCL_OK(s, ncclReduceScatter(s->dsend, s->drecv, count, ncclFloat, ncclSum, s->comm, s->stream),
          k->name);
  if (wait_stream(s, k->name) || download(s, count * sizeof(float))) return -1;
  /* This rank's slice of the sum starts at element r * count. */
  check_float_sum(&k->v, (const float *)s->hrecv, count, n, k->seed, (size_t)r * count);
  k->checked = count;
  return 0;
}

static int case_broadcast(struct rank_state *s, struct one_case *k) {
  int root = k->seed % s->o->nranks; /* the seed alternates the root over the sizes */
  size_t count = k->bytes;
  snprintf(k->name, sizeof(k->name), "broadcast uint8 %s from rank %d", k->sz, root);
  fill_byte(s->hsend, count, s->o->rank, k->seed);
  if (upload(s, count, count)) return -1;
  NCCL_OK(s, ncclBroadcast(s->dsend, s->drecv, count, ncclUint8, root, s->comm, s->stream),
          k->name);
  if (wait_stream(s, k->name) || download(s, count)) return -1;
  check_bytes(&k->v, s->hrecv, count, root, k->seed, 0);
  k->checked = count;
  return 0;
}

/* Both directions at once: each rank sends to the next and receives from
 * the previous, in one group. */
static int case_sendrecv(struct rank_state *s, struct one_case *k) {
  const int n = s->o->nranks, r = s->o->rank;
  int to = (r + 1) % n, from = (r - 1 + n) % n;
  size_t count = k->bytes;
  snprintf(k->name, sizeof(k->name), "send/recv uint8 %s (to rank %d, from rank %d)", k->sz, to,
           from);
  fill_byte(s->hsend, count, r, k->seed);
  if (upload(s, count, count)) return -1;
  NCCL_OK(s, ncclGroupStart(), k->name);
  NCCL_OK(s, ncclSend(s->dsend, count, ncclUint8, to, s->comm, s->stream), k->name);
  NCCL_OK(s, ncclRecv(s->drecv, count, ncclUint8, from, s->comm, s->stream), k->name);
  NCCL_OK(s, ncclGroupEnd(), k->name);
  if (wait_stream(s, k->name) || download(s, count)) return -1;
  check_bytes(&k->v, s->hrecv, count, from, k->seed, 0);
  k->checked = count;
  return 0;
}

typedef int (*case_fn)(struct rank_state *s, struct one_case *k);
static const case_fn case_fns[NCOLL] = {case_allreduce,     case_allreduce, case_allgather,
                                        case_reducescatter, case_broadcast, case_sendrecv};

/* Runs one case and checks its result. Returns -1 when NCCL or CUDA failed
 * (the case is reported as failed), else the number of wrong elements. */
static long run_case(struct rank_state *s, struct one_case *k) {
  size_str(k->bytes, k->sz, sizeof(k->sz));
  if (k->c >= NCOLL || case_fns[k->c](s, k)) return -1;
  return (long)k->v.bad;
}

static int check_enabled(const char *list, const char *name) {
  size_t len = strlen(name);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t l = end ? (size_t)(end - p) : strlen(p);
    if ((l == len && !strncmp(p, name, l)) || (l == 3 && !strncmp(p, "all", 3))) return 1;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

static void run_one(struct rank_state *s, enum coll c, size_t bytes, int seed) {
  struct one_case k = {.c = c, .bytes = bytes, .seed = seed};
  snprintf(k.name, sizeof(k.name), "%s", coll_names[c]);
  if (s->dead) {
    char skipped[200];
    snprintf(skipped, sizeof(skipped), "%s %zu B", k.name, bytes);
    tap_skip(s, skipped);
    return;
  }
  watchdog_arm(k.name, 2 * s->o->timeout_s);
  long bad = run_case(s, &k);
  watchdog_disarm();
  if (bad < 0) s->dead = 1; /* NCCL or CUDA failed: later calls would only hang */
  tap_result(s, bad == 0, k.name);
  print_verdict(&k.v, k.checked);
}

void run_checks(struct rank_state *s) {
  int seed = 0;
  for (int c = 0; c < NCOLL; c++) {
    if (!check_enabled(s->o->checks, coll_names[c])) continue;
    for (int k = 0; k < s->o->nsizes; k++, seed++) run_one(s, (enum coll)c, s->o->sizes[k], seed);
  }
}
