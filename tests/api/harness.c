/* SPDX-License-Identifier: Apache-2.0 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

const char *netns_recv, *netns_send;
int abi_version = 11;
int transport_ib;
int real_verbs;

#define MAX_SIDE_ENV 16
static const char *side_env[2][MAX_SIDE_ENV];
static int nside_env[2];

void side_env_add(int role, const char *kv) {
  if (nside_env[role] < MAX_SIDE_ENV) side_env[role][nside_env[role]++] = kv;
}

static void apply_env(int role) {
  if (role != ROLE_RECV && role != ROLE_SEND) return;
  for (int i = 0; i < nside_env[role]; i++) {
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", side_env[role][i]);
    char *eq = strchr(buf, '=');
    if (!eq) continue;
    *eq = 0;
    setenv(buf, eq + 1, 1);
  }
}

/* ---- captured log ---- */

#define LOG_MAX 4096
/* One entry per message, as a user reads it: a line that continues the one
 * before ("... ") is joined to it. */
static struct {
  int level;
  char text[4096];
} logbuf[LOG_MAX];
static int nlog;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_echo;
/* NCCL prints the source file a plugin passes: a path of the source tree
 * (transport/ib/data/ib_poll.c), not one relative to a build folder. */
static char bad_file[256];

static void capture(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                    const char *fmt, ...) {
  (void)flags, (void)line;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&log_lock);
  if (file && (file[0] == '/' || !strncmp(file, "../", 3)) && !bad_file[0])
    snprintf(bad_file, sizeof(bad_file), "%s", file);
  const char *cont = strncmp(msg, "NET/diag ... ", 13) ? NULL : msg + 12;
  if (cont && nlog && logbuf[nlog - 1].level == (int)level) {
    size_t len = strlen(logbuf[nlog - 1].text);
    snprintf(logbuf[nlog - 1].text + len, sizeof(logbuf[0].text) - len, "%s", cont);
  } else if (nlog < LOG_MAX) {
    logbuf[nlog].level = level;
    snprintf(logbuf[nlog].text, sizeof(logbuf[nlog].text), "%s", msg);
    nlog++;
  }
  pthread_mutex_unlock(&log_lock);
  if (log_echo)
    printf("#   [%d] %s %s\n", (int)getpid(), level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
}

int log_count(int level, const char *needle) {
  int n = 0;
  pthread_mutex_lock(&log_lock);
  for (int i = 0; i < nlog; i++)
    if ((level < 0 || logbuf[i].level == level) && strstr(logbuf[i].text, needle)) n++;
  pthread_mutex_unlock(&log_lock);
  return n;
}

const char *log_find(int level, const char *needle) {
  const char *r = NULL;
  pthread_mutex_lock(&log_lock);
  for (int i = 0; i < nlog && !r; i++)
    if ((level < 0 || logbuf[i].level == level) && strstr(logbuf[i].text, needle))
      r = logbuf[i].text;
  pthread_mutex_unlock(&log_lock);
  return r;
}

void log_dump(void) {
  pthread_mutex_lock(&log_lock);
  for (int i = 0; i < nlog; i++)
    printf("#   [%d] %s %s\n", (int)getpid(), logbuf[i].level == NCCL_LOG_WARN ? "WARN" : "INFO",
           logbuf[i].text);
  pthread_mutex_unlock(&log_lock);
  fflush(stdout);
}

int warn_leads_with(const char *warn, const char *needle, size_t within) {
  const char *at = warn ? strstr(warn, needle) : NULL;
  return at && (size_t)(at - warn) + strlen(needle) <= within;
}

/* ---- WARN lengths ---- */

/* NCCL formats a message into a 1024-byte line after its own prefix
 * ("host:pid:tid [dev] source:line NCCL WARN "): a WARN is judged with room
 * for that prefix. Every WARN a case logged is measured (a continuation is
 * joined to its first line); the lengths go to a file the suite reads at
 * the end for its summary. */
#define NCCL_PREFIX_ROOM 60
#define WARN_LINE_MAX 1000
static int warn_stats_fd = -1;
static int naccounted;

static void warn_account(void) {
  CHECK(!bad_file[0], "a log line names its source as %s (a build folder's path, not the tree's)",
        bad_file);
  bad_file[0] = 0;
  for (; naccounted < nlog; naccounted++) {
    if (logbuf[naccounted].level != NCCL_LOG_WARN) continue;
    size_t len = strlen(logbuf[naccounted].text) + NCCL_PREFIX_ROOM;
    CHECK(len < WARN_LINE_MAX,
          "a WARN of %zu characters with NCCL's prefix (one NCCL line holds %d): %.200s...", len,
          WARN_LINE_MAX, logbuf[naccounted].text);
    if (warn_stats_fd >= 0) {
      char rec[32];
      int n = snprintf(rec, sizeof(rec), "%zu\n", len);
      if (write(warn_stats_fd, rec, (size_t)n) != n) warn_stats_fd = -1;
    }
  }
}

void warn_stats_begin(void) {
  FILE *f = tmpfile();
  warn_stats_fd = f ? dup(fileno(f)) : -1;
  if (f) fclose(f);
}

static int cmp_size(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

void warn_stats_print(void) {
  static size_t lens[65536];
  size_t n = 0;
  char buf[4096];
  if (warn_stats_fd < 0 || lseek(warn_stats_fd, 0, SEEK_SET)) return;
  FILE *f = fdopen(warn_stats_fd, "r");
  if (!f) return;
  while (n < sizeof(lens) / sizeof(lens[0]) && fgets(buf, sizeof(buf), f))
    lens[n++] = (size_t)strtoul(buf, NULL, 10);
  fclose(f);
  warn_stats_fd = -1;
  if (!n) {
    tap_diag("plugin WARNs: none");
    return;
  }
  qsort(lens, n, sizeof(lens[0]), cmp_size);
  size_t under400 = 0, over = 0;
  for (size_t i = 0; i < n; i++) {
    under400 += lens[i] < 400;
    over += lens[i] >= WARN_LINE_MAX;
  }
  tap_diag("plugin WARNs: %zu, length with NCCL's prefix: min %zu, median %zu, p90 %zu, max %zu; "
           "%zu under 400, %zu of %d or more",
           n, lens[0], lens[n / 2], lens[n * 9 / 10], lens[n - 1], under400, over, WARN_LINE_MAX);
}

void log_clear(void) {
  pthread_mutex_lock(&log_lock);
  warn_account();
  nlog = 0;
  naccounted = 0;
  pthread_mutex_unlock(&log_lock);
}

/* ---- plugin ---- */

int side_open(struct side *s) {
  char err[512];
  log_echo = getenv("API_ECHO_LOG") != NULL;
  ncclProfilerCallback_t prof = s->nl.prof; /* a case's profiler callback, for init */
  if (netload_open(&s->nl, NULL, s->abi, err, sizeof(err))) {
    CHECK(0, "cannot load the plugin: %s", err);
    return -1;
  }
  s->nl.prof = prof;
  s->loaded = 1;
  int r = netload_init(&s->nl, capture);
  CHECK(r == ncclSuccess, "init returned %d (it must never fail)", r);
  return r;
}

void side_close(struct side *s) {
  if (!s->loaded) return;
  int r = netload_finalize(&s->nl);
  CHECK(r == ncclSuccess, "finalize returned %d", r);
  s->loaded = 0;
}

/* ---- control channel ---- */

void ctl_send(struct side *s, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t n = write(s->ctl, p, len);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      printf("#   control channel write failed: the other side died\n");
      fflush(stdout);
      _exit(3);
    }
    p += n;
    len -= (size_t)n;
  }
}

void ctl_recv(struct side *s, void *buf, size_t len) {
  char *p = buf;
  while (len) {
    ssize_t n = read(s->ctl, p, len);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      printf("#   control channel read failed: the other side died or finished early\n");
      fflush(stdout);
      _exit(3);
    }
    p += n;
    len -= (size_t)n;
  }
}

void ctl_sync(struct side *s) {
  char c = 's';
  ctl_send(s, &c, 1);
  ctl_recv(s, &c, 1);
}

void ctl_send_int(struct side *s, long long v) { ctl_send(s, &v, sizeof(v)); }

long long ctl_recv_int(struct side *s) {
  long long v;
  ctl_recv(s, &v, sizeof(v));
  return v;
}

long long ms_now(void) { return clock_mono_ns() / 1000000; }

int pair_recv(struct side *s, void **rc) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL;
  *rc = NULL;
  int r = netload_listen(&s->nl, s->dev, handle, &lc);
  CHECK(r == ncclSuccess && lc, "listen returned %d", r);
  if (r || !lc) {
    ctl_send_int(s, -1);
    return -1;
  }
  ctl_send_int(s, 0);
  ctl_send(s, handle, sizeof(handle));
  long long end = ms_now() + 30000;
  while (!*rc && ms_now() < end) {
    r = netload_accept(&s->nl, lc, rc);
    if (r) break;
    if (!*rc) usleep(100);
  }
  CHECK(r == ncclSuccess && *rc, "accept returned %d, comm %p", r, *rc);
  netload_close_listen(&s->nl, lc);
  return *rc ? 0 : -1;
}

int pair_send(struct side *s, void **sc) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  *sc = NULL;
  if (ctl_recv_int(s) != 0) return -1;
  ctl_recv(s, handle, sizeof(handle));
  long long end = ms_now() + 30000;
  int r = 0;
  while (!*sc && ms_now() < end) {
    r = netload_connect(&s->nl, s->dev, handle, sc);
    if (r) break;
    if (!*sc) usleep(100);
  }
  CHECK(r == ncclSuccess && *sc, "connect returned %d, comm %p", r, *sc);
  return *sc ? 0 : -1;
}

int pair_open(struct side *s, void **comm) {
  return s->role == ROLE_RECV ? pair_recv(s, comm) : pair_send(s, comm);
}

/* ---- data ---- */

void fill_pattern(uint8_t *p, size_t n, unsigned seed) {
  uint32_t x = seed * 2654435761u + 1;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    memcpy(p + i, &x, 4);
  }
  for (; i < n; i++) p[i] = (uint8_t)(seed + i);
}

size_t check_pattern(const uint8_t *p, size_t n, unsigned seed) {
  uint32_t x = seed * 2654435761u + 1;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    if (memcmp(p + i, &x, 4)) {
      const uint8_t *want = (const uint8_t *)&x;
      size_t j = 0;
      while (p[i + j] == want[j]) j++;
      return i + j;
    }
  }
  for (; i < n; i++)
    if (p[i] != (uint8_t)(seed + i)) return i;
  return n;
}

/* NCCL hands test() 64 ints; a grouped receive writes one per buffer. */
int wait_req_sizes(struct side *s, void *req, int *sizes, int n, int timeout_ms) {
  long long end = ms_now() + timeout_ms;
  int done = 0, r;
  int sz[64];
  for (int i = 0; i < 64; i++) sz[i] = -1;
  do {
    r = netload_test(&s->nl, req, &done, sz);
    if (r) return r;
    if (done) break;
    sched_yield();
  } while (ms_now() < end);
  CHECK(done, "request %p not done after %d ms", req, timeout_ms);
  for (int i = 0; sizes && i < n; i++) sizes[i] = sz[i];
  return done ? 0 : -2;
}

int wait_req(struct side *s, void *req, int *size, int timeout_ms) {
  return wait_req_sizes(s, req, size, 1, timeout_ms);
}

int xfer_one(struct side *s, void *comm, size_t size, size_t cap, unsigned seed) {
  size_t alloc = (s->role == ROLE_SEND ? size : cap);
  uint8_t *buf = malloc(alloc ? alloc : 1);
  void *mh = NULL, *req = NULL;
  int r, got = -1, res = 0;
  if (!buf) return -3;
  r = netload_reg_mr(&s->nl, comm, buf, alloc ? alloc : 1, NCCL_PTR_HOST, &mh);
  CHECK(r == 0, "regMr returned %d", r);
  if (s->role == ROLE_SEND) {
    fill_pattern(buf, size, seed);
    long long end = ms_now() + 20000;
    do {
      r = netload_isend(&s->nl, comm, buf, size, 7, mh, &req);
    } while (!r && !req && ms_now() < end);
  } else {
    memset(buf, 0xee, alloc);
    int tag = 7;
    r = netload_irecv(&s->nl, comm, 1, (void **)&buf, &cap, &tag, &mh, &req);
  }
  if (r || !req) {
    res = r ? r : -2;
    goto out;
  }
  res = wait_req(s, req, &got, 60000);
  if (res) goto out;
  if (s->role == ROLE_RECV) {
    CHECK((size_t)got == size, "size %zu: test reported %d bytes", size, got);
    size_t bad = check_pattern(buf, size, seed);
    CHECK(bad == size, "size %zu: data differs from byte %zu on", size, bad);
    if (bad != size || (size_t)got != size) res = -1;
  } else {
    CHECK((size_t)got == size, "send of %zu: test reported %d bytes", size, got);
  }
out:
  netload_dereg_mr(&s->nl, comm, mh);
  free(buf);
  return res;
}

/* ---- namespaces and processes ---- */

int is_root(void) { return geteuid() == 0; }

int shell(const char *fmt, ...) {
  char cmd[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd), fmt, ap);
  va_end(ap);
  char full[1200];
  snprintf(full, sizeof(full), "%s >/dev/null 2>&1", cmd);
  int st = system(full);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int private_netns(const char *hostname) {
  if (unshare(CLONE_NEWNET | (hostname ? CLONE_NEWUTS : 0))) {
    printf("#   unshare: %s\n", strerror(errno));
    return -1;
  }
  if (hostname && sethostname(hostname, strlen(hostname))) return -1;
  return shell("ip link set lo up");
}

int private_uts(const char *hostname) {
  if (unshare(CLONE_NEWUTS) || sethostname(hostname, strlen(hostname))) {
    printf("#   cannot set host name %s: %s\n", hostname, strerror(errno));
    return -1;
  }
  return 0;
}

static int enter_netns(const char *name) {
  if (!name) return 0;
  char path[256];
  snprintf(path, sizeof(path), "/var/run/netns/%s", name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET)) {
    printf("#   cannot enter network namespace %s: %s\n", name, strerror(errno));
    return -1;
  }
  close(fd);
  return 0;
}

static void child(const struct api_case *c, int role, int ctl) {
  struct side s = {role, ctl, abi_version};
  alarm((unsigned)(c->timeout_s ? c->timeout_s : 60) + 5);
  if (c->two_sided && enter_netns(role == ROLE_RECV ? netns_recv : netns_send)) _exit(2);
  apply_env(role == ROLE_SINGLE ? ROLE_RECV : role);
  tap_begin();
  c->run(&s);
  pthread_mutex_lock(&log_lock);
  warn_account();
  pthread_mutex_unlock(&log_lock);
  if (tap_case_failed && !log_echo) {
    printf("#   --- plugin log of the %s side ---\n", role == ROLE_RECV   ? "receiver"
                                                      : role == ROLE_SEND ? "sender"
                                                                          : "");
    log_dump();
  }
  fflush(stdout);
  _exit(tap_case_failed ? 1 : 0);
}

static int reap(pid_t pid, int timeout_s, const char *who) {
  long long end = ms_now() + timeout_s * 1000LL;
  int st;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (ms_now() > end) {
      printf("#   the %s side did not finish in %d s (a hang): killed\n", who, timeout_s);
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return 1;
    }
    usleep(10000);
  }
  if (WIFSIGNALED(st)) {
    printf("#   the %s side died of signal %d\n", who, WTERMSIG(st));
    return 1;
  }
  return WEXITSTATUS(st) != 0;
}

int run_case(const struct api_case *c) {
  int timeout = (c->timeout_s ? c->timeout_s : 60) + 10;
  fflush(stdout);
  if (!c->two_sided) {
    pid_t p = fork();
    if (p == 0) child(c, ROLE_SINGLE, -1);
    return reap(p, timeout, "test");
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return 1;
  pid_t pr = fork();
  if (pr == 0) {
    close(sv[1]);
    child(c, ROLE_RECV, sv[0]);
  }
  pid_t ps = fork();
  if (ps == 0) {
    close(sv[0]);
    child(c, ROLE_SEND, sv[1]);
  }
  close(sv[0]);
  close(sv[1]);
  int f = reap(pr, timeout, "receiver");
  f |= reap(ps, timeout, "sender");
  return f;
}
