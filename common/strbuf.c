/* SPDX-License-Identifier: Apache-2.0 */
#include "common/strbuf.h"

#include <stdarg.h>
#include <stdio.h>

size_t strbuf_cat(char *buf, size_t cap, size_t o, const char *fmt, ...) {
  if (o >= cap) return o;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + o, cap - o, fmt, ap);
  va_end(ap);
  return n < 0 ? o : o + (size_t)n;
}
