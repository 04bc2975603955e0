/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/json_dest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool json_dest_stray(const char *prev, const char *arg, char *why, size_t cap) {
  if (!prev || strcmp(prev, "--json") || arg[0] == '-') return false;
  snprintf(why, cap,
           "unexpected argument '%s' after --json: --json=%s writes the JSON to that file, "
           "--json alone to stdout",
           arg, arg);
  return true;
}

const char *json_dest_name(const struct json_dest *d) { return d->path ? d->path : "stdout"; }

int json_dest_open(struct json_dest *d, char *why, size_t cap) {
  if (!d->is_set) return 0;
  if (!d->path) {
    d->f = stdout;
    return 0;
  }
  /* 0600 for a new file, and a symbolic link not followed: one planted at
   * the path would redirect the report. */
  int fd = open(d->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0 && !(d->f = fdopen(fd, "w"))) close(fd);
  if (d->f) return 0;
  int e = errno;
  if (e == ELOOP)
    snprintf(why, cap,
             "cannot write the JSON to %s: it is a symbolic link, which is not followed; name "
             "the file itself, or give --json alone for stdout",
             d->path);
  else
    snprintf(why, cap,
             "cannot write the JSON to %s: %s; name a file in a writable folder, or give --json "
             "alone for stdout",
             d->path, strerror(e));
  return e;
}

int json_dest_close(struct json_dest *d, char *why, size_t cap) {
  if (!d->f) return 0;
  errno = 0;
  int e = fflush(d->f) || ferror(d->f) ? (errno ? errno : EIO) : 0;
  if (d->f != stdout && fclose(d->f) && !e) e = errno ? errno : EIO;
  d->f = NULL;
  if (e) snprintf(why, cap, "cannot write the JSON to %s: %s", json_dest_name(d), strerror(e));
  return e;
}
