/* SPDX-License-Identifier: Apache-2.0 */
/* mock_nccl.c: a test double for the CUDA runtime and NCCL calls nccl_e2e
 * makes. It is NOT NCCL and proves nothing about NCCL or the plugin's data
 * path; it lets run.sh and nccl_e2e's element checks run on a machine without
 * a GPU, so their logic is tested before a GPU host runs them for real.
 *
 * "Device memory" is host memory; every operation completes when called.
 * Ranks are processes that exchange buffers as files in a folder named by the
 * unique id. The log it writes (NCCL_DEBUG_FILE) uses the formats of NCCL
 * 2.28.9's own lines (spec section 10): it dlopens NCCL_NET_PLUGIN and reports
 * the newest ncclNetPlugin_vN it finds, as NCCL would.
 *
 * Knobs for negative tests:
 *   NCCL_E2E_MOCK_NO_GPU=1        CUDA answers cudaErrorInsufficientDriver
 *   NCCL_E2E_MOCK_VERSION=CODE    what ncclGetVersion reports (default 22809)
 *   NCCL_E2E_MOCK_MAX_ABI=N       newest plugin ABI this "NCCL" knows (default 11)
 *   NCCL_E2E_MOCK_CORRUPT=NAME    flip one byte of every allreduce, allgather,
 *                                 reducescatter, broadcast or sendrecv result
 *   NCCL_E2E_MOCK_HANG=NAME       never return from "init" (ncclCommInitRank)
 *                                 or "broadcast" */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#define MOCK_WAIT_S 60
#define MAX_PENDING 8

struct ncclComm {
  int rank, nranks;
  char dir[NCCL_UNIQUE_ID_BYTES];
  long op;
  int in_group;
  struct {
    void *buf;
    size_t bytes;
    int peer;
  } pending[MAX_PENDING];
  int npending;
};

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

static int no_gpu(void) { return env_int("NCCL_E2E_MOCK_NO_GPU", 0); }

static void maybe_hang(const char *what) {
  const char *h = getenv("NCCL_E2E_MOCK_HANG");
  if (h && !strcmp(h, what))
    for (;;) pause();
}

static size_t type_size(ncclDataType_t t) {
  switch (t) {
  case ncclInt8:
  case ncclUint8: return 1;
  case ncclFloat16:
  case ncclBfloat16: return 2;
  case ncclInt32:
  case ncclUint32:
  case ncclFloat32: return 4;
  default: return 8;
  }
}

/* ---- CUDA runtime -------------------------------------------------------- */

const char *cudaGetErrorName(cudaError_t e) {
  return e == cudaSuccess                   ? "cudaSuccess"
         : e == cudaErrorInsufficientDriver ? "cudaErrorInsufficientDriver"
                                            : "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error"
         : e == cudaErrorInsufficientDriver
           ? "CUDA driver version is insufficient for CUDA runtime version"
           : "unknown error";
}

cudaError_t cudaRuntimeGetVersion(int *v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v) {
  *v = no_gpu() ? 0 : CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *n) {
  if (no_gpu()) return cudaErrorInsufficientDriver;
  *n = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int d) {
  return no_gpu() ? cudaErrorInsufficientDriver : d == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d) {
  if (no_gpu()) return cudaErrorInsufficientDriver;
  memset(p, 0, sizeof(*p));
  snprintf(p->name, sizeof(p->name), "mock GPU %d (test double, no CUDA)", d);
  p->totalGlobalMem = (size_t)1 << 30;
  return cudaSuccess;
}

static char mock_stream;

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
  (void)flags;
  *s = (cudaStream_t)(void *)&mock_stream;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  (void)s;
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t s) {
  (void)s;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t n) {
  *p = malloc(n ? n : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void *p) {
  free(p);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind k) {
  (void)k;
  memmove(dst, src, n);
  return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int v, size_t n) {
  memset(p, v, n);
  return cudaSuccess;
}

/* ---- the log, in NCCL's formats --------------------------------------------- */

static void nccl_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void nccl_log(const char *level, const char *fmt, ...) {
  const char *dbg = getenv("NCCL_DEBUG"), *file = getenv("NCCL_DEBUG_FILE");
  if (!dbg || (strcasecmp(dbg, "INFO") && strcasecmp(dbg, "TRACE"))) return;
  FILE *f = file ? fopen(file, "a") : NULL;
  char host[64] = "mock";
  gethostname(host, sizeof(host) - 1);
  char *dot = strchr(host, '.');
  if (dot) *dot = 0;
  fprintf(f ? f : stderr, "%s:%d:%d [0] NCCL %s ", host, (int)getpid(), (int)getpid(), level);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f ? f : stderr, fmt, ap);
  va_end(ap);
  fputc('\n', f ? f : stderr);
  if (f) fclose(f);
}

/* Picks the network as NCCL 2.28 does (spec 1.2, 1.3): external plugins from
 * NCCL_NET_PLUGIN, then IB (never usable here), then Socket; NCCL_NET picks
 * by name. Returns the chosen name, or NULL. */
static const char *choose_net(char *plugin_name, size_t cap) {
  const char *lib = getenv("NCCL_NET_PLUGIN"), *want = getenv("NCCL_NET");
  int max_abi = env_int("NCCL_E2E_MOCK_MAX_ABI", 11);
  plugin_name[0] = 0;
  if (lib) nccl_log("INFO", "NCCL_NET_PLUGIN set by environment to %s", lib);
  if (lib && strcasecmp(lib, "none")) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      nccl_log("INFO", "NET/Plugin: Could not find: %s", lib);
    } else {
      int found = 0;
      for (int v = max_abi; v >= 6 && !found; v--) {
        char sym[32];
        snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
        void *p = dlsym(h, sym);
        if (!p) continue;
        snprintf(plugin_name, cap, "%s", *(const char *const *)p);
        nccl_log("INFO", "NET/Plugin: Loaded net plugin %s (v%d)", plugin_name, v);
        nccl_log("INFO", "Successfully loaded external network plugin %s", lib);
        found = 1;
      }
      if (!found) nccl_log("INFO", "External network plugin %s is unsupported", lib);
      dlclose(h);
    }
  }
  if (!want) return plugin_name[0] ? plugin_name : "Socket";
  if (plugin_name[0] && !strcasecmp(want, plugin_name)) return plugin_name;
  if (!strcasecmp(want, "Socket")) return "Socket";
  nccl_log("WARN", "Failed to initialize any NET plugin");
  return NULL;
}

/* ---- NCCL ------------------------------------------------------------------- */

ncclResult_t ncclGetVersion(int *v) {
  *v = env_int("NCCL_E2E_MOCK_VERSION", 22809);
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
  return r == ncclSuccess ? "no error" : r == ncclInvalidUsage ? "invalid usage" : "mock error";
}

const char *ncclGetLastError(ncclComm_t c) {
  (void)c;
  return "(mock NCCL)";
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *r) {
  (void)c;
  *r = ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  const char *tmp = getenv("TMPDIR");
  memset(id, 0, sizeof(*id));
  snprintf(id->internal, sizeof(id->internal), "%s/nccl-e2e-mock-XXXXXX", tmp ? tmp : "/tmp");
  return mkdtemp(id->internal) ? ncclSuccess : ncclSystemError;
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank) {
  if (no_gpu()) return ncclUnhandledCudaError;
  maybe_hang("init");
  int code;
  ncclGetVersion(&code);
  nccl_log("INFO", "mock NCCL (a test double in tests/gpu, not NCCL) reporting version %d", code);
  if (getenv("NCCL_HOSTID"))
    nccl_log("INFO", "NCCL_HOSTID set by environment to %s", getenv("NCCL_HOSTID"));
  char plugin[64];
  const char *net = choose_net(plugin, sizeof(plugin));
  if (!net) return ncclInvalidUsage;
  nccl_log("INFO", "Using network %s", net);
  struct ncclComm *c = calloc(1, sizeof(*c));
  if (!c) return ncclSystemError;
  c->rank = rank;
  c->nranks = nranks;
  memcpy(c->dir, id.internal, sizeof(c->dir));
  c->dir[sizeof(c->dir) - 1] = 0;
  int next = (rank + 1) % nranks, prev = (rank - 1 + nranks) % nranks;
  nccl_log("INFO", "Channel 00/0 : %d[0] -> %d[0] [receive] via NET/%s/0", prev, rank, net);
  nccl_log("INFO", "Channel 00/0 : %d[0] -> %d[0] [send] via NET/%s/0", rank, next, net);
  *out = c;
  return ncclSuccess;
}

/* A rank's contribution to operation `op` is the file <dir>/<op>.<rank>.<tag>. */
static void op_path(const struct ncclComm *c, long op, int rank, const char *tag, char *buf,
                    size_t cap) {
  snprintf(buf, cap, "%s/%ld.%d.%s", c->dir, op, rank, tag);
}

static ncclResult_t publish(struct ncclComm *c, const char *tag, const void *data, size_t n) {
  char path[512], tmp[600];
  op_path(c, c->op, c->rank, tag, path, sizeof(path));
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) return ncclSystemError;
  size_t w = n ? fwrite(data, 1, n, f) : 0;
  if (fclose(f) || w != n || rename(tmp, path)) return ncclSystemError;
  /* A peer that published op-1 has finished reading op-2: drop ours. */
  if (c->op >= 2) {
    char old[512];
    snprintf(old, sizeof(old), "%s/%ld.%d.", c->dir, c->op - 2, c->rank);
    for (const char *t = "coll\0p2p\0"; *t; t += strlen(t) + 1) {
      char p[600];
      snprintf(p, sizeof(p), "%s%s", old, t);
      unlink(p);
    }
  }
  return ncclSuccess;
}

static ncclResult_t fetch(struct ncclComm *c, int peer, const char *tag, void *buf, size_t n) {
  char path[512];
  op_path(c, c->op, peer, tag, path, sizeof(path));
  struct timespec nap = {0, 1000000};
  for (int waited_ms = 0; waited_ms < MOCK_WAIT_S * 1000; waited_ms++) {
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t got = n ? fread(buf, 1, n, f) : 0;
      fclose(f);
      return got == n ? ncclSuccess : ncclRemoteError;
    }
    nanosleep(&nap, NULL);
  }
  return ncclRemoteError;
}

/* Grow-only scratch buffers, so an operation does not map fresh memory. */
static void *scratch(int which, size_t bytes) {
  static void *buf[2];
  static size_t cap[2];
  if (bytes > cap[which]) {
    void *p = realloc(buf[which], bytes);
    if (!p) return NULL;
    buf[which] = p;
    cap[which] = bytes;
  }
  return buf[which] ? buf[which] : (buf[which] = malloc(1));
}

static void maybe_corrupt(const char *what, void *buf, size_t n) {
  const char *c = getenv("NCCL_E2E_MOCK_CORRUPT");
  if (c && !strcmp(c, what) && n) ((unsigned char *)buf)[n / 2] ^= 0x40;
}

static ncclResult_t finish(struct ncclComm *c, ncclResult_t r) {
  c->op++;
  return r;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t t,
                           ncclRedOp_t op, ncclComm_t c, cudaStream_t s) {
  (void)s;
  if (t != ncclFloat32 || op != ncclSum) return ncclInvalidArgument;
  size_t bytes = count * sizeof(float);
  float *sum = scratch(0, bytes), *peer = scratch(1, bytes);
  if (sum) memset(sum, 0, bytes);
  ncclResult_t r = sum && peer ? publish(c, "coll", send, bytes) : ncclSystemError;
  for (int q = 0; q < c->nranks && r == ncclSuccess; q++) {
    r = fetch(c, q, "coll", peer, bytes);
    for (size_t i = 0; i < count && r == ncclSuccess; i++) sum[i] += peer[i];
  }
  if (r == ncclSuccess && bytes) memcpy(recv, sum, bytes);
  if (r == ncclSuccess) maybe_corrupt("allreduce", recv, bytes);
  return finish(c, r);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t t,
                           ncclComm_t c, cudaStream_t s) {
  (void)s;
  size_t bytes = count * type_size(t);
  ncclResult_t r = publish(c, "coll", send, bytes);
  for (int q = 0; q < c->nranks && r == ncclSuccess; q++)
    r = fetch(c, q, "coll", (char *)recv + (size_t)q * bytes, bytes);
  if (r == ncclSuccess) maybe_corrupt("allgather", recv, bytes * c->nranks);
  return finish(c, r);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t c, cudaStream_t s) {
  (void)s;
  if (t != ncclFloat32 || op != ncclSum) return ncclInvalidArgument;
  size_t total = count * c->nranks;
  float *sum = scratch(0, count * sizeof(float)), *peer = scratch(1, total * sizeof(float));
  if (sum) memset(sum, 0, count * sizeof(float));
  ncclResult_t r = sum && peer ? publish(c, "coll", send, total * sizeof(float)) : ncclSystemError;
  for (int q = 0; q < c->nranks && r == ncclSuccess; q++) {
    r = fetch(c, q, "coll", peer, total * sizeof(float));
    for (size_t i = 0; i < count && r == ncclSuccess; i++)
      sum[i] += peer[(size_t)c->rank * count + i];
  }
  if (r == ncclSuccess && count) memcpy(recv, sum, count * sizeof(float));
  if (r == ncclSuccess) maybe_corrupt("reducescatter", recv, count * sizeof(float));
  return finish(c, r);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t t, int root,
                           ncclComm_t c, cudaStream_t s) {
  (void)s;
  maybe_hang("broadcast");
  size_t bytes = count * type_size(t);
  ncclResult_t r = c->rank == root ? publish(c, "coll", send, bytes) : ncclSuccess;
  if (r == ncclSuccess) r = fetch(c, root, "coll", recv, bytes);
  if (r == ncclSuccess) maybe_corrupt("broadcast", recv, bytes);
  return finish(c, r);
}

/* nccl.h declares these without a prototype: give them one. */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

ncclResult_t ncclGroupStart(void) { return ncclSuccess; }

/* Sends publish at once; receives wait for ncclGroupEnd (one op per group). */
static struct ncclComm *group_comm;

ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t t, int peer, ncclComm_t c,
                      cudaStream_t s) {
  (void)s;
  (void)peer; /* the tag names the sender; with two ranks the peer is implied */
  group_comm = c;
  return publish(c, "p2p", send, count * type_size(t));
}

ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t t, int peer, ncclComm_t c,
                      cudaStream_t s) {
  (void)s;
  if (c->npending == MAX_PENDING) return ncclInternalError;
  c->pending[c->npending].buf = recv;
  c->pending[c->npending].bytes = count * type_size(t);
  c->pending[c->npending].peer = peer;
  c->npending++;
  group_comm = c;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  struct ncclComm *c = group_comm;
  group_comm = NULL;
  if (!c) return ncclSuccess;
  ncclResult_t r = ncclSuccess;
  for (int k = 0; k < c->npending && r == ncclSuccess; k++) {
    r = fetch(c, c->pending[k].peer, "p2p", c->pending[k].buf, c->pending[k].bytes);
    if (r == ncclSuccess) maybe_corrupt("sendrecv", c->pending[k].buf, c->pending[k].bytes);
  }
  c->npending = 0;
  return finish(c, r);
}

/* A last barrier; after it every peer is done with our files of earlier
 * operations. The files of the barrier itself stay: the runner gives each
 * run its own TMPDIR, which holds the exchange folder. */
static ncclResult_t close_comm(ncclComm_t c) {
  if (!c) return ncclSuccess;
  ncclResult_t r = publish(c, "coll", "", 0);
  for (int q = 0; q < c->nranks && r == ncclSuccess; q++) r = fetch(c, q, "coll", NULL, 0);
  for (const char *t = "coll\0p2p\0"; *t && c->op >= 1; t += strlen(t) + 1) {
    char p[512];
    op_path(c, c->op - 1, c->rank, t, p, sizeof(p));
    unlink(p);
  }
  free(c);
  return r;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) { return close_comm(c); }

ncclResult_t ncclCommAbort(ncclComm_t c) {
  free(c);
  return ncclSuccess;
}
