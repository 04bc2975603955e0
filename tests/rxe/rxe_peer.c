/* SPDX-License-Identifier: Apache-2.0 */
/* rxe_peer: one side of a connection through the plugin, for the failure
 * scenarios on the real RDMA stack (tests/rxe). Two instances meet through
 * a folder: the listener writes its handle there, the connector reads it;
 * the folder may be shared between two guests. The plugin's log and the
 * outcome go to stdout as lines the guest scripts match:
 *   LOG WARN|INFO <text>
 *   RESULT connect ok|failed <ncclResult> <ms>
 *   RESULT path RDMA|TCP
 *   RESULT data verified <messages> | RESULT data failed <ncclResult> after <messages>
 * usage: rxe_peer listen|connect DIR [--msgs N] [--size BYTES] [--abi N]
 *                 [--seconds S] [--timeout-s T] [--gate 1] [--linger 1]
 * --seconds S keeps moving messages for S seconds (a port goes down
 * meanwhile); the first verified message writes DIR/moving. --gate 1: once
 * the plugin has read its devices, write DIR/gate-ready and wait for
 * DIR/gate-go (the script breaks something in between, under two plugins
 * that already chose their GIDs). --linger 1: after the data, done or
 * failed, wait for DIR/linger-go before closing (the plugin then still sees
 * what the script does next, a port coming back). --timeout-s bounds the whole run (a hang
 * prints "RESULT hang" and exits 124). Exit status: 0 all done, 1 a clean
 * failure, 2 usage. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/netload.h"

struct opts {
  int is_listen;
  const char *dir;
  int msgs, abi, seconds, timeout_s, gate, linger;
  size_t size;
};

static struct netload nl;
static int path_rdma = -1; /* from the plugin's connection line */

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                   const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level != NCCL_LOG_WARN && level != NCCL_LOG_INFO) return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (strstr(msg, "connection with") && strstr(msg, ": RDMA, ")) path_rdma = 1;
  else if (strstr(msg, "connection with") && strstr(msg, ": TCP,")) path_rdma = 0;
  printf("LOG %s %s\n", level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
  fflush(stdout);
}

static long long ms_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void on_alarm(int sig) {
  (void)sig;
  static const char m[] = "RESULT hang\n";
  if (write(1, m, sizeof(m) - 1) < 0) _exit(124);
  _exit(124);
}

static void pattern(uint8_t *p, size_t n, unsigned seed, int check, size_t *bad) {
  uint32_t x = seed * 2654435761u + 1;
  *bad = n;
  for (size_t i = 0; i < n; i++) {
    if (!(i & 3)) x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    uint8_t want = (uint8_t)(x >> (8 * (i & 3)));
    if (!check) p[i] = want;
    else if (p[i] != want) {
      *bad = i;
      return;
    }
  }
}

/* Files in DIR: written whole, then renamed, so the reader never sees a part. */
static int put_file(const char *dir, const char *name, const void *buf, size_t len) {
  char tmp[4200], path[4200];
  snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(tmp, "w");
  if (!f) return errno;
  int ok = fwrite(buf, 1, len, f) == len;
  ok &= fclose(f) == 0;
  return ok && rename(tmp, path) == 0 ? 0 : EIO;
}

static int get_file(const char *dir, const char *name, void *buf, size_t len, long long end) {
  char path[4200];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  while (ms_now() < end) {
    FILE *f = fopen(path, "r");
    if (f) {
      size_t n = fread(buf, 1, len, f);
      fclose(f);
      if (n == len) return 0;
    }
    usleep(20000);
  }
  return ETIMEDOUT;
}

static int establish(const struct opts *o, void **comm) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL;
  long long t0 = ms_now(), end = t0 + o->timeout_s * 1000LL;
  int r = 0;
  *comm = NULL;
  if (o->is_listen) {
    r = netload_listen(&nl, 0, handle, &lc);
    if (!r && put_file(o->dir, "handle", handle, sizeof(handle))) r = ncclSystemError;
    while (!r && !*comm && ms_now() < end) r = netload_accept(&nl, lc, comm);
    if (lc) netload_close_listen(&nl, lc);
  } else {
    if (get_file(o->dir, "handle", handle, sizeof(handle), end)) return ncclSystemError;
    while (!r && !*comm && ms_now() < end) r = netload_connect(&nl, 0, handle, comm);
  }
  printf("RESULT connect %s %d %lld\n", *comm ? "ok" : "failed", r, ms_now() - t0);
  if (*comm) printf("RESULT path %s\n", path_rdma == 1 ? "RDMA" : path_rdma == 0 ? "TCP" : "?");
  return *comm ? 0 : (r ? r : ncclSystemError);
}

/* One message each way's share: the listener receives and checks. */
static int one_message(const struct opts *o, void *comm, uint8_t *buf, void *mh, unsigned seed) {
  void *req = NULL;
  int r, done = 0, sizes[64] = {0};
  long long end = ms_now() + 30000;
  if (o->is_listen) {
    size_t cap = o->size;
    int tag = 1;
    memset(buf, 0xee, o->size);
    r = netload_irecv(&nl, comm, 1, (void **)&buf, &cap, &tag, &mh, &req);
  } else {
    size_t bad;
    pattern(buf, o->size, seed, 0, &bad);
    do r = netload_isend(&nl, comm, buf, o->size, 1, mh, &req);
    while (!r && !req && ms_now() < end);
  }
  while (!r && req && !done && ms_now() < end) r = netload_test(&nl, req, &done, sizes);
  if (r) return r;
  if (!done) return ncclInternalError; /* not finished in 30 s: a hang, reported as such */
  if (o->is_listen) {
    size_t bad;
    pattern(buf, o->size, seed, 1, &bad);
    if (bad != o->size || (size_t)sizes[0] != o->size) {
      printf("RESULT data differs at byte %zu of %zu (size %d)\n", bad, o->size, sizes[0]);
      return -1;
    }
  }
  return 0;
}

static int move_data(const struct opts *o, void *comm) {
  uint8_t *buf = malloc(o->size ? o->size : 1);
  void *mh = NULL;
  int r = buf ? (int)netload_reg_mr(&nl, comm, buf, o->size ? o->size : 1, NCCL_PTR_HOST, &mh) : -1;
  int n = 0;
  long long end = ms_now() + o->seconds * 1000LL;
  while (!r && (o->seconds ? ms_now() < end : n < o->msgs)) {
    r = one_message(o, comm, buf, mh, (unsigned)n + 1);
    if (!r && ++n == 1 && o->is_listen) put_file(o->dir, "moving", "m", 1);
  }
  if (r) printf("RESULT data failed %d after %d\n", r, n);
  else printf("RESULT data verified %d\n", n);
  if (mh) netload_dereg_mr(&nl, comm, mh);
  free(buf);
  return r;
}

static int parse(int argc, char **argv, struct opts *o) {
  *o = (struct opts){.msgs = 8, .abi = 11, .timeout_s = 60, .size = 1 << 20};
  if (argc < 3 || (strcmp(argv[1], "listen") && strcmp(argv[1], "connect"))) return -1;
  o->is_listen = !strcmp(argv[1], "listen");
  o->dir = argv[2];
  for (int i = 3; i + 1 < argc; i += 2) {
    long v = atol(argv[i + 1]);
    if (!strcmp(argv[i], "--msgs")) o->msgs = (int)v;
    else if (!strcmp(argv[i], "--size")) o->size = (size_t)v;
    else if (!strcmp(argv[i], "--abi")) o->abi = (int)v;
    else if (!strcmp(argv[i], "--seconds")) o->seconds = (int)v;
    else if (!strcmp(argv[i], "--timeout-s")) o->timeout_s = (int)v;
    else if (!strcmp(argv[i], "--gate")) o->gate = (int)v;
    else if (!strcmp(argv[i], "--linger")) o->linger = (int)v;
    else return -1;
  }
  return argc % 2 ? 0 : -1;
}

int main(int argc, char **argv) {
  struct opts o;
  if (parse(argc, argv, &o)) {
    fprintf(stderr,
            "usage: %s listen|connect DIR [--msgs N] [--size BYTES] [--abi N] [--seconds S] "
            "[--timeout-s T] [--gate 1] [--linger 1]\n",
            argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGALRM, on_alarm);
  alarm((unsigned)o.timeout_s + 30);
  char err[512];
  if (netload_open(&nl, NULL, o.abi, err, sizeof(err))) {
    printf("RESULT load failed: %s\n", err);
    return 1;
  }
  netload_init(&nl, logger);
  int ndev = 0;
  netload_devices(&nl, &ndev); /* the plugin reads its devices here */
  if (o.gate) {
    char c = 'g';
    put_file(o.dir, "gate-ready", &c, 1);
    get_file(o.dir, "gate-go", &c, 1, ms_now() + o.timeout_s * 1000LL);
  }
  void *comm = NULL;
  int r = establish(&o, &comm);
  if (!r) r = move_data(&o, comm);
  if (o.linger) {
    char g;
    get_file(o.dir, "linger-go", &g, 1, ms_now() + o.timeout_s * 1000LL);
  }
  /* Neither side closes before the other is done with its requests: the
   * receiver's data lands before the sender's completion comes back. */
  char c = 'd';
  put_file(o.dir, o.is_listen ? "received" : "sent", &c, 1);
  if (comm) get_file(o.dir, o.is_listen ? "sent" : "received", &c, 1, ms_now() + 20000);
  if (comm) o.is_listen ? netload_close_recv(&nl, comm) : netload_close_send(&nl, comm);
  netload_finalize(&nl);
  printf("RESULT exit %d\n", r ? 1 : 0);
  return r ? 1 : 0;
}
