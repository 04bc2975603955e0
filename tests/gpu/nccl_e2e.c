/* nccl_e2e: one rank of the real-NCCL end-to-end test (design test layer 6).
 *
 * Two of these processes share one GPU; tests/gpu/run.sh starts them with
 * different NCCL_HOSTID values so NCCL counts them as two hosts and every
 * byte between them crosses the network plugin (spec section 8). Each rank
 * runs the collectives over a list of sizes and checks every element of its
 * result on the host, then (optionally) times all_reduce for the bus
 * bandwidth table. Output is TAP ("ok N - ...") plus "BW ..." lines that the
 * runner turns into the table.
 *
 *   nccl_e2e probe            GPUs and versions; exit 3 when no GPU is usable
 *   nccl_e2e dlopen PLUGIN    load a net plugin as NCCL does (RTLD_NOW) and
 *                             list the ncclNetPlugin_vN symbols it exports
 *   nccl_e2e run --rank R --id-file F [options]   one rank (see usage())
 *
 * Data: every element is a pure function of (index, rank, case seed), so each
 * rank computes what every other rank sent. Reductions use small integers in
 * float, whose sums are exact; the receive buffer is pre-filled with a
 * sentinel so an element NCCL never wrote is caught too. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

static const char *const default_sizes =
  "0,1,3,4,8,100,1K,4099,64K,131073,1M,1048579,4M,16M,64M,256M";
static const char *const all_checks = "allreduce,allreduce_inplace,allgather,reducescatter,"
                                      "broadcast,sendrecv";

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
  void *dsend, *drecv;     /* device buffers, cap bytes each */
  uint8_t *hsend, *hrecv;  /* host mirrors */
  size_t cap;
  int tap_n, tap_failed;
  int dead;                /* NCCL stopped answering: skip the rest */
};

/* ---- data ---------------------------------------------------------------- */

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

static void fill_float(float *p, size_t n, int rank, int seed, uint64_t first) {
  for (size_t i = 0; i < n; i++) p[i] = fval(first + i, rank, seed);
}

static void fill_byte(uint8_t *p, size_t n, int rank, int seed) {
  for (size_t i = 0; i < n; i++) p[i] = bval(i, rank, seed);
}

/* ---- reporting ------------------------------------------------------------- */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void tap_result(struct rank_state *s, int ok, const char *name) {
  s->tap_n++;
  if (!ok) s->tap_failed++;
  printf("%sok %d - %s\n", ok ? "" : "not ", s->tap_n, name);
  fflush(stdout);
}

static void size_str(size_t b, char *buf, size_t cap) {
  if (b >= (1u << 30) && b % (1u << 30) == 0)
    snprintf(buf, cap, "%zu GiB", b >> 30);
  else if (b >= (1u << 20) && b % (1u << 20) == 0)
    snprintf(buf, cap, "%zu MiB", b >> 20);
  else if (b >= 1024 && b % 1024 == 0)
    snprintf(buf, cap, "%zu KiB", b >> 10);
  else
    snprintf(buf, cap, "%zu B", b);
}

/* Element-by-element comparison results. */
struct verdict {
  size_t bad, first_bad[MAX_REPORTED_MISMATCHES];
  double got[MAX_REPORTED_MISMATCHES], want[MAX_REPORTED_MISMATCHES];
};

static void note_bad(struct verdict *v, size_t i, double got, double want) {
  if (v->bad < MAX_REPORTED_MISMATCHES) {
    v->first_bad[v->bad] = i;
    v->got[v->bad] = got;
    v->want[v->bad] = want;
  }
  v->bad++;
}

static void print_verdict(const struct verdict *v, size_t n) {
  if (!v->bad) return;
  printf("#   %zu of %zu elements wrong\n", v->bad, n);
  for (size_t k = 0; k < v->bad && k < MAX_REPORTED_MISMATCHES; k++)
    printf("#   element %zu: got %g, expected %g\n", v->first_bad[k], v->got[k], v->want[k]);
}

/* ---- NCCL / CUDA plumbing -------------------------------------------------- */

/* A blocking NCCL call (comm init, the first collective that connects, the
 * destroy that closes) can hang forever on a plugin that never completes a
 * connection. The watchdog turns that into a TAP bail-out the runner reports. */
static const char *volatile watchdog_what = "";

static void watchdog_fire(int sig) {
  (void)sig;
  static const char pre[] = "Bail out! watchdog: ", post[] = " did not finish in time\n";
  const char *what = watchdog_what;
  ssize_t w = write(STDOUT_FILENO, pre, sizeof(pre) - 1);
  w = write(STDOUT_FILENO, what, strlen(what));
  w = write(STDOUT_FILENO, post, sizeof(post) - 1);
  (void)w;
  _exit(EXIT_HUNG);
}

static void watchdog_arm(const char *what, int seconds) {
  watchdog_what = what;
  signal(SIGALRM, watchdog_fire);
  alarm((unsigned)seconds);
}

static void watchdog_disarm(void) { alarm(0); }

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

/* Waits for the stream without trusting NCCL to ever finish: a plugin request
 * that never completes is a silent hang inside NCCL (spec 5.3), so poll the
 * stream and the communicator's async error, with a deadline. */
static int wait_stream(struct rank_state *s, const char *what) {
  double deadline = now_s() + s->o->timeout_s;
  struct timespec nap = {0, 20000};
  for (;;) {
    cudaError_t e = cudaStreamQuery(s->stream);
    if (e == cudaSuccess) return 0;
    if (e != cudaErrorNotReady) {
      printf("# %s: cudaStreamQuery: %s (%s)\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
      s->dead = 1;
      return -1;
    }
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(s->comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      printf("# %s: NCCL reports an asynchronous error: %s (%s)\n", what,
             ncclGetErrorString(async), ncclGetLastError(s->comm));
      s->dead = 1;
      return -1;
    }
    if (now_s() > deadline) {
      printf("# %s: not finished after %d s (NCCL_E2E timeout); the transfer hangs\n", what,
             s->o->timeout_s);
      s->dead = 1;
      return -1;
    }
    nanosleep(&nap, NULL);
  }
}

static int upload(struct rank_state *s, size_t send_bytes, size_t recv_bytes) {
  if (send_bytes)
    CUDA_OK(cudaMemcpy(s->dsend, s->hsend, send_bytes, cudaMemcpyHostToDevice), "upload");
  if (recv_bytes) CUDA_OK(cudaMemset(s->drecv, SENTINEL_BYTE, recv_bytes), "sentinel");
  return 0;
}

static int download(struct rank_state *s, size_t bytes) {
  if (bytes) CUDA_OK(cudaMemcpy(s->hrecv, s->drecv, bytes, cudaMemcpyDeviceToHost), "download");
  return 0;
}

/* ---- the collectives ------------------------------------------------------- */

enum coll { ALLREDUCE, ALLREDUCE_INPLACE, ALLGATHER, REDUCESCATTER, BROADCAST, SENDRECV, NCOLL };
static const char *const coll_names[NCOLL] = {"allreduce", "allreduce_inplace", "allgather",
                                              "reducescatter", "broadcast", "sendrecv"};

/* Runs one collective of `bytes` (the larger of its two buffers) with case
 * seed `seed` and checks the result. Returns -1 when NCCL failed (the case is
 * reported as failed), else the number of wrong elements. */
static long run_case(struct rank_state *s, enum coll c, size_t bytes, int seed, char *name,
                     size_t name_cap, struct verdict *vp, size_t *checked) {
  const int n = s->o->nranks, r = s->o->rank;
  char sz[32];
  size_str(bytes, sz, sizeof(sz));
  struct verdict v = {0};
  size_t count = 0;

  switch (c) {
  case ALLREDUCE:
  case ALLREDUCE_INPLACE: {
    count = bytes / sizeof(float);
    snprintf(name, name_cap, "%s float sum %s (%zu elements)", coll_names[c], sz, count);
    fill_float((float *)s->hsend, count, r, seed, 0);
    size_t b = count * sizeof(float);
    if (c == ALLREDUCE_INPLACE) {
      if (b) CUDA_OK(cudaMemcpy(s->drecv, s->hsend, b, cudaMemcpyHostToDevice), "upload");
      NCCL_OK(s, ncclAllReduce(s->drecv, s->drecv, count, ncclFloat, ncclSum, s->comm, s->stream),
              name);
    } else {
      if (upload(s, b, b)) return -1;
      NCCL_OK(s, ncclAllReduce(s->dsend, s->drecv, count, ncclFloat, ncclSum, s->comm, s->stream),
              name);
    }
    if (wait_stream(s, name) || download(s, b)) return -1;
    const float *got = (const float *)s->hrecv;
    for (size_t i = 0; i < count; i++) {
      float want = 0;
      for (int q = 0; q < n; q++) want += fval(i, q, seed);
      if (got[i] != want) note_bad(&v, i, got[i], want);
    }
    *checked = count;
    break;
  }
  case ALLGATHER: {
    count = bytes / (size_t)n; /* bytes each rank contributes */
    snprintf(name, name_cap, "allgather uint8 %s (%zu per rank)", sz, count);
    fill_byte(s->hsend, count, r, seed);
    if (upload(s, count, count * n)) return -1;
    NCCL_OK(s, ncclAllGather(s->dsend, s->drecv, count, ncclUint8, s->comm, s->stream), name);
    if (wait_stream(s, name) || download(s, count * n)) return -1;
    for (int q = 0; q < n; q++)
      for (size_t i = 0; i < count; i++) {
        uint8_t want = bval(i, q, seed), got = s->hrecv[(size_t)q * count + i];
        if (got != want) note_bad(&v, (size_t)q * count + i, got, want);
      }
    *checked = count * n;
    break;
  }
  case REDUCESCATTER: {
    count = bytes / (sizeof(float) * (size_t)n); /* elements each rank receives */
    snprintf(name, name_cap, "reducescatter float sum %s (%zu per rank)", sz, count);
    fill_float((float *)s->hsend, count * n, r, seed, 0);
    if (upload(s, count * n * sizeof(float), count * sizeof(float))) return -1;
    NCCL_OK(s,
            ncclReduceScatter(s->dsend, s->drecv, count, ncclFloat, ncclSum, s->comm, s->stream),
            name);
    if (wait_stream(s, name) || download(s, count * sizeof(float))) return -1;
    const float *got = (const float *)s->hrecv;
    for (size_t i = 0; i < count; i++) {
      float want = 0;
      for (int q = 0; q < n; q++) want += fval((size_t)r * count + i, q, seed);
      if (got[i] != want) note_bad(&v, i, got[i], want);
    }
    *checked = count;
    break;
  }
  case BROADCAST: {
    int root = seed % n;
    count = bytes;
    snprintf(name, name_cap, "broadcast uint8 %s from rank %d", sz, root);
    fill_byte(s->hsend, count, r, seed);
    if (upload(s, count, count)) return -1;
    NCCL_OK(s,
            ncclBroadcast(s->dsend, s->drecv, count, ncclUint8, root, s->comm, s->stream), name);
    if (wait_stream(s, name) || download(s, count)) return -1;
    for (size_t i = 0; i < count; i++) {
      uint8_t want = bval(i, root, seed);
      if (s->hrecv[i] != want) note_bad(&v, i, s->hrecv[i], want);
    }
    *checked = count;
    break;
  }
  case SENDRECV: {
    int to = (r + 1) % n, from = (r - 1 + n) % n;
    count = bytes;
    snprintf(name, name_cap, "send/recv uint8 %s (to rank %d, from rank %d)", sz, to, from);
    fill_byte(s->hsend, count, r, seed);
    if (upload(s, count, count)) return -1;
    NCCL_OK(s, ncclGroupStart(), name);
    NCCL_OK(s, ncclSend(s->dsend, count, ncclUint8, to, s->comm, s->stream), name);
    NCCL_OK(s, ncclRecv(s->drecv, count, ncclUint8, from, s->comm, s->stream), name);
    NCCL_OK(s, ncclGroupEnd(), name);
    if (wait_stream(s, name) || download(s, count)) return -1;
    for (size_t i = 0; i < count; i++) {
      uint8_t want = bval(i, from, seed);
      if (s->hrecv[i] != want) note_bad(&v, i, s->hrecv[i], want);
    }
    *checked = count;
    break;
  }
  default:
    return -1;
  }
  *vp = v;
  return (long)v.bad;
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

static void run_checks(struct rank_state *s) {
  int seed = 0;
  for (int c = 0; c < NCOLL; c++) {
    if (!check_enabled(s->o->checks, coll_names[c])) continue;
    for (int k = 0; k < s->o->nsizes; k++, seed++) {
      char name[160];
      snprintf(name, sizeof(name), "%s", coll_names[c]);
      if (s->dead) {
        s->tap_n++;
        printf("ok %d - %s %zu B # SKIP NCCL stopped answering earlier\n", s->tap_n, name,
               s->o->sizes[k]);
        continue;
      }
      struct verdict v = {0};
      size_t checked = 0;
      watchdog_arm(name, 2 * s->o->timeout_s);
      long bad = run_case(s, (enum coll)c, s->o->sizes[k], seed, name, sizeof(name), &v, &checked);
      watchdog_disarm();
      if (bad < 0) s->dead = 1; /* NCCL or CUDA failed: later calls would only hang */
      tap_result(s, bad == 0, name);
      print_verdict(&v, checked);
    }
  }
}

/* ---- bandwidth ------------------------------------------------------------- */

static void run_bw(struct rank_state *s) {
  const int n = s->o->nranks, r = s->o->rank, seed = 1000;
  const double factor = 2.0 * (n - 1) / n; /* all_reduce: bus bytes per algorithm byte */
  /* The input depends on the element index only, so one fill serves every size. */
  fill_float((float *)s->hsend, s->o->bw_max / sizeof(float), r, seed, 0);
  if (s->o->bw_max &&
      cudaMemcpy(s->dsend, s->hsend, s->o->bw_max, cudaMemcpyHostToDevice) != cudaSuccess) {
    tap_result(s, 0, "bandwidth: upload of the all_reduce input");
    return;
  }
  printf("# all_reduce bus bandwidth (%s), %d ranks: busbw = algbw * 2(n-1)/n\n",
         s->o->label ? s->o->label : "unlabelled", n);
  for (size_t bytes = s->o->bw_min; bytes && bytes <= s->o->bw_max; bytes *= 2) {
    char name[160], sz[32];
    size_str(bytes, sz, sizeof(sz));
    size_t count = bytes / sizeof(float);
    long iters = (long)(s->o->bw_budget / bytes);
    if (iters < s->o->bw_min_iters) iters = s->o->bw_min_iters;
    if (iters > s->o->bw_max_iters) iters = s->o->bw_max_iters;
    snprintf(name, sizeof(name), "all_reduce float sum %s timed (%ld iterations), result correct",
             sz, iters);
    if (s->dead) {
      s->tap_n++;
      printf("ok %d - %s # SKIP NCCL stopped answering earlier\n", s->tap_n, name);
      continue;
    }
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
    double dt = (now_s() - t0) / (double)iters;
    watchdog_disarm();
    if (fail) {
      s->dead = 1; /* later sizes would only hang */
      tap_result(s, 0, name);
      printf("# %s: %s\n", name, ncclGetLastError(s->comm));
      continue;
    }
    struct verdict v = {0};
    if (cudaMemcpy(s->hrecv, s->drecv, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
      tap_result(s, 0, name);
      continue;
    }
    const float *got = (const float *)s->hrecv;
    for (size_t i = 0; i < count; i++) {
      float want = 0;
      for (int q = 0; q < n; q++) want += fval(i, q, seed);
      if (got[i] != want) note_bad(&v, i, got[i], want);
    }
    double algbw = (double)bytes / dt / 1e9;
    printf("BW label=%s bytes=%zu iters=%ld time_us=%.1f algbw_gbs=%.3f busbw_gbs=%.3f\n",
           s->o->label ? s->o->label : "-", bytes, iters, dt * 1e6, algbw, algbw * factor);
    tap_result(s, v.bad == 0, name);
    print_verdict(&v, count);
  }
}

/* ---- bootstrap: the unique id travels through a file ---------------------- */

static int write_id(const char *path, const ncclUniqueId *id) {
  char tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f)) {
    printf("# cannot write %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  if (rename(tmp, path)) {
    printf("# cannot rename %s to %s: %s\n", tmp, path, strerror(errno));
    return -1;
  }
  return 0;
}

static int read_id(const char *path, ncclUniqueId *id, int timeout_s) {
  double deadline = now_s() + timeout_s;
  struct timespec nap = {0, 20 * 1000 * 1000};
  for (;;) {
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t got = fread(id, sizeof(*id), 1, f);
      fclose(f);
      if (got == 1) return 0;
    }
    if (now_s() > deadline) {
      printf("# rank 0 did not publish the NCCL unique id in %s within %d s\n", path, timeout_s);
      return -1;
    }
    nanosleep(&nap, NULL);
  }
}

/* ---- commands --------------------------------------------------------------- */

static const char *env_or(const char *name) {
  const char *v = getenv(name);
  return v ? v : "(unset)";
}

static void version_str(int code, char *buf, size_t cap) {
  snprintf(buf, cap, "%d.%d.%d", code / 10000, (code % 10000) / 100, code % 100);
}

static int cmd_probe(void) {
  int nccl = 0, rt = 0, drv = 0, n = 0;
  char nv[32];
  ncclGetVersion(&nccl);
  version_str(nccl, nv, sizeof(nv));
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  printf("nccl %s (code %d); CUDA runtime %d.%d, driver %d.%d\n", nv, nccl, rt / 1000,
         (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10);
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n < 1) {
    printf("no GPU: cudaGetDeviceCount: %s (%s)\n",
           e == cudaSuccess ? "0 devices" : cudaGetErrorName(e),
           e == cudaSuccess ? "no device" : cudaGetErrorString(e));
    return EXIT_NO_GPU;
  }
  for (int d = 0; d < n; d++) {
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    printf("gpu %d: %s, sm_%d%d, %.1f GiB, pci %04x:%02x:%02x.0\n", d, p.name, p.major, p.minor,
           (double)p.totalGlobalMem / (1 << 30), p.pciDomainID, p.pciBusID, p.pciDeviceID);
  }
  return 0;
}

static int cmd_dlopen(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("dlopen(RTLD_NOW) failed: %s\n", dlerror());
    return 1;
  }
  int found = 0;
  for (int v = 12; v >= 6; v--) {
    char sym[32];
    snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
    void *p = dlsym(h, sym);
    if (!p) continue;
    /* Every ncclNet_vN_t starts with `const char *name` (spec 3.1). */
    const char *name = *(const char *const *)p;
    printf("%s%s (network name \"%s\")", found ? ", " : "exports ", sym, name ? name : "(null)");
    found++;
  }
  fputs(found ? "\n" : "no ncclNetPlugin_vN symbol: NCCL would call it unsupported\n", stdout);
  dlclose(h);
  return found ? 0 : 1;
}

static size_t parse_size(const char *s, int *ok) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) {
    *ok = 0;
    return 0;
  }
  switch (*end) {
  case 'K': case 'k': v <<= 10; end++; break;
  case 'M': case 'm': v <<= 20; end++; break;
  case 'G': case 'g': v <<= 30; end++; break;
  default: break;
  }
  if (*end && strcmp(end, "B") && strcmp(end, "iB")) *ok = 0;
  return (size_t)v;
}

static int parse_sizes(const char *list, struct opts *o) {
  char buf[1024];
  snprintf(buf, sizeof(buf), "%s", list);
  o->nsizes = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int ok = 1;
    size_t v = parse_size(t, &ok);
    if (!ok || o->nsizes == MAX_SIZES) {
      fprintf(stderr, "nccl_e2e: bad size '%s' (or more than %d sizes)\n", t, MAX_SIZES);
      return -1;
    }
    o->sizes[o->nsizes++] = v;
  }
  return 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl_e2e probe\n"
          "       nccl_e2e dlopen PLUGIN.so\n"
          "       nccl_e2e run --rank R --id-file FILE [options]\n"
          "  --nranks N        ranks in the communicator (default 2)\n"
          "  --device D        CUDA device (default 0; the ranks share it)\n"
          "  --hostid ID       set NCCL_HOSTID before any NCCL call\n"
          "  --checks LIST     collectives to check: %s, all or none (default all)\n"
          "  --sizes LIST      sizes in bytes, K/M/G suffixes (default %s)\n"
          "  --bw MIN:MAX      time all_reduce from MIN to MAX bytes, doubling (e.g. 1M:1G)\n"
          "  --bw-budget B     bytes to move per timed size (default 4G), within\n"
          "  --bw-iters A:B    at least A and at most B iterations (default 5:100)\n"
          "  --warmup N        untimed iterations per size (default 2)\n"
          "  --label NAME      tag for the BW lines (e.g. the network's name)\n"
          "  --timeout S       seconds one operation may take before it counts as hung (120)\n"
          "exit status: 0 all passed, 1 a check failed, 2 usage, 3 no GPU, 4 setup failed,\n"
          "5 hung (the watchdog ended it)\n",
          all_checks, default_sizes);
}

static int parse_run(int argc, char **argv, struct opts *o) {
  static const struct option lo[] = {
    {"rank", required_argument, 0, 'r'},     {"nranks", required_argument, 0, 'n'},
    {"device", required_argument, 0, 'd'},   {"id-file", required_argument, 0, 'i'},
    {"hostid", required_argument, 0, 'H'},   {"checks", required_argument, 0, 'c'},
    {"sizes", required_argument, 0, 's'},    {"bw", required_argument, 0, 'b'},
    {"bw-budget", required_argument, 0, 'B'}, {"bw-iters", required_argument, 0, 'I'},
    {"warmup", required_argument, 0, 'w'},   {"label", required_argument, 0, 'l'},
    {"timeout", required_argument, 0, 't'},  {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};
  *o = (struct opts){.rank = -1, .nranks = 2, .checks = "all", .bw_budget = (size_t)4 << 30,
                     .bw_min_iters = 5, .bw_max_iters = 100, .warmup = 2, .timeout_s = 120};
  if (parse_sizes(default_sizes, o)) return -1;
  int c, ok = 1;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (c) {
    case 'r': o->rank = atoi(optarg); break;
    case 'n': o->nranks = atoi(optarg); break;
    case 'd': o->device = atoi(optarg); break;
    case 'i': o->id_file = optarg; break;
    case 'H': o->hostid = optarg; break;
    case 'c': o->checks = optarg; break;
    case 's': if (parse_sizes(optarg, o)) return -1; break;
    case 'b': {
      char *colon = strchr(optarg, ':');
      if (!colon) return -1;
      *colon = 0;
      o->bw_min = parse_size(optarg, &ok);
      o->bw_max = parse_size(colon + 1, &ok);
      if (!o->bw_min || o->bw_max < o->bw_min) ok = 0;
      break;
    }
    case 'B': o->bw_budget = parse_size(optarg, &ok); break;
    case 'I':
      if (sscanf(optarg, "%d:%d", &o->bw_min_iters, &o->bw_max_iters) != 2 ||
          o->bw_min_iters < 1 || o->bw_max_iters < o->bw_min_iters)
        ok = 0;
      break;
    case 'w': o->warmup = atoi(optarg); break;
    case 'l': o->label = optarg; break;
    case 't': o->timeout_s = atoi(optarg); break;
    case 'h': usage(stdout); exit(0);
    default: return -1;
    }
  }
  if (!ok || optind != argc || o->rank < 0 || o->nranks < 1 || o->rank >= o->nranks ||
      !o->id_file || o->timeout_s < 1 || o->warmup < 0)
    return -1;
  return 0;
}

static int alloc_buffers(struct rank_state *s) {
  size_t cap = 1;
  for (int k = 0; k < s->o->nsizes; k++)
    if (s->o->sizes[k] > cap) cap = s->o->sizes[k];
  if (s->o->bw_max > cap) cap = s->o->bw_max;
  s->cap = cap;
  CUDA_OK(cudaMalloc(&s->dsend, cap), "buffers");
  CUDA_OK(cudaMalloc(&s->drecv, cap), "buffers");
  s->hsend = malloc(cap);
  s->hrecv = malloc(cap);
  if (!s->hsend || !s->hrecv) {
    printf("# cannot allocate 2 x %zu bytes of host memory\n", cap);
    return -1;
  }
  return 0;
}

static int cmd_run(int argc, char **argv) {
  struct opts o;
  if (parse_run(argc, argv, &o)) {
    usage(stderr);
    return EXIT_USAGE;
  }
  /* NCCL computes its host hash once, at the first use: before any call. */
  if (o.hostid && setenv("NCCL_HOSTID", o.hostid, 1)) return EXIT_SETUP;
  const char *hid = getenv("NCCL_HOSTID");
  if (o.nranks > 1 && !hid)
    printf("# NCCL_HOSTID is unset: ranks on one GPU will be refused as duplicate GPUs\n");

  struct rank_state s = {.o = &o};
  int nccl = 0, rt = 0, drv = 0;
  char nv[32];
  ncclGetVersion(&nccl);
  version_str(nccl, nv, sizeof(nv));
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  cudaError_t e = cudaSetDevice(o.device);
  struct cudaDeviceProp p;
  if (e == cudaSuccess) e = cudaGetDeviceProperties(&p, o.device);
  if (e != cudaSuccess) {
    printf("Bail out! no usable GPU %d: %s (%s)\n", o.device, cudaGetErrorName(e),
           cudaGetErrorString(e));
    return EXIT_NO_GPU;
  }
  printf("# rank %d/%d pid %d: GPU %d %s (pci %04x:%02x:%02x.0), NCCL %s, CUDA runtime %d.%d "
         "driver %d.%d\n",
         o.rank, o.nranks, (int)getpid(), o.device, p.name, p.pciDomainID, p.pciBusID,
         p.pciDeviceID, nv, rt / 1000, (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10);
  printf("# NCCL_NET=%s NCCL_NET_PLUGIN=%s NCCL_HOSTID=%s\n", env_or("NCCL_NET"),
         env_or("NCCL_NET_PLUGIN"), env_or("NCCL_HOSTID"));
  fflush(stdout);

  ncclUniqueId id;
  if (o.rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
      printf("Bail out! ncclGetUniqueId: %s (%s)\n", ncclGetErrorString(r),
             ncclGetLastError(NULL));
      return EXIT_SETUP;
    }
    if (write_id(o.id_file, &id)) return EXIT_SETUP;
  } else if (read_id(o.id_file, &id, o.timeout_s)) {
    printf("Bail out! no unique id from rank 0\n");
    return EXIT_SETUP;
  }

  if (cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking) != cudaSuccess ||
      alloc_buffers(&s)) {
    printf("Bail out! cannot set up the GPU buffers\n");
    return EXIT_SETUP;
  }
  double t0 = now_s();
  watchdog_arm("ncclCommInitRank", o.timeout_s);
  ncclResult_t r = ncclCommInitRank(&s.comm, o.nranks, id, o.rank);
  watchdog_disarm();
  tap_result(&s, r == ncclSuccess, "ncclCommInitRank");
  if (r != ncclSuccess) {
    printf("# ncclCommInitRank: %s (%s)\n", ncclGetErrorString(r), ncclGetLastError(NULL));
    printf("Bail out! no communicator\n");
    return EXIT_SETUP;
  }
  printf("# communicator up in %.2f s\n", now_s() - t0);
  fflush(stdout);

  if (strcmp(o.checks, "none")) run_checks(&s);
  if (o.bw_max) run_bw(&s);

  if (s.dead) {
    watchdog_arm("ncclCommAbort", o.timeout_s);
    ncclCommAbort(s.comm);
    watchdog_disarm();
    tap_result(&s, 0, "communicator aborted after a hang or an asynchronous error");
  } else {
    watchdog_arm("ncclCommDestroy", o.timeout_s);
    r = ncclCommDestroy(s.comm);
    watchdog_disarm();
    if (r != ncclSuccess) printf("# ncclCommDestroy: %s\n", ncclGetErrorString(r));
    tap_result(&s, r == ncclSuccess, "ncclCommDestroy (the plugin closes its connections)");
  }
  cudaFree(s.dsend);
  cudaFree(s.drecv);
  cudaStreamDestroy(s.stream);
  free(s.hsend);
  free(s.hrecv);
  printf("1..%d\n", s.tap_n);
  return s.tap_failed ? EXIT_CHECKS : 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 2 && !strcmp(argv[1], "probe")) return cmd_probe();
  if (argc == 3 && !strcmp(argv[1], "dlopen")) return cmd_dlopen(argv[2]);
  if (argc >= 2 && !strcmp(argv[1], "run")) return cmd_run(argc - 1, argv + 1);
  usage(argc >= 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
  return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : EXIT_USAGE;
}
