/* SPDX-License-Identifier: Apache-2.0 */
/* Hosts grouped by the value they report, and which ranks speak for a
 * host: what every comparison (compare.c, compare_env.c, compare_net.c)
 * builds on. It calls no comparison, so those files depend on it one way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "tools/probe/compare.h"

void cmp_add(struct cmp_groups *gs, const char *value, const char *host) {
  int i = 0;
  while (i < gs->n && !(value ? gs->g[i].value && !strcmp(gs->g[i].value, value) : !gs->g[i].value))
    i++;
  if (i == gs->n) {
    struct cmp_group *grown = probe_grow(gs->g, gs->n, sizeof(*grown));
    if (!grown) return;
    gs->g = grown;
    memset(&grown[gs->n], 0, sizeof(*grown));
    grown[gs->n].value = value ? strdup(value) : NULL;
    gs->n++;
  }
  struct cmp_group *g = &gs->g[i];
  for (int k = 0; k < g->nhost; k++)
    if (!strcmp(g->hosts[k], host)) return;
  char **grown = probe_grow(g->hosts, g->nhost, sizeof(char *));
  if (!grown) return;
  g->hosts = grown;
  g->hosts[g->nhost] = strdup(host);
  if (g->hosts[g->nhost]) g->nhost++;
}

void cmp_free(struct cmp_groups *gs) {
  for (int i = 0; i < gs->n; i++) {
    for (int k = 0; k < gs->g[i].nhost; k++) free(gs->g[i].hosts[k]);
    free(gs->g[i].hosts);
    free(gs->g[i].value);
  }
  free(gs->g);
  memset(gs, 0, sizeof(*gs));
}

int cmp_majority(const struct cmp_groups *gs) {
  int best = 0;
  for (int i = 1; i < gs->n; i++)
    if (gs->g[i].nhost > gs->g[best].nhost) best = i;
  return best;
}

void cmp_hosts(const struct cmp_group *g, int full, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  int shown = full || g->nhost <= CMP_HOSTS_SHOWN + 1 ? g->nhost : CMP_HOSTS_SHOWN;
  for (int k = 0; k < shown && o < cap; k++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%s", k ? ", " : "", g->hosts[k]);
  if (shown < g->nhost && o < cap) snprintf(buf + o, cap - o, " and %d more", g->nhost - shown);
}

void cmp_describe(const struct cmp_groups *gs, const char *unset_word, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  /* The minorities first: they are what to look at. */
  int major = cmp_majority(gs);
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < gs->n && o < cap; i++) {
      if ((i == major) != (pass == 1)) continue;
      char hosts[600];
      cmp_hosts(&gs->g[i], 0, hosts, sizeof(hosts));
      o += (size_t)snprintf(buf + o, cap - o, "%s%s on %s", o ? "; " : "",
                            gs->g[i].value ? gs->g[i].value : unset_word, hosts);
    }
}

void cmp_minority_hosts(const struct cmp_groups *gs, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  int major = cmp_majority(gs);
  for (int i = 0; i < gs->n; i++)
    for (int k = 0; i != major && k < gs->g[i].nhost && o < cap; k++)
      o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? "," : "", gs->g[i].hosts[k]);
}

int cmp_reported(const struct probe_run *r, int rank) { return r->facts[rank].host[0] != 0; }

static int first_of_host(const struct probe_run *r, int rank) {
  if (!cmp_reported(r, rank)) return 0;
  for (int k = 0; k < rank; k++)
    if (cmp_reported(r, k) && !strcmp(r->facts[k].host, r->facts[rank].host)) return 0;
  return 1;
}

/* Answered from the table probe_compare builds once (every check asks it
 * for every rank). */
int cmp_host_first(const struct probe_run *r, int rank) {
  return r->host_first ? r->host_first[rank] : first_of_host(r, rank);
}
