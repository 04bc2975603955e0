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
  return ip[0] != 0;
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

/* Two different addresses under this hostname? */
static bool host_is_shared(const struct boot *v, int n, const char *host) {
  const char *first = NULL;
  for (int i = 0; i < n; i++) {
    if (strcmp(v[i].host, host)) continue;
    if (!first) first = v[i].ip;
    else if (strcmp(first, v[i].ip)) return true;
  }
  return false;
}

/* The address of this record's process: its file and pid, else its pid
 * when that pid has one address in every file; NULL when unknown. */
static const char *rec_ip(const struct boot *v, int n, const struct rec *r) {
  const char *by_pid = NULL;
  for (int i = 0; i < n; i++) {
    if (strcmp(v[i].host, r->host) || v[i].pid != r->pid) continue;
    if (v[i].file == r->file) return v[i].ip;
    if (by_pid && strcmp(by_pid, v[i].ip)) return NULL;
    by_pid = v[i].ip;
  }
  return by_pid;
}

void logset_split_hosts(struct logset *ls) {
  struct boot *v = NULL;
  int n = boots_read(ls, &v);
  bool is_any = false; /* most inputs: no hostname shared, nothing to rename */
  for (int i = 0; i < n && !is_any; i++) is_any = host_is_shared(v, n, v[i].host);
  char(*names)[EXPLAIN_HOST_MAX] = is_any ? calloc(ls->nrecs, sizeof(*names)) : NULL;
  for (size_t i = 0; names && i < ls->nrecs; i++) {
    const struct rec *r = &ls->recs[i];
    if (!r->host[0] || !host_is_shared(v, n, r->host)) continue;
    const char *ip = rec_ip(v, n, r);
    if (ip) snprintf(names[i], sizeof(names[i]), "%s/%s", r->host, ip);
  }
  /* renamed after every lookup: the boot entries point into the records */
  for (size_t i = 0; names && i < ls->nrecs; i++)
    if (names[i][0]) scopy(ls->recs[i].host, sizeof(ls->recs[i].host), names[i]);
  free(names);
  free(v);
}
