/* SPDX-License-Identifier: Apache-2.0 */
/* The one rule for a string inside JSON, shared by the plugin's event
 * file (common/events.c) and the tools' JSON writer (tools/json_out.c).
 * Strings come from logs, sysfs and peers: the document stays valid UTF-8
 * (a broken sequence becomes U+FFFD) and free of raw control bytes.
 * Inline, so the tools' JSON library needs no link to the plugin's core. */
#ifndef DIAG_COMMON_JSON_ESCAPE_H
#define DIAG_COMMON_JSON_ESCAPE_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/strutil.h"

/* Writes the escaped form of the character at p (never NUL) to out, a
 * NUL-terminated text of at most 6 bytes; returns how many bytes of p it
 * took (at least 1). */
static inline size_t json_escape_char(const unsigned char *p, char out[8]) {
  int n = utf8_len(p);
  if (*p == '"' || *p == '\\') out[0] = '\\', out[1] = (char)*p, out[2] = 0;
  else if (*p == '\n') memcpy(out, "\\n", 3);
  else if (*p == '\t') memcpy(out, "\\t", 3);
  else if (*p == '\r') memcpy(out, "\\r", 3);
  else if (*p < 0x20 || *p == 0x7f) snprintf(out, 8, "\\u%04x", *p);
  else if (n) memcpy(out, p, (size_t)n), out[n] = 0;
  else memcpy(out, "\\ufffd", 7);
  return n ? (size_t)n : 1;
}

#endif
