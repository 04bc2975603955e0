/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/probe/plugin_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/strutil.h"

#define EVENT_LINE_MAX 8192

static char event_path[256];

long plugin_connect_timeout_ms(int timeout_s) {
  /* A pair's step gets a quarter of --timeout, 15 to 60 s (coord_steps.c);
   * a quarter of that leaves the plugin time to say why it failed. */
  long step_ms = (long)timeout_s * 1000 / 4;
  if (step_ms < 15000) step_ms = 15000;
  if (step_ms > 60000) step_ms = 60000;
  return step_ms / 4;
}

void plugin_events_setup(const struct probe_opts *o) {
  long want = plugin_connect_timeout_ms(o->timeout_s);
  const char *set = getenv("NCCL_DIAG_CONNECT_TIMEOUT_MS");
  if (!set || atol(set) <= 0 || atol(set) > want) {
    char v[32];
    snprintf(v, sizeof(v), "%ld", want);
    setenv("NCCL_DIAG_CONNECT_TIMEOUT_MS", v, 1);
  }
  const char *dir = getenv("TMPDIR");
  snprintf(event_path, sizeof(event_path), "%s/nccl-net-diag-probe-XXXXXX",
           dir && dir[0] ? dir : "/tmp");
  int fd = mkstemp(event_path);
  if (fd < 0) {
    event_path[0] = 0;
    return;
  }
  close(fd);
  setenv("NCCL_DIAG_LOG_FILE", event_path, 1);
}

long plugin_events_mark(void) {
  struct stat st;
  if (!event_path[0] || stat(event_path, &st)) return 0;
  return (long)st.st_size;
}

/* The string value of "key":"..." in one JSON line (no escapes in codes). */
static int json_field(const char *line, const char *key, char *out, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":\"", key);
  const char *at = strstr(line, pat);
  if (!at) return 0;
  at += strlen(pat);
  size_t n = strcspn(at, "\"");
  if (n >= cap) n = cap - 1;
  memcpy(out, at, n);
  out[n] = 0;
  return 1;
}

void plugin_events_cause(long mark, char *code, size_t cap) {
  code[0] = 0;
  if (!event_path[0]) return;
  FILE *f = fopen(event_path, "re");
  if (!f) return;
  char *line = malloc(EVENT_LINE_MAX);
  if (line && fseek(f, mark, SEEK_SET) == 0)
    while (!code[0] && fgets(line, EVENT_LINE_MAX, f))
      if (strstr(line, "\"event\":\"connect_failed\"") || strstr(line, "\"event\":\"repaired\""))
        json_field(line, "cause_code", code, cap);
  free(line);
  fclose(f);
}

void plugin_events_close(void) {
  if (event_path[0]) unlink(event_path);
  event_path[0] = 0;
}
