/* SPDX-License-Identifier: Apache-2.0 */
/* fault_side: one side of a fault scenario, driving the built plugin
 * through its exported v11 table as NCCL's proxy thread does (the
 * tools/netload.h loader), and printing what happened as one line:
 *
 *   RESULT {"role":"recv","status":"error","code":6,"code_name":"ncclRemoteError",
 *           "t_ms":123456,"msgs":17,"bytes":17825792,"verified":true,"warn":"..."}
 *
 * status: "ok" (every message moved and, on the receiving side, verified
 * byte for byte), "error" (a call failed, with its code), "corrupt" (a receive completed with wrong
 * bytes or size: reported delivered but not), "hang" (--max-seconds passed
 * with the plugin still waiting). warn is the last WARN before the outcome
 * (a failure's own), first_warn the first since the stream started (a
 * no-progress warning, when one came first). t_ms is CLOCK_MONOTONIC, the clock the
 * runner times the fault with. "STARTED" is printed once the first message
 * completed, so the runner injects its fault mid-stream. After RESULT the
 * process waits for its stdin to close, so the other side still sees it
 * alive, then closes everything and exits 0.
 *
 * Modes:
 *   stream  --role recv: listen, write the handle to DIR/handle, accept,
 *           receive; --role send: read DIR/handle, connect, send. --count N
 *           messages of --size bytes, --window in flight (0: until an error)
 *   stale   --role recv: write DIR/stale (the handle with another nonce)
 *           and DIR/handle; accept the real peer. --role send: connect with
 *           the stale handle (expects a refusal), then with the real one
 *   gone    --role recv: listen, write DIR/handle, then exit without
 *           accepting: at once (after writing DIR/gone), or after --late-ms
 *           with the peer's connection left in its kernel's backlog (reset
 *           when it exits). --role send: read DIR/handle (and DIR/gone when
 *           --late-ms is 0), connect, report the outcome
 *   misuse  one process, two loopback pairs: double, foreign and wild
 *           deregMr, and test() of a completed request, each must be refused
 *   ring    --rank R --nranks N: listen (DIR/handle.R), connect to rank R+1,
 *           accept rank R-1; each step receives from R-1 and sends to R+1
 *           once the step before came in (stats: "ok", "idle", "hang")
 *
 * --first-size makes message 0 that many bytes (at most --size), the rest
 * --size: a small message that passes before a large one that stalls.
 * --pace-us sleeps between passes (an endless stream that leaves the CPU to
 * the other scenarios); --late-ms sleeps before the first operation (a rank
 * busy elsewhere). --nofile N sets RLIMIT_NOFILE to the descriptors open after init plus N
 * before any connection: a process that runs out of them. --idle-after N
 * stops posting and testing after N messages (status "idle"), the process
 * alive: a caller that did not enter the next collective. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "tools/netload.h"

#define MAX_WINDOW 8

static struct {
  const char *role, *mode, *dir;
  size_t size, first_size;
  long long count;
  int window, dev, nofile, max_seconds, pace_us, late_ms, idle_after, rank, nranks;
} opt = {"recv", "stream", ".", 1 << 20, 0, 0, 4, 0, 0, 300, 0, 0};

static struct netload nl;

/* The longest call into the plugin, as NCCL's proxy thread would see it:
 * wall clock (on a loaded host mostly the scheduler's) and the calling
 * thread's CPU time (the plugin's own work). */
static long long call_wall_max_ns, call_cpu_max_ns;

static long long clock_ns(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void call_start(long long k[2]) {
  k[0] = clock_ns(CLOCK_MONOTONIC);
  k[1] = clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static void call_stop(const long long k[2]) {
  long long wall = clock_ns(CLOCK_MONOTONIC) - k[0], cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - k[1];
  if (wall > call_wall_max_ns) call_wall_max_ns = wall;
  if (cpu > call_cpu_max_ns) call_cpu_max_ns = cpu;
}
static char first_warn[1024], last_warn[1024];
static bool is_capturing; /* keep WARNs from now on */

static long long ms_now(void) { return clock_mono_ns() / 1000000; }

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
  if (level != NCCL_LOG_WARN || !is_capturing) return;
  if (!first_warn[0]) snprintf(first_warn, sizeof(first_warn), "%s", msg);
  snprintf(last_warn, sizeof(last_warn), "%s", msg);
}

static const char *code_name(int r) {
  static const char *const names[] = {
    "ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
    "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress"};
  return r >= 0 && r < 8 ? names[r] : "unknown";
}

static void json_str(const char *s) {
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') printf("\\%c", *s);
    else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
    else putchar(*s);
  }
  putchar('"');
}

struct outcome {
  const char *status;
  int code;
  long long msgs, bytes;
  bool verified;
  const char *note;
};

static void report(const struct outcome *o) {
  printf("RESULT {\"role\":\"%s\",\"mode\":\"%s\",\"status\":\"%s\",\"code\":%d,\"code_name\":",
         opt.role, opt.mode, o->status, o->code);
  json_str(code_name(o->code));
  printf(",\"t_ms\":%lld,\"msgs\":%lld,\"bytes\":%lld,\"verified\":%s,\"warn\":", ms_now(), o->msgs,
         o->bytes, o->verified ? "true" : "false");
  json_str(last_warn);
  printf(",\"first_warn\":");
  json_str(first_warn);
  printf(",\"note\":");
  json_str(o->note ? o->note : "");
  printf(",\"call_max_us\":%lld,\"call_max_cpu_us\":%lld}\n", call_wall_max_ns / 1000,
         call_cpu_max_ns / 1000);
  fflush(stdout);
}

/* The runner closes our stdin when both sides have reported. */
static void wait_for_runner(void) {
  char b[64];
  while (read(0, b, sizeof(b)) > 0) {
  }
}

static void fill(uint8_t *p, size_t n, unsigned long long seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; i++) {
    if (i % 8 == 0) x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = (uint8_t)(x >> (8 * (i % 8)));
  }
}

static bool check(const uint8_t *p, size_t n, unsigned long long seed) {
  static uint8_t *want;
  static size_t cap;
  if (cap < n) free(want), want = malloc(n), cap = n;
  fill(want, n, seed);
  return !memcmp(p, want, n);
}

static int write_file(const char *name, const void *buf, size_t len) {
  char tmp[4096], path[4096];
  snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", opt.dir, name);
  snprintf(path, sizeof(path), "%s/%s", opt.dir, name);
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(buf, 1, len, f) != len) return -1;
  fclose(f);
  return rename(tmp, path);
}

/* Waits (bounded) for the other side's file. */
static int read_file(const char *name, void *buf, size_t len, int timeout_ms) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", opt.dir, name);
  for (long long end = ms_now() + timeout_ms; ms_now() < end; usleep(10000)) {
    FILE *f = fopen(path, "rb");
    if (!f) continue;
    size_t n = fread(buf, 1, len, f);
    fclose(f);
    if (n == len) return 0;
  }
  return -1;
}

static void limit_descriptors(void) {
  if (!opt.nofile) return;
  int open_now = 0;
  for (int fd = 0; fd < 4096; fd++) open_now += fcntl(fd, F_GETFD) != -1;
  struct rlimit rl = {(rlim_t)(open_now + opt.nofile), (rlim_t)(open_now + opt.nofile)};
  setrlimit(RLIMIT_NOFILE, &rl);
  fprintf(stderr, "[%s] RLIMIT_NOFILE %d (%d open)\n", opt.role, open_now + opt.nofile, open_now);
}

/* ---- setup ---- */

static int accept_comm(void *lc, void **rc) {
  int r = 0;
  for (long long end = ms_now() + opt.max_seconds * 1000LL; !*rc && !r && ms_now() < end;) {
    r = netload_accept(&nl, lc, rc);
    if (!r && !*rc) usleep(200);
  }
  return r ? r : (*rc ? 0 : -1);
}

static int connect_comm(const void *handle, void **sc) {
  char h[NCCL_NET_HANDLE_MAXSIZE];
  memcpy(h, handle, sizeof(h));
  int r = 0;
  for (long long end = ms_now() + opt.max_seconds * 1000LL; !*sc && !r && ms_now() < end;) {
    r = netload_connect(&nl, opt.dev, h, sc);
    if (!r && !*sc) usleep(200);
  }
  return r ? r : (*sc ? 0 : -1);
}

/* ---- stream ---- */

static size_t msg_size(long long idx) {
  return idx == 0 && opt.first_size ? opt.first_size : opt.size;
}

struct slot {
  uint8_t *buf;
  void *mh, *req;
  long long idx;
};

/* One pass over the window: post what is free, test what is posted. 0, or
 * the failing call's result; *bad set when a receive is wrong. */
static int stream_pass(void *comm, bool is_send, struct slot *s, long long *posted, long long *done,
                       bool *bad) {
  for (int i = 0; i < opt.window; i++) {
    struct slot *w = &s[i];
    int r = 0;
    long long k[2];
    if (!w->req && (!opt.count || *posted < opt.count)) {
      int tag = 1;
      if (is_send) {
        fill(w->buf, msg_size(*posted), (unsigned long long)*posted);
        call_start(k);
        r = netload_isend(&nl, comm, w->buf, msg_size(*posted), tag, w->mh, &w->req);
        call_stop(k);
      } else {
        size_t cap = opt.size;
        void *p = w->buf;
        call_start(k);
        r = netload_irecv(&nl, comm, 1, &p, &cap, &tag, &w->mh, &w->req);
        call_stop(k);
      }
      if (r) return r;
      if (w->req) w->idx = (*posted)++;
    }
    if (!w->req) continue;
    int fin = 0, size = -1;
    call_start(k);
    r = netload_test(&nl, w->req, &fin, &size);
    call_stop(k);
    if (r) return r;
    if (!fin) continue;
    w->req = NULL;
    if (!is_send && ((size_t)size != msg_size(w->idx) ||
                     !check(w->buf, msg_size(w->idx), (unsigned long long)w->idx)))
      *bad = true;
    if (++*done == 1) printf("STARTED\n"), fflush(stdout);
  }
  return 0;
}

static void stream(void *comm, bool is_send) {
  struct slot s[MAX_WINDOW] = {{0}};
  struct outcome o = {"ok", 0, 0, 0, true, NULL};
  for (int i = 0; i < opt.window; i++) {
    s[i].buf = malloc(opt.size);
    netload_reg_mr(&nl, comm, s[i].buf, opt.size, NCCL_PTR_HOST, &s[i].mh);
  }
  long long posted = 0, end = ms_now() + opt.max_seconds * 1000LL;
  bool bad = false;
  is_capturing = true;
  /* Busy elsewhere before the first operation, as a rank still computing:
   * the plugin's own thread must keep answering for this process. */
  if (opt.late_ms) usleep((useconds_t)opt.late_ms * 1000);
  while (!opt.count || o.msgs < opt.count) {
    int r = stream_pass(comm, is_send, s, &posted, &o.msgs, &bad);
    if (bad) {
      o.status = "corrupt", o.verified = false;
      break;
    }
    if (r) {
      o.status = "error", o.code = r;
      break;
    }
    if (ms_now() > end) {
      o.status = "hang";
      break;
    }
    if (opt.pace_us) usleep((useconds_t)opt.pace_us);
    if (opt.idle_after && o.msgs >= opt.idle_after) {
      o.status = "idle"; /* a caller that stops posting and testing, its process alive */
      break;
    }
  }
  o.bytes = o.msgs * (long long)opt.size;
  o.verified = !bad && !is_send;
  report(&o);
  wait_for_runner();
  for (int i = 0; i < opt.window; i++) netload_dereg_mr(&nl, comm, s[i].mh);
  if (is_send) netload_close_send(&nl, comm);
  else netload_close_recv(&nl, comm);
}

static int run_stream(void) {
  bool is_send = !strcmp(opt.role, "send");
  void *lc = NULL, *comm = NULL;
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  struct outcome o = {"error", 0, 0, 0, false, NULL};
  is_capturing = true; /* setup failures are outcomes too */
  limit_descriptors();
  if (is_send) {
    if (read_file("handle", handle, sizeof(handle), opt.max_seconds * 1000)) {
      o.note = "no handle from the other side";
      o.code = -1;
    } else o.code = connect_comm(handle, &comm);
  } else {
    o.code = netload_listen(&nl, opt.dev, handle, &lc);
    if (!o.code && write_file("handle", handle, sizeof(handle))) o.code = -1;
    if (!o.code) o.code = accept_comm(lc, &comm);
    if (lc) netload_close_listen(&nl, lc); /* a failed accept leaves no one listening */
  }
  if (!comm) {
    report(&o);
    wait_for_runner();
    return 0;
  }
  first_warn[0] = last_warn[0] = 0;
  stream(comm, is_send);
  return 0;
}

/* ---- stale handle ---- */

static int run_stale(void) {
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE], stale[NCCL_NET_HANDLE_MAXSIZE];
  struct outcome o = {"ok", 0, 0, 0, false, NULL};
  void *lc = NULL, *comm = NULL;
  is_capturing = true;
  if (!strcmp(opt.role, "recv")) {
    o.code = netload_listen(&nl, opt.dev, handle, &lc);
    memcpy(stale, handle, sizeof(stale));
    stale[16] ^= 0x5a; /* the nonce: a listen that is not open */
    if (!o.code)
      write_file("stale", stale, sizeof(stale)), write_file("handle", handle, sizeof(handle));
    if (!o.code) o.code = accept_comm(lc, &comm);
    if (o.code) o.status = "error";
    o.msgs = comm != NULL;
  } else {
    if (read_file("stale", stale, sizeof(stale), 30000) ||
        read_file("handle", handle, sizeof(handle), 30000))
      return 2;
    long long t0 = ms_now();
    o.code = connect_comm(stale, &comm);
    char note[64];
    snprintf(note, sizeof(note), "refused after %lld ms", ms_now() - t0);
    o.note = note;
    o.status = o.code ? "error" : "ok";
    report(&o); /* the stale connect's outcome */
    void *good = NULL;
    int r = connect_comm(handle, &good);
    fprintf(stderr, "[send] connect with the real handle: %d\n", r);
    if (good) netload_close_send(&nl, good);
    wait_for_runner();
    return 0;
  }
  report(&o);
  wait_for_runner();
  if (comm) netload_close_recv(&nl, comm);
  if (lc) netload_close_listen(&nl, lc);
  return 0;
}

/* ---- a listener whose process is gone ---- */

static int run_gone(void) {
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE], b[1];
  struct outcome o = {"error", 0, 0, 0, false, NULL};
  void *lc = NULL, *comm = NULL;
  is_capturing = true;
  if (!strcmp(opt.role, "recv")) {
    if (netload_listen(&nl, opt.dev, handle, &lc) || write_file("handle", handle, sizeof(handle)))
      return 2;
    if (opt.late_ms) usleep((useconds_t)opt.late_ms * 1000); /* never accepts */
    else write_file("gone", b, 0);
    fflush(stdout);
    _exit(0); /* a rank that dies: no close, no finalize */
  }
  if (read_file("handle", handle, sizeof(handle), 30000) ||
      (!opt.late_ms && read_file("gone", b, 0, 30000)))
    return 2;
  if (!opt.late_ms) usleep(300000); /* the listener's process has exited */
  long long t0 = ms_now();
  o.code = connect_comm(handle, &comm);
  char note[64];
  snprintf(note, sizeof(note), "failed after %lld ms", ms_now() - t0);
  o.note = note;
  if (!o.code && comm) o.status = "ok";
  report(&o);
  if (comm) netload_close_send(&nl, comm);
  wait_for_runner();
  return 0;
}

/* ---- ABI misuse ---- */

static int refused(int r, const char *needle, int *nbad, const char *what) {
  bool ok = r != ncclSuccess && strstr(last_warn, needle);
  if (!ok) fprintf(stderr, "[misuse] %s: result %d, WARN: %s\n", what, r, last_warn);
  *nbad += !ok;
  last_warn[0] = 0;
  return ok;
}

static int run_misuse(void) {
  void *sc1, *rc1, *sc2, *rc2, *m1 = NULL, *m2 = NULL, *sr = NULL, *rr = NULL;
  char buf[256], in[256];
  int nbad = 0, n = 0, done = 0;
  struct outcome o = {"ok", 0, 0, 0, true, NULL};
  if (netload_connect_pair(&nl, opt.dev, &sc1, &rc1, 20000) ||
      netload_connect_pair(&nl, opt.dev, &sc2, &rc2, 20000))
    return 2;
  is_capturing = true;
  netload_reg_mr(&nl, sc1, buf, sizeof(buf), NCCL_PTR_HOST, &m1);
  netload_reg_mr(&nl, sc2, buf, sizeof(buf), NCCL_PTR_HOST, &m2);
  netload_dereg_mr(&nl, sc1, m1);
  n++, refused(netload_dereg_mr(&nl, sc1, m1), "deregistered already", &nbad, "double deregMr");
  n++, refused(netload_dereg_mr(&nl, sc1, m2), "registration of", &nbad, "foreign deregMr");
  void *block = malloc(64);
  volatile uintptr_t freed = (uintptr_t)block;
  free(block);
  void *wild[] = {(void *)0x10, (void *)freed, buf, (void *)0xfffffffffffffff0ull};
  for (int i = 0; i < 4; i++)
    n++, refused(netload_dereg_mr(&nl, sc1, wild[i]), "not a registration of this plugin", &nbad,
                 "wild deregMr");
  netload_reg_mr(&nl, rc1, in, sizeof(in), NCCL_PTR_HOST, &m1);
  size_t cap = sizeof(in);
  int tag = 1, fs = 0, fr = 0;
  void *p = in;
  netload_irecv(&nl, rc1, 1, &p, &cap, &tag, &m1, &rr);
  for (long long end = ms_now() + 10000; !sr && ms_now() < end;)
    netload_isend(&nl, sc1, buf, 0, 1, NULL, &sr);
  for (long long end = ms_now() + 10000; (!fs || !fr) && ms_now() < end;) {
    if (!fs && sr) netload_test(&nl, sr, &fs, NULL);
    if (!fr && rr) netload_test(&nl, rr, &fr, NULL);
  }
  n++, refused(netload_test(&nl, sr, &done, NULL), "not a live request", &nbad, "stale test");
  n++, refused(netload_test(&nl, (void *)0x4242, &done, NULL), "not a live request", &nbad,
               "wild test");
  netload_dereg_mr(&nl, rc1, m1);
  netload_dereg_mr(&nl, sc2, m2);
  o.msgs = n;
  if (nbad) o.status = "error", o.verified = false, o.note = "a misuse was not refused by name";
  report(&o);
  netload_close_send(&nl, sc1), netload_close_recv(&nl, rc1);
  netload_close_send(&nl, sc2), netload_close_recv(&nl, rc2);
  return 0;
}

/* ---- ring ---- */

/* One ring step: receive message k from the previous rank; send message k
 * to the next once message k-1 came (a token per rank goes round, so one
 * stalled rank stalls every other one behind it). */
static int ring_wait(void *req, bool *is_done) {
  int fin = 0, size = -1, r = netload_test(&nl, req, &fin, &size);
  *is_done = fin;
  return r;
}

static int run_ring(void) {
  char name[32], handle[NCCL_NET_HANDLE_MAXSIZE], next[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL, *sc = NULL, *rc = NULL;
  struct outcome o = {"error", 0, 0, 0, false, NULL};
  is_capturing = true;
  snprintf(name, sizeof(name), "handle.%d", opt.rank);
  if ((o.code = netload_listen(&nl, opt.dev, handle, &lc)) ||
      write_file(name, handle, sizeof(handle)))
    return report(&o), 1;
  snprintf(name, sizeof(name), "handle.%d", (opt.rank + 1) % opt.nranks);
  if (read_file(name, next, sizeof(next), opt.max_seconds * 1000)) return report(&o), 1;
  for (long long end = ms_now() + opt.max_seconds * 1000LL; (!sc || !rc) && ms_now() < end;) {
    if (!sc && (o.code = netload_connect(&nl, opt.dev, next, &sc))) return report(&o), 1;
    if (!rc && (o.code = netload_accept(&nl, lc, &rc))) return report(&o), 1;
    usleep(200);
  }
  uint8_t *sbuf = malloc(opt.size), *rbuf = malloc(opt.size);
  void *smh = NULL, *rmh = NULL, *sreq = NULL, *rreq = NULL;
  netload_reg_mr(&nl, sc, sbuf, opt.size, NCCL_PTR_HOST, &smh);
  netload_reg_mr(&nl, rc, rbuf, opt.size, NCCL_PTR_HOST, &rmh);
  o.status = "ok";
  long long sent = 0, got = 0, end = ms_now() + opt.max_seconds * 1000LL;
  while ((!opt.count || got < opt.count) && !o.code) {
    if (opt.idle_after && got >= opt.idle_after) {
      o.status = "idle"; /* the caller stops, the process lives */
      break;
    }
    int tag = 1;
    size_t cap = opt.size;
    void *p = rbuf;
    bool is_done = false;
    if (!sreq && sent <= got && (!opt.count || sent < opt.count))
      o.code = netload_isend(&nl, sc, sbuf, opt.size, tag, smh, &sreq), sent += sreq != NULL;
    if (!o.code && !rreq) o.code = netload_irecv(&nl, rc, 1, &p, &cap, &tag, &rmh, &rreq);
    if (!o.code && sreq && !(o.code = ring_wait(sreq, &is_done)) && is_done) sreq = NULL;
    if (!o.code && rreq && !(o.code = ring_wait(rreq, &is_done)) && is_done) {
      rreq = NULL;
      if (++got == 1) printf("STARTED\n"), fflush(stdout);
    }
    if (ms_now() > end) o.status = "hang", o.code = -1;
    if (opt.pace_us) usleep((useconds_t)opt.pace_us);
  }
  if (o.code > 0) o.status = "error";
  o.msgs = got;
  report(&o);
  wait_for_runner();
  return 0;
}

static int usage(void) {
  fprintf(stderr,
          "usage: fault_side --role recv|send --dir DIR [--mode stream|stale|gone|misuse]\n"
          "       [--size BYTES] [--first-size BYTES] [--count N] [--window 1..8]\n"
          "       [--dev N] [--nofile N] [--max-seconds S] [--pace-us US] [--late-ms MS]\n");
  return 2;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i += 2) { /* --option value pairs */
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return usage();
    if (!strcmp(a, "--role")) opt.role = v;
    else if (!strcmp(a, "--mode")) opt.mode = v;
    else if (!strcmp(a, "--dir")) opt.dir = v;
    else if (!strcmp(a, "--size")) opt.size = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--first-size")) opt.first_size = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--count")) opt.count = atoll(v);
    else if (!strcmp(a, "--window")) opt.window = atoi(v);
    else if (!strcmp(a, "--dev")) opt.dev = atoi(v);
    else if (!strcmp(a, "--nofile")) opt.nofile = atoi(v);
    else if (!strcmp(a, "--max-seconds")) opt.max_seconds = atoi(v);
    else if (!strcmp(a, "--pace-us")) opt.pace_us = atoi(v);
    else if (!strcmp(a, "--late-ms")) opt.late_ms = atoi(v);
    else if (!strcmp(a, "--idle-after")) opt.idle_after = atoi(v);
    else if (!strcmp(a, "--rank")) opt.rank = atoi(v);
    else if (!strcmp(a, "--nranks")) opt.nranks = atoi(v);
    else return usage();
  }
  if (opt.window < 1 || opt.window > MAX_WINDOW || !opt.size || opt.first_size > opt.size)
    return usage();
  char err[512];
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (netload_open(&nl, NULL, 11, err, sizeof(err))) {
    fprintf(stderr, "cannot load the plugin: %s\n", err);
    return 2;
  }
  netload_init(&nl, logger);
  int ndev = 0;
  netload_devices(&nl, &ndev);
  if (opt.dev >= ndev) {
    fprintf(stderr, "device %d does not exist (%d devices)\n", opt.dev, ndev);
    return 2;
  }
  int rc = !strcmp(opt.mode, "stale")    ? run_stale()
           : !strcmp(opt.mode, "gone")   ? run_gone()
           : !strcmp(opt.mode, "misuse") ? run_misuse()
           : !strcmp(opt.mode, "ring")   ? run_ring()
                                         : run_stream();
  netload_finalize(&nl);
  return rc;
}
