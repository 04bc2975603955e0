/* SPDX-License-Identifier: Apache-2.0 */
/* fault_mesh: one rank of an all-to-all mesh, driving the built plugin
 * through its exported v11 table as NCCL's proxy thread does: a connection
 * to and from every other rank, each streaming on its own (one message in
 * flight per connection, passes paced), so a slow path slows only its own
 * two connections and their siblings keep their rate.
 *
 *   fault_mesh --role NAME --mode mesh --dir DIR --rank R --nranks N
 *              [--size BYTES] [--pace-us US] [--seconds S]
 *
 * Rank R listens once per other rank (DIR/handle.R.S for rank S), connects
 * to DIR/handle.S.R of every S and accepts every S. Prints STARTED once
 * every connection moved a message, then after --seconds one RESULT line
 * (status ok, error or hang; msgs moved, the longest call), waits for its
 * stdin to close and closes everything (the plugin's summary then). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tools/netload.h"

#define MESH_MAX 16

static struct {
  const char *role, *dir;
  size_t size;
  int rank, nranks, pace_us, seconds;
} opt = {"r", ".", 262144, 0, 0, 10000, 30};

static struct netload nl;
static long long call_max_ns, call_cpu_max_ns; /* wall (mostly the scheduler's) and CPU */

struct conn {
  void *comm, *mh, *req;
  uint8_t *buf;
  bool is_send;
  long long done;
};

static long long ms_now(void) { return clock_mono_ns() / 1000000; }

static long long cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                   const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "[%s %d] %s %s\n", opt.role, (int)getpid(),
          level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
}

static int put_handle(int to, const void *h) {
  char tmp[4096], path[4096];
  snprintf(tmp, sizeof(tmp), "%s/.handle.%d.%d.tmp", opt.dir, opt.rank, to);
  snprintf(path, sizeof(path), "%s/handle.%d.%d", opt.dir, opt.rank, to);
  FILE *f = fopen(tmp, "wb");
  if (!f) return -1;
  size_t n = fwrite(h, 1, NCCL_NET_HANDLE_MAXSIZE, f);
  fclose(f);
  return n == NCCL_NET_HANDLE_MAXSIZE ? rename(tmp, path) : -1;
}

static int get_handle(int from, void *h, long long end) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/handle.%d.%d", opt.dir, from, opt.rank);
  while (ms_now() < end) {
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(h, 1, NCCL_NET_HANDLE_MAXSIZE, f) : 0;
    if (f) fclose(f);
    if (n == NCCL_NET_HANDLE_MAXSIZE) return 0;
    usleep(10000);
  }
  return -1;
}

/* Every send (sends[S]) and receive (recvs[S]) connection up, non-blocking
 * steps in turn as NCCL's proxy does. 0 or the failing call's result. */
static int setup(struct conn *sends, struct conn *recvs) {
  void *lcs[MESH_MAX] = {0};
  char handles[MESH_MAX][NCCL_NET_HANDLE_MAXSIZE];
  long long end = ms_now() + 60000;
  int r = 0;
  for (int s = 0; s < opt.nranks; s++) {
    if (s == opt.rank) continue;
    char h[NCCL_NET_HANDLE_MAXSIZE];
    if ((r = netload_listen(&nl, 0, h, &lcs[s])) || put_handle(s, h)) return r ? r : -1;
  }
  for (int s = 0; s < opt.nranks; s++)
    if (s != opt.rank && get_handle(s, handles[s], end)) return -1;
  for (bool is_up = false; !is_up && ms_now() < end; usleep(200)) {
    is_up = true;
    for (int s = 0; s < opt.nranks; s++) {
      if (s == opt.rank) continue;
      if (!sends[s].comm && (r = netload_connect(&nl, 0, handles[s], &sends[s].comm))) return r;
      if (!recvs[s].comm && (r = netload_accept(&nl, lcs[s], &recvs[s].comm))) return r;
      is_up &= sends[s].comm && recvs[s].comm;
    }
  }
  for (int s = 0; s < opt.nranks; s++)
    if (lcs[s]) netload_close_listen(&nl, lcs[s]);
  return 0;
}

/* One step of one connection: post when free, test when posted. */
static int step(struct conn *c) {
  int r = 0, tag = 1;
  long long t0 = clock_mono_ns(), c0 = cpu_ns();
  if (!c->req) {
    if (c->is_send) r = netload_isend(&nl, c->comm, c->buf, opt.size, tag, c->mh, &c->req);
    else {
      size_t cap = opt.size;
      void *p = c->buf;
      r = netload_irecv(&nl, c->comm, 1, &p, &cap, &tag, &c->mh, &c->req);
    }
  }
  if (!r && c->req) {
    int fin = 0, size = -1;
    r = netload_test(&nl, c->req, &fin, &size);
    if (!r && fin) c->req = NULL, c->done++;
  }
  long long took = clock_mono_ns() - t0, cpu = cpu_ns() - c0;
  if (took > call_max_ns) call_max_ns = took;
  if (cpu > call_cpu_max_ns) call_cpu_max_ns = cpu;
  return r;
}

static void conn_open(struct conn *c, bool is_send) {
  c->is_send = is_send;
  c->buf = calloc(1, opt.size);
  netload_reg_mr(&nl, c->comm, c->buf, opt.size, NCCL_PTR_HOST, &c->mh);
}

static void conn_close(struct conn *c) {
  netload_dereg_mr(&nl, c->comm, c->mh);
  if (c->is_send) netload_close_send(&nl, c->comm);
  else netload_close_recv(&nl, c->comm);
}

static int run(void) {
  struct conn conns[2 * MESH_MAX] = {{0}}, *sends = conns, *recvs = conns + MESH_MAX;
  int r = setup(sends, recvs);
  const char *status = r ? "error" : "ok";
  long long msgs = 0;
  bool is_started = false;
  for (int k = 0; !r && k < 2 * MESH_MAX; k++)
    if (conns[k].comm) conn_open(&conns[k], k < MESH_MAX);
  for (long long end = ms_now() + opt.seconds * 1000LL; !r && ms_now() < end;) {
    bool is_all = true;
    for (int k = 0; !r && k < 2 * MESH_MAX; k++) {
      if (!conns[k].comm) continue;
      r = step(&conns[k]);
      is_all &= conns[k].done > 0;
    }
    if (is_all && !is_started) printf("STARTED\n"), fflush(stdout), is_started = true;
    if (opt.pace_us) usleep((useconds_t)opt.pace_us);
  }
  for (int k = 0; k < 2 * MESH_MAX; k++) msgs += conns[k].done;
  if (r) status = "error";
  else if (!is_started) status = "hang";
  printf(
    "RESULT {\"role\":\"%s\",\"mode\":\"mesh\",\"status\":\"%s\",\"code\":%d,\"code_name\":\"\",\"verified\":true,\"warn\":\"\",\"msgs\":%lld,"
    "\"call_max_us\":%lld,\"call_max_cpu_us\":%lld}\n",
    opt.role, status, r, msgs, call_max_ns / 1000, call_cpu_max_ns / 1000);
  fflush(stdout);
  char b[64];
  while (read(0, b, sizeof(b)) > 0) {
  }
  for (int k = 0; k < 2 * MESH_MAX; k++)
    if (conns[k].comm) conn_close(&conns[k]);
  return 0;
}

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *a = argv[i], *v = argv[i + 1];
    if (!strcmp(a, "--role")) opt.role = v;
    else if (!strcmp(a, "--dir")) opt.dir = v;
    else if (!strcmp(a, "--rank")) opt.rank = atoi(v);
    else if (!strcmp(a, "--nranks")) opt.nranks = atoi(v);
    else if (!strcmp(a, "--size")) opt.size = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--pace-us")) opt.pace_us = atoi(v);
    else if (!strcmp(a, "--seconds")) opt.seconds = atoi(v);
    else if (strcmp(a, "--mode")) return fprintf(stderr, "fault_mesh: unknown %s\n", a), 2;
  }
  if (opt.nranks < 2 || opt.nranks > MESH_MAX || opt.rank < 0 || opt.rank >= opt.nranks ||
      !opt.size)
    return fprintf(stderr, "fault_mesh: --rank R --nranks N (2..%d) expected\n", MESH_MAX), 2;
  char err[512];
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (netload_open(&nl, NULL, 11, err, sizeof(err)))
    return fprintf(stderr, "cannot load the plugin: %s\n", err), 2;
  netload_init(&nl, logger);
  int rc = run();
  netload_finalize(&nl);
  return rc;
}
