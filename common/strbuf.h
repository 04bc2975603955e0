/* SPDX-License-Identifier: Apache-2.0 */
/* Appending formatted text to a fixed buffer, for building messages. */
#ifndef DIAG_COMMON_STRBUF_H
#define DIAG_COMMON_STRBUF_H

#include <stddef.h>

/* Appends to buf (cap bytes) at offset o and returns the new offset, which
 * may pass cap: then the text was cut and nothing more is written. */
size_t strbuf_cat(char *buf, size_t cap, size_t o, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

#endif
