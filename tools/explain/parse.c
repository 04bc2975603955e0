/* SPDX-License-Identifier: Apache-2.0 */
/* One log line -> one record. NCCL's prefixes, 2.12 to 2.30:
 *   host:pid:tid [dev] file.cc:line NCCL WARN text
 *   host:pid:tid [dev] file.cc:line (function) NCCL WARN text      (2.30)
 *   host:pid:tid [dev] NCCL INFO text
 *   host:pid:tid [dev] 12.345 function:line NCCL TRACE text
 *   host:pid:tid NCCL CALL text
 * WARN lines may start with a timestamp (2.26+: "[2025-01-31 10:00:00] ")
 * and job launchers add their own ("[rank3]:", "[default0]:", "3: "), so the
 * prefix is looked for at every word start. This plugin's lines say
 * "NET/diag" after NCCL's level, or "host:pid:tid NET/diag WARN text" when
 * printed outside NCCL. The text is untrusted: every read is bounded by the
 * line's NUL. */
#include <string.h>

#include "tools/explain/explain.h"
#include "tools/explain/rules.h"

static bool is_host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Decimal digits (at most 12) into *v; advances *p. */
static bool digits(const char **p, long *v) {
  const char *s = *p;
  long n = 0;
  int k = 0;
  while (is_digit(*s) && k < 12) n = n * 10 + (*s++ - '0'), k++;
  if (!k || is_digit(*s)) return false;
  *p = s, *v = n;
  return true;
}

static bool skip(const char **p, const char *word) {
  size_t n = strlen(word);
  if (strncmp(*p, word, n)) return false;
  *p += n;
  return true;
}

/* "NCCL INFO ", "NCCL WARN ", "NET/diag WARN " ... -> level; advances *p. */
static bool level_word(const char **p, struct rec *r) {
  static const struct {
    const char *word;
    enum rec_level level;
    bool is_diag;
  } words[] = {
    {"NCCL INFO ", REC_INFO, false},
    {"NCCL WARN ", REC_WARN, false},
    {"NCCL TRACE ", REC_TRACE, false},
    {"NCCL CALL ", REC_TRACE, false},
    {"NET/diag WARN ", REC_WARN, true},
    {"NET/diag INFO ", REC_INFO, true},
    {"NET/diag TRACE ", REC_TRACE, true},
    /* NCCL 2.0-2.3: the level without "NCCL" */
    {"WARN ", REC_WARN, false},
    {"INFO ", REC_INFO, false},
  };
  for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
    if (skip(p, words[i].word)) {
      r->level = words[i].level, r->is_diag = words[i].is_diag;
      return true;
    }
  return false;
}

/* "misc/ibvwrap.cc:262 " (a WARN's source) or "ncclIbCreateQp:123 " (a
 * TRACE's function); the name is kept when it fits. */
static bool source_word(const char **p, struct rec *r) {
  const char *s = *p, *colon = NULL;
  while (*s && *s != ' ' && s - *p < 200) {
    if (*s == ':') colon = s;
    s++;
  }
  if (*s != ' ' || !colon || colon == *p) return false;
  const char *q = colon + 1;
  long line;
  if (!digits(&q, &line) || q != s) return false;
  size_t n = (size_t)(colon - *p);
  if (n < sizeof(r->src)) memcpy(r->src, *p, n), r->src[n] = 0;
  r->srcline = (int)line;
  *p = s + 1;
  return true;
}

/* The part after "host:pid:tid ": [dev], a source, a function, the level. */
static bool level_part(const char *p, struct rec *r, const char **text) {
  if (*p == '[') {
    p++;
    long dev;
    if (!digits(&p, &dev) || !skip(&p, "] ")) return false;
    r->dev = (int)dev;
  }
  if (level_word(&p, r)) {
    *text = p;
    return true;
  }
  if (is_digit(*p)) { /* TRACE: a millisecond timestamp first */
    const char *q = p;
    while (is_digit(*q) || *q == '.') q++;
    if (*q != ' ') return false;
    p = q + 1;
  }
  if (!source_word(&p, r)) return false;
  if (*p == '(') { /* 2.30 names the function */
    const char *q = p;
    while (*q && q - p < 160 && !(q[0] == ')' && q[1] == ' ')) q++;
    if (q[0] != ')' || q[1] != ' ') return false;
    p = q + 2;
  }
  if (!level_word(&p, r)) return false;
  *text = p;
  return true;
}

/* "host:pid:tid " at p, then the level part. */
static bool prefix_at(const char *p, struct rec *r, const char **text) {
  const char *h = p;
  while (is_host_char(*p) && p - h < 256) p++;
  if (p == h || p - h >= 256 || *p != ':') return false;
  size_t hlen = (size_t)(p - h);
  p++;
  long pid, tid;
  if (!digits(&p, &pid) || *p++ != ':' || !digits(&p, &tid) || *p++ != ' ') return false;
  struct rec tmp = *r;
  tmp.dev = -1, tmp.src[0] = 0, tmp.srcline = 0;
  if (!level_part(p, &tmp, text)) return false;
  *r = tmp;
  size_t n = hlen < sizeof(r->host) ? hlen : sizeof(r->host) - 1;
  memcpy(r->host, h, n);
  r->host[n] = 0;
  r->pid = pid, r->tid = tid, r->has_prefix = true;
  return true;
}

/* A line whose host:pid:tid a launcher or the user cut off: "[rank0]:
 * misc/socket.cc:484 NCCL WARN ...", "NCCL INFO ...". The level words
 * anywhere in the line still make it an NCCL line; a source word right
 * before them is kept. */
static const char *bare_level(const char *line, struct rec *r) {
  static const char *const words[] = {"NCCL WARN ", "NCCL INFO ", "NET/diag WARN "};
  for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
    const char *at = strstr(line, words[i]);
    if (!at) continue;
    const char *p = at;
    if (!level_word(&p, r)) continue;
    const char *w = at; /* the word before: "file.cc:123 " */
    if (w > line + 1 && w[-1] == ' ') {
      const char *b = w - 1;
      while (b > line && !strchr(" ]>", b[-1]) && w - b < 200) b--;
      while (*b == ':') b++; /* "[1,0]<stderr>:" */
      struct rec tmp = *r;
      const char *q = b;
      if (source_word(&q, &tmp) && q == at) *r = tmp;
    }
    return p;
  }
  while (*line == ' ' || *line == '\t') line++;
  return line;
}

void explain_parse_line(char *line, struct rec *r) {
  r->raw = line;
  r->host[0] = 0, r->src[0] = 0;
  r->pid = r->tid = 0, r->dev = -1, r->srcline = 0;
  r->level = REC_TEXT, r->is_diag = false, r->has_prefix = false;
  r->ts = 0, r->ts_kind = log_timestamp(line, &r->ts);
  const char *text = NULL;
  for (const char *p = line; *p && !text; p++) {
    if (p != line && is_host_char(p[-1])) continue;
    if (!is_host_char(*p) || !prefix_at(p, r, &text)) text = NULL;
  }
  if (!text) text = bare_level(line, r);
  /* Inside NCCL this plugin's lines are "NCCL WARN NET/diag ...". */
  if (!strncmp(text, "NET/diag ", 9)) r->is_diag = true, text += 9;
  r->text = text;
}

bool explain_rec_relevant(const struct rec *r) {
  static const char *const needles[] = {
    "NCCL",
    "nccl",
    "Watchdog",
    "ibv_",
    "NET/",
    "ocket",
    "onnect",
    "Too many open files",
    "Resource temporarily unavailable",
    "family",
    "truncated",
    "GID",
    "completion",
    "async event",
    "DistBackendError",
    "shared memory",
    "/dev/shm",
    "No space left on device",
    "Cannot allocate memory",
    "MEMLOCK",
    "Invalid rank",
    "OFI",
    "libfabric",
    "fi_",
    "ProcessGroup",
    "Cuda failure",
    "CUDA failure",
    "CUDA error",
    "cuda runtime error",
    "CUDA Error",
    "cudaError",
    "CUDA_ERROR_",
    "CUDA out of memory",
    "Duplicate GPU",
  };
  if (r->has_prefix || r->level != REC_TEXT) return true;
  if (launch_relevant(r->text) || nccltests_relevant(r->text) || frtrace_relevant(r->text) ||
      ras_relevant(r->text))
    return true;
  for (size_t i = 0; i < sizeof(needles) / sizeof(needles[0]); i++)
    if (strstr(r->text, needles[i])) return true;
  return false;
}
