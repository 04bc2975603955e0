#include "topo/sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/knobs.h"

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

void sysfs_path(char *out, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vpath(out, cap, fmt, ap);
  va_end(ap);
}

static int read_file(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = read(fd, buf, cap - 1);
  int err = n < 0 ? -errno : 0;
  close(fd);
  if (err) return err;
  buf[n] = 0;
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) buf[--n] = 0;
  return 0;
}

int sysfs_read_str(char *buf, size_t cap, const char *fmt, ...) {
  char path[PATH_MAX];
  va_list ap;
  va_start(ap, fmt);
  vpath(path, sizeof(path), fmt, ap);
  va_end(ap);
  buf[0] = 0;
  return read_file(path, buf, cap);
}

int sysfs_read_long(long *out, const char *fmt, ...) {
  char path[PATH_MAX], buf[64];
  va_list ap;
  va_start(ap, fmt);
  vpath(path, sizeof(path), fmt, ap);
  va_end(ap);
  int r = read_file(path, buf, sizeof(buf));
  if (r) return r;
  char *end;
  errno = 0;
  long v = strtol(buf, &end, 0);
  if (errno || end == buf) return -EINVAL;
  *out = v;
  return 0;
}

int sysfs_realpath(char *out, size_t cap, const char *fmt, ...) {
  char path[PATH_MAX], real[PATH_MAX];
  va_list ap;
  va_start(ap, fmt);
  vpath(path, sizeof(path), fmt, ap);
  va_end(ap);
  if (!realpath(path, real)) return -errno;
  if (strlen(real) >= cap) return -ENAMETOOLONG;
  strcpy(out, real);
  return 0;
}

int sysfs_exists(const char *fmt, ...) {
  char path[PATH_MAX];
  va_list ap;
  va_start(ap, fmt);
  vpath(path, sizeof(path), fmt, ap);
  va_end(ap);
  return access(path, F_OK) == 0;
}
