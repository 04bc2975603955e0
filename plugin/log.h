/* Logging: through NCCL's logger when NCCL gave us one, to stderr otherwise.
 * Every line carries the "NET/diag" tag so users can grep for it. The macros
 * preserve errno, so a caller can log and then still return or print %m. */
#ifndef DIAG_PLUGIN_LOG_H
#define DIAG_PLUGIN_LOG_H

#include <errno.h>

#include "plugin/abi/nccl_common.h"

/* Set by init; the first non-NULL logger wins (v11 passes one per comm). */
void log_set_nccl_logger(ncclDebugLogger_t logger);
int log_have_nccl_logger(void);

/* Outside NCCL (tools, tests without a logger): the stderr threshold.
 * Defaults to NCCL_DEBUG (WARN when unset). */
void log_set_stderr_level(ncclDebugLogLevel level);

void log_emit(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define DIAG_LOG_(level, flags, ...)                                                               \
  do {                                                                                             \
    int diag_saved_errno_ = errno;                                                                 \
    log_emit((level), (flags), __FILE__, __LINE__, __VA_ARGS__);                                   \
    errno = diag_saved_errno_;                                                                     \
  } while (0)

#define WARN(...) DIAG_LOG_(NCCL_LOG_WARN, NCCL_INIT | NCCL_NET, __VA_ARGS__)
#define INFO(flags, ...) DIAG_LOG_(NCCL_LOG_INFO, (flags), __VA_ARGS__)
#define TRACE(flags, ...) DIAG_LOG_(NCCL_LOG_TRACE, (flags), __VA_ARGS__)

/* Subsystem flags for INFO: init-time choices are visible with the default
 * NCCL_DEBUG_SUBSYS (INIT); per-connection detail needs NET. */
#define LOG_INIT (NCCL_INIT | NCCL_NET)
#define LOG_NET NCCL_NET
#define LOG_ENV (NCCL_ENV | NCCL_NET)

#endif
