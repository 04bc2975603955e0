/* SPDX-License-Identifier: Apache-2.0 */
/* What every command shares (tool.h): the plugin's logger, the usage-error
 * convention, integer options. main.c only dispatches. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/tool.h"

int tool_verbose;

void tool_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                 const char *fmt, ...) {
  (void)file, (void)line;
  if (level > NCCL_LOG_INFO && !tool_verbose) return;
  if (level == NCCL_LOG_INFO && !tool_verbose && !(flags & NCCL_INIT)) return;
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s %s\n", level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
}

int tool_usage_error(const char *cmd, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "nccl-net-diag %s: %s\n(nccl-net-diag %s -h lists the options)\n", cmd, msg, cmd);
  return 2;
}

int tool_parse_int(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi) return EINVAL;
  *out = v;
  return 0;
}
