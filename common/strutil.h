/* SPDX-License-Identifier: Apache-2.0 */
/* String copy that always terminates and never reads past src's end. */
#ifndef DIAG_COMMON_STRUTIL_H
#define DIAG_COMMON_STRUTIL_H

#include <stddef.h>
#include <string.h>

static inline void scopy(char *dst, size_t cap, const char *src) {
  if (!cap) return;
  size_t n = strnlen(src, cap - 1);
  memmove(dst, src, n);
  dst[n] = 0;
}

#endif
