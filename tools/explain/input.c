/* SPDX-License-Identifier: Apache-2.0 */
/* Reading log files into records: one file per rank or host, or one whole
 * job log. Lines without an NCCL prefix that no rule could use are dropped,
 * so a training log of millions of lines keeps only its NCCL part. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/strutil.h"
#include "tools/explain/explain.h"

/* Past this much kept text the rest is counted but not kept. */
#define LOGSET_BYTES_MAX ((size_t)512 << 20)

/* Adds a file to ls and sets *file to its index: 0 or ENOMEM. */
static int add_file(struct logset *ls, const char *name, int *file) {
  struct logfile *v = realloc(ls->files, (size_t)(ls->nfiles + 1) * sizeof(*v));
  if (!v) return ENOMEM;
  ls->files = v;
  struct logfile *f = &v[ls->nfiles];
  memset(f, 0, sizeof(*f));
  f->name = strdup(name);
  ls->cur_len = 0, ls->is_cur_last = false;
  if (!f->name) return ENOMEM;
  *file = ls->nfiles++;
  return 0;
}

/* Appends more to the kept line o (its text moves with raw). */
static void join_to(struct logset *ls, struct rec *o, const char *more) {
  size_t at = (size_t)(o->text - o->raw);
  size_t len = strlen(o->raw), add = strlen(more);
  if (len + add >= EXPLAIN_LINE_MAX) return; /* the rules have read enough of it */
  char *raw = malloc(len + add + 1);
  if (!raw) return;
  memcpy(raw, o->raw, len);
  memcpy(raw + len, more, add + 1);
  char *old = o->raw;
  o->raw = raw, o->text = raw + at;
  free(old);
  ls->bytes += add;
}

/* A plugin line cut for NCCL's line buffer continues with "... ": it joins
 * the nearest earlier line of the same process and level, so rules read
 * the whole message. */
static bool join_continuation(struct logset *ls, int file, struct rec *r) {
  if (!r->is_diag || strncmp(r->text, "... ", 4)) return false;
  struct rec *o = NULL;
  for (size_t i = ls->nrecs, seen = 0; !o && i-- > 0 && seen < 64; seen++) {
    struct rec *c = &ls->recs[i];
    if (c->file == file && c->is_diag && c->level == r->level && c->pid == r->pid &&
        !strcmp(c->host, r->host))
      o = c;
  }
  if (!o) return false;
  join_to(ls, o, r->text + 3);
  return true;
}

/* A terminal that wrapped a pasted line at its width (80, 120 ... columns)
 * leaves the rest on the next line with no prefix: it joins the NCCL line
 * right before it when that line filled a whole terminal row. */
static bool is_terminal_width(size_t n) {
  static const size_t widths[] = {80, 100, 120, 128, 132, 140, 150, 160, 180, 200, 220, 240, 256};
  for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
    if (n == widths[i]) return true;
  return false;
}

static bool join_wrapped(struct logset *ls, int file, const struct rec *r) {
  if (r->has_prefix || r->level != REC_TEXT || !ls->nrecs) return false;
  struct rec *o = &ls->recs[ls->nrecs - 1];
  if (o->file != file || !ls->is_prev_last || o->level == REC_TEXT ||
      !is_terminal_width(ls->prev_len) || r->raw[0] == ' ' || r->raw[0] == '\t')
    return false;
  join_to(ls, o, r->raw);
  return true;
}

/* A line that names NCCL's INFO or WARN but that no prefix form of the
 * reader took: counted, so the report can say what it skipped. */
static void note_unread(struct logset *ls, int file, long lineno, const struct rec *r) {
  if (r->level != REC_TEXT || !(strstr(r->raw, "NCCL WARN") || strstr(r->raw, "NCCL INFO"))) return;
  if (!ls->nunread++) {
    ls->unread_file = file, ls->unread_lineno = (int)lineno;
    snprintf(ls->unread_first, sizeof(ls->unread_first), "%s", r->raw);
  }
}

static int add_line(struct logset *ls, int file, const char *line, size_t len, size_t physical) {
  long lineno = ++ls->files[file].nlines;
  if (physical == len && len && line[len - 1] == '\r') physical--;
  if (len >= EXPLAIN_LINE_MAX) len = EXPLAIN_LINE_MAX - 1;
  while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
  ls->prev_len = ls->cur_len, ls->cur_len = physical;
  ls->is_prev_last = ls->is_cur_last, ls->is_cur_last = false;
  if (!len || ls->is_capped) return 0;
  if (ls->bytes + len > LOGSET_BYTES_MAX) {
    ls->is_capped = true;
    return 0;
  }
  if (ls->nrecs == ls->cap) {
    size_t cap = ls->cap ? 2 * ls->cap : 1024;
    struct rec *v = realloc(ls->recs, cap * sizeof(*v));
    if (!v) return ENOMEM;
    ls->recs = v, ls->cap = cap;
  }
  char *copy = malloc(len + 1);
  if (!copy) return ENOMEM;
  memcpy(copy, line, len);
  copy[len] = 0;
  struct rec *r = &ls->recs[ls->nrecs];
  explain_parse_line(copy, r);
  r->file = file;
  note_unread(ls, file, lineno, r);
  bool is_wrapped = join_wrapped(ls, file, r);
  ls->is_cur_last = is_wrapped;
  if (is_wrapped || join_continuation(ls, file, r) || !explain_rec_relevant(r) ||
      logset_drop_inert(ls, r)) {
    free(copy);
    return 0;
  }
  r->file = file, r->lineno = (int)lineno, r->idx = ls->nrecs;
  ls->is_cur_last = true;
  ls->bytes += len;
  ls->nrecs++;
  return 0;
}

/* Streams the file a line at a time with the line cut at
 * EXPLAIN_LINE_MAX: memory does not follow a line's length (a binary file,
 * a log with no newline), and the physical length still reaches the
 * terminal-wrap check. */
static int read_stream(struct logset *ls, int file, FILE *f) {
  char *line = malloc(EXPLAIN_LINE_MAX + 1);
  if (!line) return ENOMEM;
  int err = 0, c = 0;
  errno = 0;
  flockfile(f);
  while (!err && c != EOF) {
    size_t n = 0, physical = 0;
    while ((c = getc_unlocked(f)) != EOF && c != '\n') {
      if (n < EXPLAIN_LINE_MAX) line[n++] = (char)c;
      physical++;
    }
    if (c == EOF && !physical) break;
    line[n] = 0;
    err = add_line(ls, file, line, n, physical);
  }
  funlockfile(f);
  if (!err && ferror(f)) err = errno ? errno : EIO;
  free(line);
  return err;
}

int logset_read_path(struct logset *ls, const char *path, char *why, size_t cap) {
  bool is_stdin = !strcmp(path, "-");
  FILE *f = is_stdin ? stdin : fopen(path, "r");
  int err = 0;
  struct stat st;
  if (!f) err = errno;
  else if (fstat(fileno(f), &st)) err = errno;
  else if (S_ISDIR(st.st_mode)) err = EISDIR;
  int file = 0;
  if (!err) err = add_file(ls, is_stdin ? "stdin" : path, &file);
  if (!err) err = read_stream(ls, file, f);
  if (f && !is_stdin) fclose(f);
  if (err) snprintf(why, cap, "cannot read %s: %s", is_stdin ? "stdin" : path, strerror(err));
  return err;
}

int logset_read_buffer(struct logset *ls, const char *name, const char *data, size_t len) {
  int file = 0;
  int err = add_file(ls, name, &file);
  while (len && !err) {
    const char *nl = memchr(data, '\n', len);
    size_t n = nl ? (size_t)(nl - data) : len;
    err = add_line(ls, file, data, n, n);
    data += n + (nl ? 1 : 0);
    len -= n + (nl ? 1 : 0);
  }
  return err;
}

void logset_finish(struct logset *ls) {
  logset_split_hosts(ls);
  /* 0: no host seen in the file, 1: one host, 2: several */
  int *state = calloc((size_t)ls->nfiles + 1, sizeof(int));
  if (!state) return;
  for (size_t i = 0; i < ls->nrecs; i++) {
    const struct rec *r = &ls->recs[i];
    struct logfile *f = &ls->files[r->file];
    if (!r->host[0] || state[r->file] == 2) continue;
    if (!state[r->file]) scopy(f->host, sizeof(f->host), r->host), state[r->file] = 1;
    else if (strcmp(f->host, r->host)) state[r->file] = 2, f->host[0] = 0;
  }
  /* A file with no host at all (WARN lines pasted without their prefix)
   * stands for one host of its own, so rules that reason per host read it. */
  int nbare = 0;
  for (int f = 0; f < ls->nfiles; f++) nbare += !state[f] && ls->files[f].nlines;
  for (int f = 0; f < ls->nfiles; f++) {
    if (state[f] || !ls->files[f].nlines) continue;
    const char *base = strrchr(ls->files[f].name, '/');
    if (nbare == 1) scopy(ls->files[f].host, sizeof(ls->files[f].host), "this host");
    else
      snprintf(ls->files[f].host, sizeof(ls->files[f].host), "the host of %s",
               base ? base + 1 : ls->files[f].name);
    state[f] = 1;
  }
  for (size_t i = 0; i < ls->nrecs; i++) {
    struct rec *r = &ls->recs[i];
    if (!r->host[0] && state[r->file] == 1)
      scopy(r->host, sizeof(r->host), ls->files[r->file].host);
  }
  free(state);
}

void logset_free(struct logset *ls) {
  for (size_t i = 0; i < ls->nrecs; i++) free(ls->recs[i].raw);
  for (int f = 0; f < ls->nfiles; f++) free(ls->files[f].name);
  free(ls->recs);
  free(ls->files);
  free(ls->hostset);
  memset(ls, 0, sizeof(*ls));
}

void rec_where(const struct logset *ls, const struct rec *r, char *buf, size_t cap) {
  const char *name = r->file >= 0 && r->file < ls->nfiles ? ls->files[r->file].name : "?";
  snprintf(buf, cap, "%s:%d", name, r->lineno);
}
