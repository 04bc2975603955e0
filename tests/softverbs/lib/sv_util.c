/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: small helpers (time, environment, parsing, logging). */
#include "sv.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

uint64_t sv_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Debug log to stderr when SOFTVERBS_DEBUG is set; keeps errno for callers. */
void sv_log(const char *fmt, ...) {
  int saved = errno;
  if (sv_env("SOFTVERBS_DEBUG")) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "softverbs[%d]: %s\n", (int)getpid(), line);
  }
  errno = saved;
}

const char *sv_env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

long sv_env_long(const char *name, long def, long min, long max) {
  const char *v = sv_env(name);
  if (!v) return def;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 0);
  if (errno || *end || x < min || x > max) {
    fprintf(stderr, "softverbs: ignoring %s=%s (expected an integer in %ld..%ld)\n", name, v, min,
            max);
    return def;
  }
  return x;
}

double sv_env_double(const char *name, double def) {
  const char *v = sv_env(name);
  if (!v) return def;
  char *end;
  double x = strtod(v, &end);
  if (*end || !(x > 0)) {
    fprintf(stderr, "softverbs: ignoring %s=%s (expected a positive number)\n", name, v);
    return def;
  }
  return x;
}

static const struct {
  const char *name;
  int value;
} errno_names[] = {
  {"EPERM", EPERM},
  {"ENOENT", ENOENT},
  {"EIO", EIO},
  {"EAGAIN", EAGAIN},
  {"ENOMEM", ENOMEM},
  {"EACCES", EACCES},
  {"EFAULT", EFAULT},
  {"EBUSY", EBUSY},
  {"ENODEV", ENODEV},
  {"EINVAL", EINVAL},
  {"ENOSPC", ENOSPC},
  {"ENOSYS", ENOSYS},
  {"ENODATA", ENODATA},
  {"EPROTO", EPROTO},
  {"EOPNOTSUPP", EOPNOTSUPP},
  {"EADDRNOTAVAIL", EADDRNOTAVAIL},
  {"ENETDOWN", ENETDOWN},
  {"ENETUNREACH", ENETUNREACH},
  {"ECONNRESET", ECONNRESET},
  {"ETIMEDOUT", ETIMEDOUT},
  {"ECONNREFUSED", ECONNREFUSED},
  {"EHOSTUNREACH", EHOSTUNREACH},
};

/* "ETIMEDOUT" or "110"; returns 0 when it is neither. */
int sv_parse_errno(const char *s) {
  if (!s || !*s) return 0;
  if (isdigit((unsigned char)*s)) {
    char *end;
    long v = strtol(s, &end, 10);
    return *end || v <= 0 || v > 4095 ? 0 : (int)v;
  }
  for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
    if (!strcasecmp(s, errno_names[i].name)) return errno_names[i].value;
  return 0;
}

/* Reads a one-line sysfs file without its trailing newline; 0 or an errno. */
int sv_read_text(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = read(fd, buf, len - 1);
  int err = n < 0 ? errno : 0;
  close(fd);
  if (err) return err;
  buf[n] = 0;
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
  return 0;
}

/* A sysfs GID ("fe80:0000:...:3456") is a full IPv6 text form. */
int sv_parse_gid(const char *text, union ibv_gid *gid) {
  return inet_pton(AF_INET6, text, gid->raw) == 1 ? 0 : EINVAL;
}

bool sv_gid_is_zero(const union ibv_gid *gid) {
  for (int i = 0; i < 16; i++)
    if (gid->raw[i]) return false;
  return true;
}

/* The IP address a RoCE GID stands for: IPv4-mapped GIDs are IPv4. */
bool sv_gid_to_addr(const union ibv_gid *gid, struct sockaddr_storage *ss) {
  static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  memset(ss, 0, sizeof *ss);
  if (sv_gid_is_zero(gid)) return false;
  if (!memcmp(gid->raw, mapped, sizeof mapped)) {
    struct sockaddr_in *in = (struct sockaddr_in *)ss;
    in->sin_family = AF_INET;
    memcpy(&in->sin_addr, gid->raw + 12, 4);
  } else {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    in6->sin6_family = AF_INET6;
    memcpy(&in6->sin6_addr, gid->raw, 16);
  }
  return true;
}

static const char *const state_names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

const char *sv_qp_state_name(int state) {
  return state >= 0 && state <= IBV_QPS_ERR ? state_names[state] : "UNKNOWN";
}

int sv_qp_state_parse(const char *s) {
  for (int i = 0; i <= IBV_QPS_ERR; i++)
    if (!strcasecmp(s, state_names[i])) return i;
  return -1;
}
