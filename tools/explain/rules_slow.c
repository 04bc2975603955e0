/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's "slow link:" WARNs (transport/run/slow.c): each end of a
 * link that ran well below its siblings says so with both addresses, the
 * ratio and its sockets' counters. Lines of many ranks about one path (in
 * either direction, from either end) make one finding naming the path.
 * Paths that share one end, named by several peers, are that end's fault
 * (its NIC, cable or switch port, or the host itself reading late): one
 * finding names the end, not a path per peer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/size.h"

#include "tools/explain/rules.h"

#define SLOW_MAX 256
#define SLOW_LINES 32 /* evidence kept per path */

struct slow_path {
  char a[64], b[64]; /* the two ends' addresses, ordered */
  double worst;      /* the lowest ratio said */
  const struct rec *lines[SLOW_LINES];
  int nlines;
  bool is_taken; /* told in a common end's finding */
};

#define PORT_HEAD "lossy port: "

bool slow_match(const struct rec *r) {
  return r->is_diag && r->level == REC_WARN &&
         (!strncmp(r->text, "slow link: ", 11) || !strncmp(r->text, PORT_HEAD, strlen(PORT_HEAD)));
}

/* An RDMA port that lost packets with its connections alike (a job of two
 * hosts has one path): "mlx5_0 port 1 on a (10.0.0.1)" and what it
 * counted, one finding per port however many lines repeat it. */
static void tell_ports(const struct explain_ctx *cx, const struct hits *h) {
  char told[16][160];
  int ntold = 0;
  for (size_t i = 0; i < h->n; i++) {
    const char *t = h->v[i]->text;
    if (strncmp(t, PORT_HEAD, strlen(PORT_HEAD))) continue;
    t += strlen(PORT_HEAD);
    const char *c = strstr(t, " counted "), *end = c ? strstr(c, " in ") : NULL;
    if (!end || c - t >= 160) continue;
    char key[160];
    snprintf(key, sizeof(key), "%.*s", (int)(c - t), t);
    bool seen = false;
    for (int k = 0; k < ntold; k++) seen |= !strcmp(told[k], key);
    if (seen || ntold == 16) continue;
    snprintf(told[ntold++], sizeof(key), "%s", key);
    struct finding *f = finding_new(cx->out, "slow-link", CONF_HIGH);
    if (!f) return;
    for (size_t j = i; j < h->n; j++)
      if (strstr(h->v[j]->text, key) && !strncmp(h->v[j]->text, PORT_HEAD, strlen(PORT_HEAD)))
        finding_evidence(f, h->v[j]);
    finding_cause(f,
                  "the RDMA port %s lost packets while the job ran (it counted %.*s), with "
                  "every connection on it alike, so the loss is on this port's paths, not on "
                  "one of them: a priority without PFC, a bad cable or switch port",
                  key, (int)(end - c - 9), c + 9);
    finding_fix(f,
                "on RoCE, check that NCCL_IB_TC's priority has PFC on that host, its peers and "
                "every switch between (nccl-net-diag doctor on each host); then that port's "
                "cable and switch port (ethtool -S or mlxlink, the switch port's error counters)");
  }
}

/* The address in "(10.0.0.7<46417>, eth0)" at the first '(' from p, or in
 * an RDMA end's "(10.0.0.7, mlx5_0 port 1)". */
static const char *addr_at(const char *p, char *out, size_t cap) {
  const char *open = p ? strchr(p, '(') : NULL;
  const char *end = open ? open + 1 + strcspn(open + 1, "<,)") : NULL;
  if (!end || !*end || end == open + 1 || (size_t)(end - open - 1) >= cap) return NULL;
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

static bool has_end(const struct slow_path *p, const char *x) {
  return !strcmp(p->a, x) || !strcmp(p->b, x);
}

/* The paths not yet told that have end x. */
static int paths_with(const struct slow_path *v, int n, const char *x) {
  int c = 0;
  for (int k = 0; k < n; k++) c += !v[k].is_taken && has_end(&v[k], x);
  return c;
}

/* The end most untold paths share, when two or more do: NULL otherwise. */
static const char *common_end(const struct slow_path *v, int n) {
  const char *best = NULL;
  int most = 1;
  for (int k = 0; k < n; k++) {
    if (v[k].is_taken) continue;
    const char *ends[2] = {v[k].a, v[k].b};
    for (int e = 0; e < 2; e++) {
      int c = paths_with(v, n, ends[e]);
      if (c > most) most = c, best = ends[e];
    }
  }
  return best;
}

static void tell_end(const struct explain_ctx *cx, struct slow_path *v, int n, const char *x) {
  struct finding *f = finding_new(cx->out, "slow-link", CONF_HIGH);
  if (!f) return;
  char others[400] = "";
  size_t o = 0;
  int count = 0;
  double worst = 1e9;
  for (int k = 0; k < n; k++) {
    if (v[k].is_taken || !has_end(&v[k], x)) continue;
    v[k].is_taken = true;
    const char *other = strcmp(v[k].a, x) ? v[k].a : v[k].b;
    if (o < sizeof(others))
      o += (size_t)snprintf(others + o, sizeof(others) - o, "%s%s", count ? ", " : "", other);
    count++;
    if (v[k].worst < worst) worst = v[k].worst;
    for (int i = 0; i < v[k].nlines; i++) finding_evidence(f, v[k].lines[i]);
  }
  char rt[24];
  finding_cause(f,
                "%d slow links were named and every one has %s at one end (to %s; down to "
                "%sx their siblings' median while busy): the fault is at %s's end, not on "
                "%d paths: its NIC, cable or switch port, or that host itself (a busy or "
                "throttled CPU reads and acknowledges late)",
                count, x, others, ratio_format(rt, sizeof(rt), worst), x, count);
  finding_fix(f,
              "on the host at %s: ip -s link and ethtool -S on its interface (errors, drops, the "
              "negotiated speed), its switch port's error counters, and top or mpstat for its "
              "CPU; move the job off that host until it is fixed",
              x);
}

static void tell_path(const struct explain_ctx *cx, const struct slow_path *p) {
  struct finding *f = finding_new(cx->out, "slow-link", CONF_HIGH);
  if (!f) return;
  for (int i = 0; i < p->nlines; i++) finding_evidence(f, p->lines[i]);
  char rt[24];
  finding_cause(f,
                "the network path between %s and %s runs well below the other links of the "
                "same processes (down to %sx their median while busy), and its counters "
                "show why (over TCP retransmits, lost segments or packets out of order, or a "
                "long round trip; over RDMA its ports' resends, out-of-sequence packets, CNPs "
                "or a lower link rate): a lossy, congested or shaped link paces every "
                "collective over it",
                p->a, p->b, ratio_format(rt, sizeof(rt), p->worst));
  finding_fix(f, "on both hosts check that path: ip -s link on both interfaces (errors, drops), "
                 "ss -ti to the peer, tc qdisc show, nft list ruleset; over RoCE that the "
                 "traffic class's priority has PFC on both hosts and the switches between "
                 "(nccl-net-diag doctor), and the ports' hw_counters; then the switch ports' "
                 "error and discard counters; move the job off it until it is fixed");
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
    if (ratio < s->worst) s->worst = ratio;
    if (s->nlines < SLOW_LINES) s->lines[s->nlines++] = h->v[i];
  }
  for (const char *x; v && (x = common_end(v, n));) tell_end(cx, v, n, x);
  for (int k = 0; v && k < n; k++)
    if (!v[k].is_taken) tell_path(cx, &v[k]);
  free(v);
  tell_ports(cx, h);
}
