#include "plugin/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

/* NCCL's logger formats into a 1024-byte line; stay under it per call. */
#define LOG_LINE_MAX 1000
#define LOG_MSG_MAX 8192

static _Atomic(ncclDebugLogger_t) nccl_logger;
static atomic_int stderr_level = -1;

void log_set_nccl_logger(ncclDebugLogger_t logger) {
  ncclDebugLogger_t expected = NULL;
  if (logger) atomic_compare_exchange_strong(&nccl_logger, &expected, logger);
}

int log_have_nccl_logger(void) { return atomic_load(&nccl_logger) != NULL; }

void log_set_stderr_level(ncclDebugLogLevel level) { atomic_store(&stderr_level, (int)level); }

static int stderr_threshold(void) {
  int lvl = atomic_load(&stderr_level);
  if (lvl >= 0) return lvl;
  const char *env = getenv("NCCL_DEBUG");
  lvl = NCCL_LOG_WARN;
  if (env && !strcasecmp(env, "INFO")) lvl = NCCL_LOG_INFO;
  else if (env && !strcasecmp(env, "TRACE")) lvl = NCCL_LOG_TRACE;
  else if (env && !strcasecmp(env, "VERSION")) lvl = NCCL_LOG_VERSION;
  atomic_store(&stderr_level, lvl);
  return lvl;
}

static const char *level_name(ncclDebugLogLevel level) {
  switch (level) {
  case NCCL_LOG_WARN: return "WARN";
  case NCCL_LOG_INFO: return "INFO";
  case NCCL_LOG_TRACE: return "TRACE";
  default: return "LOG";
  }
}

static void emit_line(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                      const char *text) {
  ncclDebugLogger_t logger = atomic_load(&nccl_logger);
  if (logger) {
    logger(level, flags, file, line, "NET/diag %s", text);
    return;
  }
  if ((int)level > stderr_threshold()) return;
  static char host[64];
  if (!host[0]) {
    char tmp[64] = {0};
    gethostname(tmp, sizeof(tmp) - 1);
    char *dot = strchr(tmp, '.');
    if (dot) *dot = 0;
    memcpy(host, tmp, sizeof(host));
  }
  fprintf(stderr, "%s:%d:%ld NET/diag %s %s\n", host, (int)getpid(), (long)syscall(SYS_gettid),
          level_name(level), text);
}

/* Long diagnoses are split at newlines (and, failing that, at LOG_LINE_MAX)
 * so nothing is cut off by NCCL's line buffer. */
void log_emit(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
              const char *fmt, ...) {
  char msg[LOG_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);

  char *p = msg;
  while (*p) {
    size_t n = strcspn(p, "\n");
    if (n > LOG_LINE_MAX) n = LOG_LINE_MAX;
    char saved = p[n];
    p[n] = 0;
    emit_line(level, flags, file, line, p);
    p[n] = saved;
    p += n;
    if (*p == '\n') p++;
  }
}
