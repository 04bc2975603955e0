/* SPDX-License-Identifier: Apache-2.0 */
/* nccl_e2e: declarations shared by the rank program's files (see nccl_e2e.c
 * for what the program does). */
#ifndef E2E_H
#define E2E_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#define EXIT_CHECKS 1
#define EXIT_USAGE 2
#define EXIT_NO_GPU 3
#define EXIT_SETUP 4
#define EXIT_HUNG 5

#define SENTINEL_BYTE 0xA5
#define MAX_SIZES 64
#define MAX_REPORTED_MISMATCHES 3

struct opts {
  int rank, nranks, device;
  const char *id_file, *hostid, *label;
  const char *checks;
  size_t sizes[MAX_SIZES];
  int nsizes;
  size_t bw_min, bw_max, bw_budget;
  int bw_min_iters, bw_max_iters, warmup;
  int timeout_s;
};

struct rank_state {
  const struct opts *o;
  ncclComm_t comm;
  cudaStream_t stream;
  void *dsend, *drecv;    /* device buffers, cap bytes each */
  uint8_t *hsend, *hrecv; /* host mirrors */
  size_t cap;
  int tap_n, tap_failed;
  int dead; /* NCCL stopped answering: skip the rest */
};

/* Element-by-element comparison results. */
struct verdict {
  size_t bad, first_bad[MAX_REPORTED_MISMATCHES];
  double got[MAX_REPORTED_MISMATCHES], want[MAX_REPORTED_MISMATCHES];
};

#define CUDA_OK(call, what)                                                                        \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      printf("# %s: %s: %s (%s)\n", (what), #call, cudaGetErrorName(e_), cudaGetErrorString(e_));  \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

#define NCCL_OK(s, call, what)                                                                     \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess && r_ != ncclInProgress) {                                               \
      printf("# %s: %s: %s (%s)\n", (what), #call, ncclGetErrorString(r_),                         \
             ncclGetLastError((s)->comm));                                                         \
      return -1;                                                                                   \
    }                                                                                              \
  } while (0)

/* ---- values (inline: the checks call them once per element) ---- */
static inline uint64_t mix(uint64_t i, int rank, int seed) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + (uint64_t)(rank + 1) * 0xD1B54A32D192ED03ull +
               (uint64_t)(seed + 1) * 0x94D049BB133111EBull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  return x;
}

/* Integers in [-127, 127]: any sum of up to 2^16 of them is exact in float. */
static inline float fval(uint64_t i, int rank, int seed) {
  return (float)((int)(mix(i, rank, seed) % 255) - 127);
}

static inline uint8_t bval(uint64_t i, int rank, int seed) {
  return (uint8_t)(mix(i, rank, seed) >> 24);
}

/* ---- data (e2e_data.c) ---- */
void fill_float(float *p, size_t n, int rank, int seed, uint64_t first);
void fill_byte(uint8_t *p, size_t n, int rank, int seed);
void note_bad(struct verdict *v, size_t i, double got, double want);
void print_verdict(const struct verdict *v, size_t n);
void check_float_sum(struct verdict *v, const float *got, size_t count, int nranks, int seed,
                     uint64_t first);
void check_bytes(struct verdict *v, const uint8_t *got, size_t count, int rank, int seed,
                 size_t report_base);

/* ---- reporting (e2e_report.c) ---- */
void tap_result(struct rank_state *s, int ok, const char *name);
void tap_skip(struct rank_state *s, const char *name);
void size_str(size_t b, char *buf, size_t cap);

/* ---- time limits (e2e_watchdog.c) ---- */
double now_s(void);
void watchdog_arm(const char *what, int seconds);
void watchdog_disarm(void);
int wait_stream(struct rank_state *s, const char *what);

/* ---- buffers (e2e_buffers.c) ---- */
int alloc_buffers(struct rank_state *s);
int upload(struct rank_state *s, size_t send_bytes, size_t recv_bytes);
int download(struct rank_state *s, size_t bytes);

/* ---- the checks and the timings (e2e_cases.c, e2e_bw.c) ---- */
void run_checks(struct rank_state *s);
void run_bw(struct rank_state *s);

/* ---- options (e2e_cli.c) ---- */
extern const char *const default_sizes;
extern const char *const all_checks;
void usage(FILE *f);
int parse_run(int argc, char **argv, struct opts *o);

/* ---- commands besides run (e2e_probe.c) ---- */
void version_str(int code, char *buf, size_t cap);
int cmd_probe(void);
int cmd_dlopen(const char *path);

/* ---- bootstrap: the unique id travels through a file (e2e_bootstrap.c) ---- */
int write_id(const char *path, const ncclUniqueId *id);
int read_id(const char *path, ncclUniqueId *id, int timeout_s);

#endif
