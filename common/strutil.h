/* SPDX-License-Identifier: Apache-2.0 */
/* Small string helpers: a copy that always terminates and never reads past
 * src's end; the length of one UTF-8 sequence. */
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

/* Bytes of a valid UTF-8 sequence at p (1-4), 0 when invalid (overlong,
 * a surrogate, past U+10FFFF, cut short). */
static inline int utf8_len(const unsigned char *p) {
  if (p[0] < 0x80) return 1;
  int n = p[0] >= 0xf0 && p[0] <= 0xf4  ? 4
          : p[0] >= 0xe0 && p[0] < 0xf0 ? 3
          : p[0] >= 0xc2 && p[0] < 0xe0 ? 2
                                        : 0;
  if (!n) return 0;
  for (int i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  /* overlong 3/4-byte forms, surrogates and code points past U+10FFFF */
  if (n == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0))) return 0;
  if (n == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))) return 0;
  return n;
}

#endif
