/* SPDX-License-Identifier: Apache-2.0 */
/* An RDMA port that went down while the job ran, as this plugin's lines of
 * many ranks tell it: the port's own process says "device mlx5_0 port 1:
 * port error" and, when it returns, how long it was down against its queue
 * pairs' deadline and the NCCL_IB_TIMEOUT that rides it out; the
 * connections that failed meanwhile say "mlx5_0 port 1 went down during
 * the transfer" (its own) or "the peer's RDMA port (host-b's mlx5_0) has
 * been down ..." (its peers', from its liveness answers). Each of those
 * lines alone is a finding of its own; read together they are one: the
 * port, first, with the failures as its consequence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/explain/rules.h"

#define FLAP_PORTS 32

enum fl_line { FL_NONE, FL_DOWN, FL_UP, FL_OWN_FAIL, FL_PEER_FAIL };

static enum fl_line fl_kind(const struct rec *r) {
  const char *t = r->text;
  if (!r->is_diag || r->level != REC_WARN) return FL_NONE;
  if (!strncmp(t, "device ", 7) && strstr(t, ": port error (the link went down")) return FL_DOWN;
  if (!strncmp(t, "device ", 7) && strstr(t, ": port active again after ")) return FL_UP;
  if (strstr(t, "the peer's RDMA port (") && strstr(t, "IBV_WC_RETRY_EXC_ERR")) return FL_PEER_FAIL;
  if (strstr(t, " went down during the transfer (a port error event")) return FL_OWN_FAIL;
  return FL_NONE;
}

bool flap_match(const struct rec *r) { return fl_kind(r) != FL_NONE; }

struct flap_port {
  char host[EXPLAIN_HOST_MAX];
  char dev[64]; /* "mlx5_0" */
  int port;     /* 0 when only its peers named it (no port number) */
  double down_s, deadline_s;
  bool is_up, is_within;
  bool has_own; /* its own process's lines are among these */
  int timeout;  /* the NCCL_IB_TIMEOUT that rides it out; 0 none said */
  char settings[96];
  char slower[64]; /* the rate its link came back at, below the one before; "" not said */
  int was_gbps;
  int own_fails, peer_fails;
  struct finding *f;
};

/* The port a line is about, on which host: "device mlx5_0 port 1: ..." is
 * the line's own host; "the peer's RDMA port (vm's mlx5_0)" its peer's;
 * "... mlx5_0 port 1 went down during" (the last such, after any relayed
 * words) the host of the line. false when it names none. */
static bool port_of(const struct rec *r, enum fl_line k, struct flap_port *p) {
  memset(p, 0, sizeof(*p));
  snprintf(p->host, sizeof(p->host), "%s", r->host);
  const char *t = r->text;
  if (k == FL_DOWN || k == FL_UP) return sscanf(t, "device %63s port %d:", p->dev, &p->port) == 2;
  if (k == FL_PEER_FAIL) {
    const char *s = strstr(t, "the peer's RDMA port (") + 22, *ap = strstr(s, "'s ");
    const char *end = ap ? strchr(ap, ')') : NULL;
    if (!ap || !end || ap == s || (size_t)(ap - s) >= sizeof(p->host) ||
        (size_t)(end - ap - 3) >= sizeof(p->dev))
      return false;
    snprintf(p->host, sizeof(p->host), "%.*s", (int)(ap - s), s);
    snprintf(p->dev, sizeof(p->dev), "%.*s", (int)(end - ap - 3), ap + 3);
    return true;
  }
  const char *w = strstr(t, " went down during the transfer (a port error event"), *s = w;
  while (s > t && s[-1] != ':' && s[-1] != ';') s--; /* "...: mlx5_0 port 1 went down" */
  /* "receive connection with b (...) ...: the sending side ended the
   * connection: ... mlx5_0 port 1 went down": the peer's words, its port */
  const char *ended = strstr(t, "side ended the connection: "),
             *with = strstr(t, "connection with ");
  if (ended && ended < w && with) {
    size_t hl = strcspn(with + 16, " (");
    if (hl < sizeof(p->host)) snprintf(p->host, sizeof(p->host), "%.*s", (int)hl, with + 16);
  }
  return sscanf(s, " %63s port %d went", p->dev, &p->port) == 2;
}

static struct flap_port *find(struct flap_port *v, int *n, const struct flap_port *p) {
  for (int i = 0; i < *n; i++) /* a peer's word has no port number: its device is enough */
    if (!strcmp(v[i].host, p->host) && !strcmp(v[i].dev, p->dev) &&
        (!p->port || !v[i].port || v[i].port == p->port)) {
      if (!v[i].port) v[i].port = p->port;
      return &v[i];
    }
  if (*n == FLAP_PORTS) return NULL;
  v[*n] = *p;
  return &v[(*n)++];
}

/* "... after 4.004 s down, longer than its queue pairs' deadline of 2.1 s
 * (NCCL_IB_TIMEOUT=16, NCCL_IB_RETRY_CNT=7): ...; to ride out flaps this
 * long set NCCL_IB_TIMEOUT=18 (9 s)" */
static void read_up(const char *t, struct flap_port *p) {
  const char *a = strstr(t, "port active again after ");
  p->is_up = true;
  if (a) p->down_s = strtod(a + 24, NULL);
  p->is_within = strstr(t, ", within its queue pairs' deadline of ") != NULL;
  const char *d = strstr(t, "deadline of ");
  if (d) p->deadline_s = strtod(d + 12, NULL);
  const char *open = d ? strchr(d, '(') : NULL, *close = open ? strchr(open, ')') : NULL;
  if (open && close && (size_t)(close - open - 1) < sizeof(p->settings))
    snprintf(p->settings, sizeof(p->settings), "%.*s", (int)(close - open - 1), open + 1);
  const char *set = strstr(t, "set NCCL_IB_TIMEOUT=");
  if (set) p->timeout = atoi(set + 20);
  /* "; and it came back at 50 Gb/sec (2X EDR), below the 100 Gb/sec it ..." */
  const char *back = strstr(t, "it came back at "),
             *below = back ? strstr(back, ", below the ") : NULL;
  if (below && (size_t)(below - back - 16) < sizeof(p->slower)) {
    snprintf(p->slower, sizeof(p->slower), "%.*s", (int)(below - back - 16), back + 16);
    p->was_gbps = atoi(below + 12);
  }
}

static void cause(struct finding *f, const struct flap_port *p) {
  char port[96], spell[300] = "", fails[200] = "";
  if (p->port) snprintf(port, sizeof(port), "RDMA port %s port %d", p->dev, p->port);
  else snprintf(port, sizeof(port), "RDMA port of %s", p->dev);
  if (p->is_up && p->is_within)
    snprintf(spell, sizeof(spell),
             " and came back after %.1f s, within its queue pairs' deadline of %.1f s (%s)",
             p->down_s, p->deadline_s, p->settings);
  else if (p->is_up)
    snprintf(spell, sizeof(spell),
             " and came back after %.1f s, longer than its queue pairs' deadline of %.1f s (%s)",
             p->down_s, p->deadline_s, p->settings);
  else if (p->has_own)
    snprintf(spell, sizeof(spell), " and did not come back while these logs ran");
  else
    snprintf(spell, sizeof(spell),
             ", as its process told its peers (its own log, which says for how long, is not "
             "among these)");
  int n = p->own_fails + p->peer_fails;
  if (n)
    snprintf(fails, sizeof(fails),
             ": the %d connection failure%s named with it (%d retry-exceeded on its peers, %d on "
             "its own host) %s",
             n, n == 1 ? "" : "s", p->peer_fails, p->own_fails,
             n == 1 ? "is its consequence, not a fault of its own"
                    : "are its consequence, not faults of their own");
  else if (p->is_up && p->is_within)
    snprintf(fails, sizeof(fails), ": its connections rode it out");
  char slower[200] = "";
  if (p->slower[0])
    snprintf(slower, sizeof(slower),
             "; its link came back at %s, below the %d Gb/sec it had: every ring and tree "
             "through it now moves at that rate",
             p->slower, p->was_gbps);
  finding_cause(f, "%s on %s went down while the job ran%s%s%s", port, p->host, spell, fails,
                slower);
}

static void fix(struct finding *f, const struct flap_port *p) {
  char ride[160] = "";
  if (p->timeout)
    snprintf(ride, sizeof(ride),
             "; to ride out flaps this long set NCCL_IB_TIMEOUT=%d on every rank (the fabric "
             "must be otherwise healthy)",
             p->timeout);
  finding_fix(
    f,
    "the link of %s on %s: ibstat, mlxlink or ethtool, dmesg, and the cable, transceiver "
    "and switch port's error counters and log%s%s",
    p->dev, p->host,
    p->slower[0] ? " (it retrained slower: reseat or replace its cable or transceiver)" : "", ride);
  if (p->timeout) finding_export(f, "NCCL_IB_TIMEOUT=%d", p->timeout);
}

void flap_build(const struct explain_ctx *cx, const struct hits *h) {
  struct flap_port v[FLAP_PORTS];
  int n = 0;
  for (size_t i = 0; i < h->n; i++) { /* the ports first, as their own processes name them */
    enum fl_line k = fl_kind(h->v[i]);
    struct flap_port p, *q;
    if ((k != FL_DOWN && k != FL_UP) || !port_of(h->v[i], k, &p) || !(q = find(v, &n, &p)))
      continue;
    q->has_own = true;
    if (k == FL_UP) read_up(h->v[i]->text, q);
  }
  for (size_t i = 0; i < h->n; i++) {
    enum fl_line k = fl_kind(h->v[i]);
    struct flap_port p, *q;
    if ((k != FL_OWN_FAIL && k != FL_PEER_FAIL) || !port_of(h->v[i], k, &p) ||
        !(q = find(v, &n, &p)))
      continue;
    if (k == FL_PEER_FAIL) q->peer_fails++;
    else q->own_fails++;
  }
  for (int i = 0; i < n; i++) {
    if (!(v[i].f = finding_new(cx->out, "port-flap", CONF_HIGH))) return;
    cause(v[i].f, &v[i]);
    fix(v[i].f, &v[i]);
  }
  for (int pass = 0; pass < 2; pass++) /* every line to its port's finding, the port's first */
    for (size_t i = 0; i < h->n; i++) {
      enum fl_line k = fl_kind(h->v[i]);
      struct flap_port p, *q;
      if ((k == FL_DOWN || k == FL_UP) != (pass == 0)) continue;
      if (port_of(h->v[i], k, &p) && (q = find(v, &n, &p)) && q->f) finding_evidence(q->f, h->v[i]);
    }
}
