/* SPDX-License-Identifier: Apache-2.0 */
#include "common/events.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/json_escape.h"
#include "common/knobs.h"
#include "common/log.h"
#include "common/version.h"

static pthread_once_t ev_once = PTHREAD_ONCE_INIT;
static int ev_fd = -1;
static atomic_llong counters[C_COUNTERS];
static const char *const counter_names[C_COUNTERS] = {
  "listens",          "send_comms",          "recv_comms",       "comms_ib",
  "comms_tcp",        "fallbacks",           "bytes_sent",       "bytes_received",
  "connect_failures", "refused_connections", "hello_mismatches", "data_errors",
};

/* %h = hostname, %p = pid, as in NCCL_DEBUG_FILE. */
static void expand_path(const char *in, char *out, size_t cap) {
  size_t o = 0;
  for (const char *p = in; *p && o + 1 < cap; p++) {
    if (p[0] == '%' && (p[1] == 'h' || p[1] == 'p')) {
      char tmp[128] = {0};
      if (p[1] == 'h') gethostname(tmp, sizeof(tmp) - 1);
      else snprintf(tmp, sizeof(tmp), "%d", (int)getpid());
      o += snprintf(out + o, cap - o, "%s", tmp);
      if (o >= cap) o = cap - 1;
      p++;
    } else {
      out[o++] = *p;
    }
  }
  out[o] = 0;
}

/* Private by default (0600: events name hosts, addresses and settings), a
 * symbolic link never followed (a link planted at a predictable path would
 * redirect our writes), and nothing but a regular file; a file the user
 * made beforehand keeps its own mode. Non-blocking open: a FIFO there must
 * not hang the caller. */
static void ev_open(void) {
  const char *path = knob_str(K_DIAG_LOG_FILE);
  if (!path || !*path) return;
  char full[4096];
  expand_path(path, full, sizeof(full));
  int fd = open(full, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
  int err = fd < 0 ? errno : 0;
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
    close(fd);
    fd = -1;
    err = EINVAL;
  }
  if (fd >= 0) {
    fcntl(fd, F_SETFL, O_APPEND); /* blocking writes from here on */
    ev_fd = fd;
    return;
  }
  if (err == ELOOP)
    WARN("cannot open the event file NCCL_DIAG_LOG_FILE=%s: it is a symbolic link, which is not "
         "followed; no events are written. Point it at a file in a directory only you can write",
         full);
  else if (err == EINVAL || err == ENXIO) /* ENXIO: a FIFO nobody reads */
    WARN("cannot open the event file NCCL_DIAG_LOG_FILE=%s: it is not a regular file; no events "
         "are written. Point it at a file in a directory only you can write",
         full);
  else
    WARN("cannot open the event file NCCL_DIAG_LOG_FILE=%s: %s; no events are written. "
         "Point it at a writable file",
         full, strerror(err));
}

int ev_enabled(void) {
  pthread_once(&ev_once, ev_open);
  return ev_fd >= 0;
}

size_t json_escape(char *dst, size_t cap, const char *src) {
  size_t o = 0;
  if (!cap) return 0;
  for (const unsigned char *p = (const unsigned char *)(src ? src : ""); *p;) {
    char add[8];
    size_t took = json_escape_char(p, add), n = strlen(add);
    if (o + n + 1 > cap) break;
    memcpy(dst + o, add, n);
    o += n;
    p += took;
  }
  dst[o] = 0;
  return o;
}

static void ev_put(struct ev *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ev_put(struct ev *e, const char *fmt, ...) {
  if (!e->on || e->len >= sizeof(e->buf)) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(e->buf + e->len, sizeof(e->buf) - e->len, fmt, ap);
  va_end(ap);
  if (n > 0) e->len += (size_t)n;
  if (e->len >= sizeof(e->buf)) e->len = sizeof(e->buf) - 1;
}

static void ev_key(struct ev *e, const char *key) {
  char k[128];
  json_escape(k, sizeof(k), key);
  ev_put(e, ",\"%s\":", k);
}

void ev_begin(struct ev *e, const char *type) {
  e->len = 0;
  e->on = ev_enabled();
  if (!e->on) return;
  struct timeval tv;
  gettimeofday(&tv, NULL);
  char host[128] = {0};
  gethostname(host, sizeof(host) - 1);
  ev_put(e, "{\"ts\":%ld.%06ld", (long)tv.tv_sec, (long)tv.tv_usec);
  ev_str(e, "event", type);
  ev_str(e, "schema", EV_SCHEMA);
  ev_str(e, "version", DIAG_VERSION);
  ev_str(e, "host", host);
  ev_int(e, "pid", getpid());
}

void ev_str(struct ev *e, const char *key, const char *val) {
  if (!e->on) return;
  char v[2048];
  json_escape(v, sizeof(v), val);
  ev_key(e, key);
  ev_put(e, "\"%s\"", v);
}

void ev_int(struct ev *e, const char *key, long long v) {
  if (!e->on) return;
  ev_key(e, key);
  ev_put(e, "%lld", v);
}

void ev_dbl(struct ev *e, const char *key, double v) {
  if (!e->on) return;
  ev_key(e, key);
  ev_put(e, "%.3f", v);
}

void ev_bool(struct ev *e, const char *key, int v) {
  if (!e->on) return;
  ev_key(e, key);
  ev_put(e, "%s", v ? "true" : "false");
}

/* One write() per event with O_APPEND keeps lines whole across threads and
 * processes sharing the file. */
void ev_end(struct ev *e) {
  if (!e->on) return;
  if (e->len + 2 >= sizeof(e->buf)) e->len = sizeof(e->buf) - 3;
  e->buf[e->len++] = '}';
  e->buf[e->len++] = '\n';
  ssize_t r = write(ev_fd, e->buf, e->len);
  (void)r;
  e->on = 0;
}

void ev_count(enum ev_counter c, int64_t delta) { atomic_fetch_add(&counters[c], delta); }

int64_t ev_counter_value(enum ev_counter c) { return atomic_load(&counters[c]); }

void ev_census(const char *why) {
  struct ev e;
  ev_begin(&e, "census");
  ev_str(&e, "why", why);
  for (int i = 0; i < C_COUNTERS; i++) ev_int(&e, counter_names[i], atomic_load(&counters[i]));
  ev_end(&e);
}

/* The library is linked -z nodelete, so this runs at process exit even when
 * NCCL dlclosed us earlier. */
__attribute__((destructor)) static void ev_census_at_exit(void) {
  if (ev_fd >= 0) ev_census("exit");
}
