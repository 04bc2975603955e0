/* SPDX-License-Identifier: Apache-2.0 */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

/* NCCL's logger formats into a 1024-byte line; stay under it per call. */
#define LOG_LINE_MAX 1000
#define LOG_MSG_MAX 8192

static _Atomic(log_sink_fn) sink;
static atomic_int stderr_level = -1;

void log_set_sink(log_sink_fn fn) {
  log_sink_fn expected = NULL;
  if (fn) atomic_compare_exchange_strong(&sink, &expected, fn);
}

int log_have_sink(void) { return atomic_load(&sink) != NULL; }

void log_set_stderr_level(enum log_level level) { atomic_store(&stderr_level, (int)level); }

static int stderr_threshold(void) {
  int lvl = atomic_load(&stderr_level);
  if (lvl >= 0) return lvl;
  const char *env = getenv("NCCL_DEBUG");
  lvl = LOG_LEVEL_WARN;
  if (env && !strcasecmp(env, "INFO")) lvl = LOG_LEVEL_INFO;
  else if (env && !strcasecmp(env, "TRACE")) lvl = LOG_LEVEL_TRACE;
  else if (env && !strcasecmp(env, "VERSION")) lvl = LOG_LEVEL_VERSION;
  atomic_store(&stderr_level, lvl);
  return lvl;
}

static const char *level_name(enum log_level level) {
  switch (level) {
  case LOG_LEVEL_WARN: return "WARN";
  case LOG_LEVEL_INFO: return "INFO";
  case LOG_LEVEL_TRACE: return "TRACE";
  default: return "LOG";
  }
}

static void emit_line(enum log_level level, unsigned long flags, const char *file, int line,
                      const char *text) {
  log_sink_fn fn = atomic_load(&sink);
  if (fn) {
    char tagged[LOG_LINE_MAX + 16];
    snprintf(tagged, sizeof(tagged), "NET/diag %s", text);
    fn(level, flags, file, line, tagged);
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

/* The length of a valid UTF-8 sequence at p (at most n bytes) that is
 * not a C1 control (U+0080..U+009F, which some terminals obey), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n) {
  size_t len = p[0] >= 0xf5 ? 0 : p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
  if (!len || len > n) return 0;
  for (size_t i = 1; i < len; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  if (len == 2 && p[0] == 0xc2 && p[1] < 0xa0) return 0;  /* C1 */
  if (len == 3 && p[0] == 0xe0 && p[1] < 0xa0) return 0;  /* overlong */
  if (len == 3 && p[0] == 0xed && p[1] >= 0xa0) return 0; /* surrogate */
  if (len == 4 && p[0] == 0xf0 && p[1] < 0x90) return 0;  /* overlong */
  if (len == 4 && p[0] == 0xf4 && p[1] >= 0x90) return 0; /* past U+10FFFF */
  return len;
}

const char *log_clean(char *dst, size_t cap, const char *src, size_t n) {
  if (!cap) return dst;
  const unsigned char *p = (const unsigned char *)src;
  size_t o = 0, i = 0;
  while (i < n && p[i]) {
    size_t len = p[i] >= 0x20 && p[i] < 0x7f ? 1 : p[i] >= 0x80 ? utf8_len(p + i, n - i) : 0;
    if (len && o + len < cap) {
      memcpy(dst + o, p + i, len);
      o += len, i += len;
    } else if (!len && o + 4 < cap) {
      snprintf(dst + o, cap - o, "\\x%02x", p[i]);
      o += 4, i++;
    } else break;
  }
  dst[o] = 0;
  return dst;
}

/* Where a line longer than max is best cut: after the last sentence or
 * clause that fits, else at a space, else at max. */
static size_t cut_at(const char *p, size_t n, size_t max) {
  if (n <= max) return n;
  for (size_t i = max; i > max / 2; i--)
    if ((p[i - 1] == '.' || p[i - 1] == ';') && p[i] == ' ') return i;
  for (size_t i = max; i > max / 2; i--)
    if (p[i] == ' ') return i;
  return max;
}

/* Long diagnoses are split at newlines and, failing that, between
 * sentences, so nothing is cut off by NCCL's line buffer; a line that
 * continues the one before starts with "... ". */
void log_emit(enum log_level level, unsigned long flags, const char *file, int line,
              const char *fmt, ...) {
  char msg[LOG_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);

  char *p = msg;
  bool is_cont = false;
  while (*p) {
    size_t n = cut_at(p, strcspn(p, "\n"), LOG_LINE_MAX - (is_cont ? 4 : 0));
    char saved = p[n];
    p[n] = 0;
    if (is_cont) {
      char cont[LOG_LINE_MAX + 1];
      snprintf(cont, sizeof(cont), "... %s", p);
      emit_line(level, flags, file, line, cont);
    } else {
      emit_line(level, flags, file, line, p);
    }
    p[n] = saved;
    p += n;
    is_cont = saved != '\n' && saved != 0; /* cut inside a line */
    if (saved == '\n') p++;
    else
      while (*p == ' ') p++;
  }
}
