/* SPDX-License-Identifier: Apache-2.0 */
/* Logging: every line carries the "NET/diag" tag so users can grep for it.
 * Inside NCCL the plugin layer installs a sink that forwards to NCCL's
 * logger; elsewhere (tools, tests) lines go to stderr, filtered by
 * NCCL_DEBUG. The macros preserve errno, so a caller can log and then
 * still return or print %m.
 *
 * Levels and subsystem bits have NCCL's numeric values (the plugin layer
 * asserts that), so a sink can pass them on unchanged; this header does not
 * depend on NCCL's ABI headers. */
#ifndef DIAG_COMMON_LOG_H
#define DIAG_COMMON_LOG_H

#include <errno.h>
#include <stddef.h>

enum log_level {
  LOG_LEVEL_NONE = 0,
  LOG_LEVEL_VERSION = 1,
  LOG_LEVEL_WARN = 2,
  LOG_LEVEL_INFO = 3,
  LOG_LEVEL_ABORT = 4,
  LOG_LEVEL_TRACE = 5,
};

/* Subsystem bits, as NCCL_DEBUG_SUBSYS names them. */
enum log_subsys {
  LOG_SUBSYS_INIT = 0x1,
  LOG_SUBSYS_NET = 0x10,
  LOG_SUBSYS_ENV = 0x80,
};

/* Receives each finished line (already tagged "NET/diag ..."). */
typedef void (*log_sink_fn)(enum log_level level, unsigned long flags, const char *file, int line,
                            const char *text);

/* The first sink installed wins (v11 passes a logger per communicator). */
void log_set_sink(log_sink_fn sink);
int log_have_sink(void);

/* Outside NCCL (tools, tests without a logger): the stderr threshold.
 * Defaults to NCCL_DEBUG (WARN when unset). */
void log_set_stderr_level(enum log_level level);

/* src (n bytes; stops at a NUL) made safe for one log line or terminal:
 * control bytes (a newline would start a forged line, ESC a terminal
 * escape), DEL, C1 controls and bytes that are not UTF-8 become "\xNN";
 * printable ASCII and valid UTF-8 stay. Cut to fit dst; returns dst. For
 * text from the network or the environment. */
const char *log_clean(char *dst, size_t cap, const char *src, size_t n);

void log_emit(enum log_level level, unsigned long flags, const char *file, int line,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define DIAG_LOG_(level, flags, ...)                                                               \
  do {                                                                                             \
    int diag_saved_errno_ = errno;                                                                 \
    log_emit((level), (flags), __FILE__, __LINE__, __VA_ARGS__);                                   \
    errno = diag_saved_errno_;                                                                     \
  } while (0)

/* Init-time choices are visible with NCCL's default NCCL_DEBUG_SUBSYS
 * (INIT); per-connection detail needs NET. */
#define LOG_INIT (LOG_SUBSYS_INIT | LOG_SUBSYS_NET)
#define LOG_NET LOG_SUBSYS_NET
#define LOG_ENV (LOG_SUBSYS_ENV | LOG_SUBSYS_NET)

#define WARN(...) DIAG_LOG_(LOG_LEVEL_WARN, LOG_INIT, __VA_ARGS__)
#define INFO(flags, ...) DIAG_LOG_(LOG_LEVEL_INFO, (flags), __VA_ARGS__)
#define TRACE(flags, ...) DIAG_LOG_(LOG_LEVEL_TRACE, (flags), __VA_ARGS__)

#endif
