/* SPDX-License-Identifier: Apache-2.0 */
/* Findings: one cause and its fix, the lines that show it, the hosts. A
 * finding stands for every rank that logged the same failure, so a 16-node
 * job reads one finding, not sixteen. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "tools/explain/explain.h"

struct finding *finding_new(struct findings *fs, const char *rule, enum confidence conf) {
  if (fs->n == fs->cap) {
    int cap = fs->cap ? 2 * fs->cap : 16;
    struct finding **v = realloc(fs->v, (size_t)cap * sizeof(*v));
    if (!v) return NULL;
    fs->v = v, fs->cap = cap;
  }
  struct finding *f = calloc(1, sizeof(*f));
  if (!f) return NULL;
  fs->v[fs->n++] = f;
  f->rule = rule, f->conf = conf, f->set = fs;
  return f;
}

/* Text quoted from a log may carry control bytes (terminal escapes, a
 * stray newline): a finding's fields never do, in either report. */
void finding_strip_controls(char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

static void vset(char *buf, size_t cap, const char *fmt, va_list ap) {
  vsnprintf(buf, cap, fmt, ap);
  finding_strip_controls(buf);
}

void finding_cause(struct finding *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vset(f->cause, sizeof(f->cause), fmt, ap);
  va_end(ap);
}

void finding_fix(struct finding *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vset(f->fix, sizeof(f->fix), fmt, ap);
  va_end(ap);
}

void finding_export(struct finding *f, const char *fmt, ...) {
  if (f->nexports == FINDING_EXPORTS_MAX) return;
  char tmp[sizeof(f->exports[0])];
  va_list ap;
  va_start(ap, fmt);
  vset(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  for (int i = 0; i < f->nexports; i++)
    if (!strcmp(f->exports[i], tmp)) return;
  scopy(f->exports[f->nexports++], sizeof(f->exports[0]), tmp);
}

void finding_host(struct finding *f, const char *host) {
  if (!host || !host[0]) return;
  for (int i = 0; i < f->nhosts; i++)
    if (!strcmp(f->hosts[i], host)) return;
  if (f->nhosts == FINDING_HOSTS_MAX) {
    f->nhosts_more++;
    return;
  }
  scopy(f->hosts[f->nhosts], sizeof(f->hosts[0]), host);
  finding_strip_controls(f->hosts[f->nhosts++]);
}

int finding_count_hosts(const struct finding *f) {
  const char *seen[256];
  int n = 0;
  for (size_t i = 0; i < f->ncovered; i++) {
    const char *h = f->covered[i]->host;
    int k = 0;
    while (k < n && strcmp(seen[k], h)) k++;
    if (k == n && h[0] && n < 256) seen[n++] = h;
  }
  return n;
}

static void cover(struct finding *f, const struct rec *r) {
  struct finding **first = f->set && r->idx < f->set->ncover_of ? &f->set->cover_of[r->idx] : NULL;
  if (first && *first == f) return;
  for (size_t i = f->ncovered; i-- > 0 && i + 8 >= f->ncovered;)
    if (f->covered[i] == r) return;
  if (f->ncovered == f->capcovered) {
    size_t cap = f->capcovered ? 2 * f->capcovered : 16;
    const struct rec **v = realloc(f->covered, cap * sizeof(*v));
    if (!v) return;
    f->covered = v, f->capcovered = cap;
  }
  f->covered[f->ncovered++] = r;
  if (first && !*first) *first = f;
}

/* Quotes one line per host first, so the evidence shows how far a failure
 * spread; later lines of a host already quoted only count. */
void finding_evidence(struct finding *f, const struct rec *r) {
  if (!r) return;
  cover(f, r);
  bool is_new_host = r->host[0] != 0;
  for (int i = 0; i < f->nev; i++) {
    if (f->ev[i] == r) return;
    if (!strcmp(f->ev[i]->host, r->host)) is_new_host = false;
  }
  finding_host(f, r->host);
  if (f->nev < FINDING_EVIDENCE_MAX && (is_new_host || f->nev < 2)) f->ev[f->nev++] = r;
  else f->nev_more++;
}

struct finding *findings_covering(const struct findings *fs, const struct rec *r) {
  return r->idx < fs->ncover_of ? fs->cover_of[r->idx] : NULL;
}

static int by_confidence(const void *a, const void *b) {
  const struct finding *x = *(struct finding *const *)a, *y = *(struct finding *const *)b;
  if (x->conf != y->conf) return x->conf > y->conf ? -1 : 1;
  return x->order - y->order;
}

void findings_sort(struct findings *fs) {
  if (!fs->n) return;
  for (int i = 0; i < fs->n; i++) fs->v[i]->order = fs->v[i]->order * 1000 + i;
  qsort(fs->v, (size_t)fs->n, sizeof(fs->v[0]), by_confidence);
}

void findings_free(struct findings *fs) {
  for (int i = 0; i < fs->n; i++) {
    free(fs->v[i]->covered);
    free(fs->v[i]);
  }
  free(fs->v);
  free(fs->cover_of);
  memset(fs, 0, sizeof(*fs));
}
