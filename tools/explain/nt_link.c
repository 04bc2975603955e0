/* SPDX-License-Identifier: Apache-2.0 */
/* The network a healthy nccl-tests run had, from NCCL's own INFO lines:
 * "NET/IB: [d] mlx5_0:uverbs0:1/IB provider=Mlx5 speed=400000 ..." (2.27+)
 * and "Found network interface eth0 with speed 100000 Mbps" (sockets,
 * 2.28+), in Mb/s. Across hosts, a collective's bus bandwidth is bounded
 * by what each host's links carry together, so the report can say how
 * close the run came ("healthy, but at 40% of the links"). Each link is
 * counted once per host, however many ranks print it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/explain/rules.h"

#define NT_LINKS_MAX 256

struct nt_seen {
  char host[EXPLAIN_HOST_MAX];
  char name[48];
  double mbps;
  bool is_ib;
};

/* One speed line: its link's name, speed and transport; false if not one. */
static bool nt_speed_line(const char *t, struct nt_seen *s) {
  const char *p;
  long v = 0;
  if ((p = text_after(t, "NET/IB: [")) && (p = strchr(p, ']')) && text_after(p, " speed=")) {
    p++;
    while (*p == ' ') p++;
    text_token(p, ":", s->name, sizeof(s->name));
    s->is_ib = true;
    if (!text_long(text_after(t, " speed="), &v)) return false;
  } else if ((p = text_after(t, "Found network interface ")) && text_after(p, " with speed ")) {
    text_token(p, "", s->name, sizeof(s->name));
    s->is_ib = false;
    if (!text_long(text_after(p, " with speed "), &v)) return false;
  } else return false;
  s->mbps = (double)v;
  return v > 0 && s->name[0];
}

static int nt_collect(const struct logset *ls, struct nt_seen *v, bool *has_ib) {
  int n = 0;
  *has_ib = false;
  for (size_t i = 0; i < ls->nrecs && n < NT_LINKS_MAX; i++) {
    struct nt_seen s = {0};
    if (ls->recs[i].level == REC_TEXT || !nt_speed_line(ls->recs[i].text, &s)) continue;
    snprintf(s.host, sizeof(s.host), "%s", ls->recs[i].host);
    bool dup = false;
    for (int k = 0; k < n && !dup; k++)
      dup = !strcmp(v[k].host, s.host) && !strcmp(v[k].name, s.name) && v[k].is_ib == s.is_ib;
    if (!dup) v[n++] = s, *has_ib |= s.is_ib;
  }
  return n;
}

bool nccltests_link(const struct logset *ls, struct nt_link *l) {
  memset(l, 0, sizeof(*l));
  struct nt_seen *v = calloc(NT_LINKS_MAX, sizeof(*v));
  if (!v) return false;
  bool has_ib;
  int n = nt_collect(ls, v, &has_ib);
  for (int i = 0; i < n; i++) {
    if (v[i].is_ib != has_ib) continue; /* on IB, the sockets carry only bootstrap */
    bool first = true;
    for (int k = 0; k < i && first; k++) first = strcmp(v[k].host, v[i].host) != 0;
    if (!first) continue;
    double sum = 0;
    int links = 0;
    for (int k = i; k < n; k++)
      if (v[k].is_ib == has_ib && !strcmp(v[k].host, v[i].host)) sum += v[k].mbps, links++;
    l->hosts++;
    if (sum / 8000.0 > l->gbs) l->gbs = sum / 8000.0, l->links = links;
  }
  l->is_ib = has_ib;
  free(v);
  return l->hosts >= 2 && l->gbs > 0; /* on one host the links carry nothing of it */
}
