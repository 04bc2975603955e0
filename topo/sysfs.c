/* SPDX-License-Identifier: Apache-2.0 */
#include "topo/sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/knobs.h"

static const char *root_override;

void sysfs_set_root(const char *root) { root_override = root; }

const char *sysfs_root(void) {
  if (root_override) return root_override;
  const char *r = knob_str(K_DIAG_SYSFS_ROOT);
  return r && *r ? r : "/sys";
}

static void vpath(char *out, size_t cap, const char *fmt, va_list ap) {
  int n = snprintf(out, cap, "%s/", sysfs_root());
  if (n < 0 || (size_t)n >= cap) n = 0;
  vsnprintf(out + n, cap - (size_t)n, fmt, ap);
}

/* Fills char path[] from the variadic format of the enclosing function. */
#define PATH_FROM_ARGS(path, fmt)                                                                  \
  do {                                                                                             \
    va_list ap_;                                                                                   \
    va_start(ap_, fmt);                                                                            \
    vpath(path, sizeof(path), fmt, ap_);                                                           \
    va_end(ap_);                                                                                   \
  } while (0)

void sysfs_path(char *out, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vpath(out, cap, fmt, ap);
  va_end(ap);
}

static int read_file(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = read(fd, buf, cap - 1);
  int err = n < 0 ? errno : 0;
  close(fd);
  if (err) return err;
  buf[n] = 0;
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
  return 0;
}

int sysfs_read_str(char *buf, size_t cap, const char *fmt, ...) {
  char path[PATH_MAX];
  PATH_FROM_ARGS(path, fmt);
  buf[0] = 0;
  return read_file(path, buf, cap);
}

int sysfs_read_long(long *out, const char *fmt, ...) {
  char path[PATH_MAX], buf[64];
  PATH_FROM_ARGS(path, fmt);
  int r = read_file(path, buf, sizeof(buf));
  if (r) return r;
  char *end;
  errno = 0;
  long v = strtol(buf, &end, 0);
  if (errno || end == buf) return EINVAL;
  *out = v;
  return 0;
}

int sysfs_realpath(char *out, size_t cap, const char *fmt, ...) {
  char path[PATH_MAX], real[PATH_MAX];
  PATH_FROM_ARGS(path, fmt);
  if (!realpath(path, real)) return errno;
  if (strlen(real) >= cap) return ENAMETOOLONG;
  strcpy(out, real);
  return 0;
}

int sysfs_exists(const char *fmt, ...) {
  char path[PATH_MAX];
  PATH_FROM_ARGS(path, fmt);
  return access(path, F_OK) == 0;
}

static int version_order(const void *a, const void *b) { return strverscmp(a, b); }

int sysfs_list(char (*names)[SYSFS_NAME_MAX], int max, int *count, const char *fmt, ...) {
  char path[PATH_MAX];
  PATH_FROM_ARGS(path, fmt);
  *count = 0;
  DIR *d = opendir(path);
  if (!d) return errno;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < max) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (strlen(e->d_name) >= SYSFS_NAME_MAX) continue;
    strcpy(names[n++], e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, SYSFS_NAME_MAX, version_order);
  *count = n;
  return 0;
}
