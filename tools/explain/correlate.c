/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/explain/correlate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "tools/explain/corr_lines.h"

/* Host name -> index while the facts are read: a job log interleaves
 * thousands of hosts, so a linear search per line would be quadratic. */
struct host_index {
  int *slots; /* index + 1; 0: empty */
  size_t cap;
};

static size_t name_hash(const char *s) {
  size_t h = 1469598103934665603ULL;
  while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
  return h;
}

static bool index_grow(struct host_index *x, const struct corr *c) {
  size_t cap = x->cap ? 2 * x->cap : 256;
  int *v = calloc(cap, sizeof(*v));
  if (!v) return false;
  for (int i = 0; i < c->nhosts; i++) {
    size_t k = name_hash(c->hosts[i].name) & (cap - 1);
    while (v[k]) k = (k + 1) & (cap - 1);
    v[k] = i + 1;
  }
  free(x->slots);
  x->slots = v, x->cap = cap;
  return true;
}

static struct corr_host *host_of(struct corr *c, struct host_index *x, const char *name,
                                 int *last) {
  if (*last >= 0 && !strcmp(c->hosts[*last].name, name)) return &c->hosts[*last];
  if ((size_t)c->nhosts * 2 >= x->cap && !index_grow(x, c)) return NULL;
  size_t k = name_hash(name) & (x->cap - 1);
  for (; x->slots[k]; k = (k + 1) & (x->cap - 1))
    if (!strcmp(c->hosts[x->slots[k] - 1].name, name)) return &c->hosts[*last = x->slots[k] - 1];
  if (c->nhosts >= 8 && (c->nhosts & (c->nhosts - 1))) {
    /* room left from the last doubling */
  } else {
    size_t cap = c->nhosts < 8 ? 8 : 2 * (size_t)c->nhosts;
    struct corr_host *v = realloc(c->hosts, cap * sizeof(*v));
    if (!v) return NULL;
    c->hosts = v;
  }
  struct corr_host *v = c->hosts;
  struct corr_host *h = &v[c->nhosts];
  memset(h, 0, sizeof(*h));
  scopy(h->name, sizeof(h->name), name);
  x->slots[k] = c->nhosts + 1;
  *last = c->nhosts++;
  return h;
}

static int by_name(const void *a, const void *b) {
  return strverscmp(((const struct corr_host *)a)->name, ((const struct corr_host *)b)->name);
}

/* A per-QP line read before its host's device list names the device by
 * NCCL's index only: name it now. */
static void name_ports(struct corr_host *h) {
  long v;
  for (int i = 0; i < h->nports; i++) {
    struct corr_port *p = &h->ports[i];
    if (p->dev[0] == '#' && text_long(p->dev + 1, &v) && v < h->nib && v < CORR_IBDEVS_MAX)
      scopy(p->dev, sizeof(p->dev), h->ib_names[v]);
  }
}

int corr_build(const struct logset *ls, struct corr *c) {
  memset(c, 0, sizeof(*c));
  int last = -1;
  struct host_index x = {0};
  for (size_t i = 0; i < ls->nrecs; i++) {
    const struct rec *r = &ls->recs[i];
    if (!r->host[0]) continue;
    struct corr_host *h = host_of(c, &x, r->host, &last);
    if (!h) return free(x.slots), ENOMEM;
    corr_read_rec(h, r);
  }
  free(x.slots);
  for (int i = 0; i < c->nhosts; i++) {
    struct corr_host *h = &c->hosts[i];
    name_ports(h);
    if (h->plugin_rec)
      snprintf(h->plugin_key, sizeof(h->plugin_key), "%s%s%s", h->plugin,
               h->diag_version[0] ? " " : "", h->diag_version);
  }
  if (c->nhosts) qsort(c->hosts, (size_t)c->nhosts, sizeof(c->hosts[0]), by_name);
  return 0;
}

void corr_free(struct corr *c) {
  for (int i = 0; i < c->nhosts; i++) {
    free(c->hosts[i].env);
    free(c->hosts[i].ports);
    free(c->hosts[i].addrs);
  }
  free(c->hosts);
  memset(c, 0, sizeof(*c));
}

const struct corr_host *corr_find(const struct corr *c, const char *name) {
  size_t n = strcspn(name, ".<");
  for (int i = 0; i < c->nhosts; i++)
    if (!strcmp(c->hosts[i].name, name)) return &c->hosts[i];
  for (int i = 0; i < c->nhosts; i++)
    if (strlen(c->hosts[i].name) == n && !strncmp(c->hosts[i].name, name, n)) return &c->hosts[i];
  return NULL;
}

const struct corr_host *corr_find_addr(const struct corr *c, const char *ip) {
  if (!ip || !ip[0]) return NULL;
  for (int i = 0; i < c->nhosts; i++)
    for (int a = 0; a < c->hosts[i].naddrs; a++)
      if (!strcmp(c->hosts[i].addrs[a].ip, ip)) return &c->hosts[i];
  return NULL;
}

const struct corr_host *corr_find_gid(const struct corr *c, const struct log_gid *g,
                                      const struct corr_port **port) {
  for (int i = 0; i < c->nhosts; i++)
    for (int p = 0; p < c->hosts[i].nports; p++) {
      const struct corr_port *q = &c->hosts[i].ports[p];
      if (!q->has_gid || memcmp(q->gid.b, g->b, 16)) continue;
      if (port) *port = q;
      return &c->hosts[i];
    }
  return NULL;
}

const char *corr_env(const struct corr_host *h, const char *key) {
  for (int i = 0; h && i < h->nenv; i++)
    if (!strcmp(h->env[i].key, key)) return h->env[i].val;
  return NULL;
}

/* Appends "v on a, b, c" naming at most 6 hosts. */
static void split_group(const struct corr *c, const char *const *values, int first, char *buf,
                        size_t cap) {
  size_t len = strlen(buf);
  snprintf(buf + len, cap - len, "%s%s on ", len ? "; " : "", values[first]);
  int named = 0, more = 0;
  for (int i = first; i < c->nhosts; i++) {
    if (!values[i] || strcmp(values[i], values[first])) continue;
    if (named == 6) {
      more++;
      continue;
    }
    len = strlen(buf);
    snprintf(buf + len, cap - len, "%s%s", named ? ", " : "", c->hosts[i].name);
    named++;
  }
  len = strlen(buf);
  if (more) snprintf(buf + len, cap - len, " and %d more", more);
}

int corr_split(const struct corr *c, const char *const *values, bool *is_odd, char *buf,
               size_t cap) {
  int ngroups = 0, best = -1, best_n = 0, second_n = 0;
  buf[0] = 0;
  for (int i = 0; i < c->nhosts; i++) {
    is_odd[i] = false;
    if (!values[i]) continue;
    bool is_new = true;
    for (int j = 0; j < i && is_new; j++)
      if (values[j] && !strcmp(values[j], values[i])) is_new = false;
    if (!is_new) continue;
    ngroups++;
    int n = 0;
    for (int j = i; j < c->nhosts; j++) n += values[j] && !strcmp(values[j], values[i]);
    if (n > best_n) second_n = best_n, best_n = n, best = i;
    else if (n > second_n) second_n = n;
    split_group(c, values, i, buf, cap);
  }
  if (ngroups > 1 && best_n > second_n)
    for (int i = 0; i < c->nhosts; i++) is_odd[i] = values[i] && strcmp(values[i], values[best]);
  return ngroups;
}
