/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/probe/capture.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/strutil.h"

#define RING 64
#define LINE 1024

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char lines[RING][LINE];
static uint64_t next_seq; /* sequence number of the next WARN line */
static char plugin_version[32];
static int verbose;
static char prefix[96];

void capture_set_verbose(int v, const char *p) {
  verbose = v;
  scopy(prefix, sizeof(prefix), p ? p : "");
}

static void note_version(const char *msg) {
  const char *at = strstr(msg, "libnccl-net-diag ");
  if (!at || plugin_version[0]) return;
  at += strlen("libnccl-net-diag ");
  size_t n = strcspn(at, " ,;()");
  if (n && n < sizeof(plugin_version))
    snprintf(plugin_version, sizeof(plugin_version), "%.*s", (int)n, at);
}

void capture_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                    const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level != NCCL_LOG_WARN && level != NCCL_LOG_INFO) return; /* TRACE: the data path */
  char msg[LINE];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  const char *text = !strncmp(msg, "NET/diag ", 9) ? msg + 9 : msg;
  pthread_mutex_lock(&lock);
  if (level == NCCL_LOG_INFO) note_version(text);
  if (level == NCCL_LOG_WARN) scopy(lines[next_seq++ % RING], LINE, text);
  pthread_mutex_unlock(&lock);
  if (verbose) fprintf(stderr, "%s%s %s\n", prefix, level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
}

uint64_t capture_mark(void) {
  pthread_mutex_lock(&lock);
  uint64_t m = next_seq;
  pthread_mutex_unlock(&lock);
  return m;
}

void capture_warns_since(uint64_t mark, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  pthread_mutex_lock(&lock);
  if (next_seq > mark + RING) mark = next_seq - RING;
  for (uint64_t s = mark; s < next_seq && o + 1 < cap; s++) {
    int n = snprintf(buf + o, cap - o, "%s%s", o ? "\n" : "", lines[s % RING]);
    if (n < 0) break;
    o += (size_t)n < cap - o ? (size_t)n : cap - o - 1;
  }
  pthread_mutex_unlock(&lock);
}

void capture_plugin_version(char *buf, size_t cap) {
  pthread_mutex_lock(&lock);
  scopy(buf, cap, plugin_version);
  pthread_mutex_unlock(&lock);
}
