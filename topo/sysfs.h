/* SPDX-License-Identifier: Apache-2.0 */
/* Reads under the sysfs root (NCCL_DIAG_SYSFS_ROOT, default /sys), so a
 * fixture host folder stands in for a real machine. Paths are relative to
 * the root ("class/net/eth0/speed"). Functions return 0 or an errno. */
#ifndef DIAG_TOPO_SYSFS_H
#define DIAG_TOPO_SYSFS_H

#include <stddef.h>

const char *sysfs_root(void);
/* Overrides the root for this process (tools and tests). NULL = knob. */
void sysfs_set_root(const char *root);

int sysfs_read_str(char *buf, size_t cap, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
int sysfs_read_long(long *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* realpath of root/rel, written in full (it is what NCCL's topology reads). */
int sysfs_realpath(char *out, size_t cap, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
int sysfs_exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The entries of directory root/rel (no "." or ".."), in version order
 * (mlx5_2 before mlx5_10), at most max; *count says how many. */
#define SYSFS_NAME_MAX 64
int sysfs_list(char (*names)[SYSFS_NAME_MAX], int max, int *count, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
/* Full path of root/rel. */
void sysfs_path(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
