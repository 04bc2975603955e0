/* SPDX-License-Identifier: Apache-2.0 */
/* Hosts that share one hostname (containers, pods, cloned images all
 * named "localhost" or "worker"): NCCL's prefix names them alike, but each
 * process prints the address it bootstraps from. Where one hostname shows
 * two or more bootstrap addresses, its lines are renamed "name/address",
 * each by its process (file and pid, then pid alone), so the rules compare
 * the machines instead of merging them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "tools/explain/explain.h"
#include "tools/explain/facts.h"

struct boot {
  int file;
  long pid;
  const char *host; /* inside the record */
  char ip[64];
  bool is_shared; /* its hostname shows two or more addresses */
};

/* "Bootstrap : Using eth0:10.0.0.1<0>" (2.12-2.23), "Bootstrap: Using ..."
 * (2.24+), "Bootstrap : Using [0]eth0:10.0.0.1<0>" (2.4-2.11). */
static bool boot_ip(const struct rec *r, char *ip, size_t cap) {
  const char *p = text_after(r->text, "Bootstrap : Using ");
  if (!p) p = text_after(r->text, "Bootstrap: Using ");
  if (!p) return false;
  if (*p == '[' && (p = strchr(p, ']'))) p++;
  const char *colon = p ? strchr(p, ':') : NULL;
  if (!colon || !strchr(colon, '<')) return false;
  text_ip_of(colon + 1, ip, cap);
  /* an address, or nothing: it becomes part of a host's name */
  return ip[0] && strspn(ip, "0123456789abcdefABCDEF.:") == strlen(ip);
}

static int boots_read(const struct logset *ls, struct boot **out) {
  int n = 0, cap = 0;
  struct boot *v = NULL;
  for (size_t i = 0; i < ls->nrecs; i++) {
    const struct rec *r = &ls->recs[i];
    char ip[64];
    if (!r->has_prefix || !r->host[0] || r->pid <= 0 || !boot_ip(r, ip, sizeof(ip))) continue;
    if (n == cap) {
      struct boot *w = realloc(v, (size_t)(cap = cap ? 2 * cap : 16) * sizeof(*w));
      if (!w) break;
      v = w;
    }
    v[n].file = r->file, v[n].pid = r->pid, v[n].host = r->host;
    scopy(v[n].ip, sizeof(v[n].ip), ip);
    n++;
  }
  *out = v;
  return n;
}

static int by_host_pid(const void *a, const void *b) {
  const struct boot *x = a, *y = b;
  int d = strcmp(x->host, y->host);
  if (d) return d;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  return x->file - y->file;
}

/* Marks each boot entry whose hostname shows two or more addresses (the
 * entries sorted by host: one pass). */
static bool mark_shared(struct boot *v, int n) {
  bool is_any = false;
  for (int i = 0, j; i < n; i = j) {
    bool shared = false;
    for (j = i + 1; j < n && !strcmp(v[j].host, v[i].host); j++) shared |= strcmp(v[j].ip, v[i].ip);
    for (int k = i; k < j; k++) v[k].is_shared = shared;
    is_any |= shared;
  }
  return is_any;
}

/* The address of this record's process: its file and pid, else its pid
 * when that pid has one address in every file; NULL when unknown or when
 * its hostname is not shared. */
static const char *rec_ip(const struct boot *v, int n, const struct rec *r) {
  int lo = 0, hi = n; /* the first entry of (host, pid) */
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    int d = strcmp(v[mid].host, r->host);
    if (d < 0 || (!d && v[mid].pid < r->pid)) lo = mid + 1;
    else hi = mid;
  }
  const char *by_pid = NULL;
  for (int i = lo; i < n && !strcmp(v[i].host, r->host) && v[i].pid == r->pid; i++) {
    if (!v[i].is_shared) return NULL;
    if (v[i].file == r->file) return v[i].ip;
    if (by_pid && strcmp(by_pid, v[i].ip)) return NULL;
    by_pid = v[i].ip;
  }
  return by_pid;
}

void logset_split_hosts(struct logset *ls) {
  struct boot *v = NULL;
  int n = boots_read(ls, &v);
  if (n > 1) qsort(v, (size_t)n, sizeof(*v), by_host_pid);
  /* most inputs: no hostname shared, nothing to rename */
  bool is_any = mark_shared(v, n);
  char(*names)[EXPLAIN_HOST_MAX] = is_any ? calloc(ls->nrecs, sizeof(*names)) : NULL;
  for (size_t i = 0; names && i < ls->nrecs; i++) {
    const struct rec *r = &ls->recs[i];
    if (!r->host[0]) continue;
    const char *ip = rec_ip(v, n, r);
    if (ip) snprintf(names[i], sizeof(names[i]), "%s/%s", r->host, ip);
  }
  /* renamed after every lookup: the boot entries point into the records */
  for (size_t i = 0; names && i < ls->nrecs; i++)
    if (names[i][0]) scopy(ls->recs[i].host, sizeof(ls->recs[i].host), names[i]);
  free(names);
  free(v);
}
