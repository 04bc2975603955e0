/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's "slow link:" WARNs (transport/run/slow.c): each end of a
 * link that ran well below its siblings says so with both addresses, the
 * ratio and its sockets' counters. Lines of many ranks about one path (in
 * either direction, from either end) make one finding naming the path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/explain/rules.h"

#define SLOW_MAX 256

struct slow_path {
  char a[64], b[64]; /* the two ends' addresses, ordered */
  double worst;      /* the lowest ratio said */
  struct finding *f;
};

bool slow_match(const struct rec *r) {
  return r->is_diag && r->level == REC_WARN && !strncmp(r->text, "slow link: ", 11);
}

/* The address in "(10.0.0.7<46417>, eth0)" at the first '(' from p. */
static const char *addr_at(const char *p, char *out, size_t cap) {
  const char *open = p ? strchr(p, '(') : NULL, *end = open ? strchr(open, '<') : NULL;
  if (!end || (size_t)(end - open - 1) >= cap) return NULL;
  snprintf(out, cap, "%.*s", (int)(end - open - 1), open + 1);
  return end;
}

/* Both ends and the ratio of one line; false when it does not parse. */
static bool slow_parse(const struct rec *r, char *peer, char *here, size_t cap, double *ratio) {
  const char *p = addr_at(r->text + 11, peer, cap);
  p = p ? strstr(p, ") pid ") : NULL;
  p = p ? strstr(p, " from ") : NULL;
  if (!addr_at(p, here, cap)) return false;
  const char *x = strstr(p, "x the median ");
  if (!x) return false;
  while (x > p && ((x[-1] >= '0' && x[-1] <= '9') || x[-1] == '.')) x--;
  *ratio = strtod(x, NULL);
  return true;
}

static struct slow_path *path_of(struct slow_path *v, int *n, const char *x, const char *y) {
  const char *a = strcmp(x, y) < 0 ? x : y, *b = a == x ? y : x;
  for (int k = 0; k < *n; k++)
    if (!strcmp(v[k].a, a) && !strcmp(v[k].b, b)) return &v[k];
  if (*n == SLOW_MAX) return NULL;
  struct slow_path *s = &v[(*n)++];
  snprintf(s->a, sizeof(s->a), "%s", a);
  snprintf(s->b, sizeof(s->b), "%s", b);
  s->worst = 1e9;
  return s;
}

void slow_build(const struct explain_ctx *cx, const struct hits *h) {
  struct slow_path *v = calloc(SLOW_MAX, sizeof(*v));
  int n = 0;
  for (size_t i = 0; v && i < h->n; i++) {
    char peer[64], here[64];
    double ratio;
    if (!slow_parse(h->v[i], peer, here, sizeof(peer), &ratio)) continue;
    struct slow_path *s = path_of(v, &n, peer, here);
    if (!s) break;
    if (!s->f && !(s->f = finding_new(cx->out, "slow-link", CONF_HIGH))) break;
    if (ratio < s->worst) s->worst = ratio;
    finding_evidence(s->f, h->v[i]);
  }
  for (int k = 0; v && k < n; k++) {
    finding_cause(v[k].f,
                  "the network path between %s and %s runs well below the other links of the "
                  "same processes (down to %.2fx their median while busy), and its sockets show "
                  "why (retransmits, lost segments or packets out of order, or a long round "
                  "trip): a lossy, congested or shaped link paces every collective over it",
                  v[k].a, v[k].b, v[k].worst);
    finding_fix(v[k].f,
                "on both hosts check that path: ip -s link on both interfaces (errors, drops), "
                "ss -ti to the peer, tc qdisc show, nft list ruleset, and the switch ports' "
                "error and discard counters; move the job off it until it is fixed");
  }
  free(v);
}
