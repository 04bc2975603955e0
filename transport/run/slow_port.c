/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA ports' counters for the slow-link judge (slow_port.h). State is
 * the liveness thread's own (slow.c holds its lock around both calls). */
#include "transport/run/slow_port.h"

#include <stdio.h>
#include <string.h>

#include "topo/sysfs.h"
#include "transport/run/port_state.h"
#include "transport/run/slow.h"
#include "transport/run/slow_say.h"

/* The counters the kernel's drivers name for loss and congestion: mlx5's
 * and rxe's. A driver without one leaves it unread. */
enum kind { K_RETRY, K_CONGESTION };
static const struct counter {
  const char *name, *words;
  enum kind kind;
} counters[] = {
  {"packet_seq_err", "sequence NAKs received", K_RETRY},
  {"local_ack_timeout_err", "ACK timeouts", K_RETRY},
  {"out_of_sequence", "packets received out of sequence", K_RETRY},
  {"implied_nak_seq_err", "implied NAKs", K_RETRY},
  {"duplicate_request", "duplicate requests", K_RETRY},
  {"rcvd_seq_err", "sequence NAKs received", K_RETRY},         /* rxe */
  {"out_of_seq_request", "requests out of sequence", K_RETRY}, /* rxe */
  {"completer_retry_err", "resends", K_RETRY},                 /* rxe */
  {"np_cnp_sent", "CNPs sent", K_CONGESTION},
  {"rp_cnp_handled", "CNPs handled", K_CONGESTION},
  {"np_ecn_marked_roce_packets", "ECN-marked packets", K_CONGESTION},
};
#define NCOUNTERS (int)(sizeof(counters) / sizeof(counters[0]))
#define MAX_PORTS 32

struct port_state {
  char dev[64];
  int port;
  long last[NCOUNTERS]; /* -1: not readable */
  uint32_t w[RUN_SLOW_SPAN][NCOUNTERS];
  int w_next, nwin;
  double gbps;
  bool is_named; /* named lossy in this episode (slow_port_judge) */
};

static struct port_state ports[MAX_PORTS];
static int nports, named_count;

static struct port_state *port_of(const char *dev, int port, bool add) {
  for (int k = 0; k < nports; k++)
    if (ports[k].port == port && !strcmp(ports[k].dev, dev)) return &ports[k];
  if (!add || nports == MAX_PORTS) return NULL;
  struct port_state *p = &ports[nports++];
  memset(p, 0, sizeof(*p));
  snprintf(p->dev, sizeof(p->dev), "%s", dev);
  p->port = port;
  p->nwin = -1; /* the first read is the baseline */
  return p;
}

static void read_port(struct port_state *p) {
  bool is_base = p->nwin < 0;
  uint32_t *w = p->w[p->w_next];
  for (int c = 0; c < NCOUNTERS; c++) {
    long v = -1;
    if (sysfs_read_long(&v, "class/infiniband/%s/ports/%d/hw_counters/%s", p->dev, p->port,
                        counters[c].name) ||
        v < 0)
      v = -1;
    long d = !is_base && v >= 0 && p->last[c] >= 0 && v > p->last[c] ? v - p->last[c] : 0;
    w[c] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
    p->last[c] = v;
  }
  p->gbps = run_port_rate(p->dev, p->port, NULL, 0);
  if (is_base) {
    p->nwin = 0;
    return;
  }
  p->w_next = (p->w_next + 1) % RUN_SLOW_SPAN;
  if (p->nwin < RUN_SLOW_SPAN) p->nwin++;
}

void slow_port_window(const struct run_conn_info *all, int n) {
  struct port_state *seen[MAX_PORTS];
  int nseen = 0;
  for (int k = 0; k < n; k++) {
    if (!all[k].is_open || strcmp(all[k].transport, "ib") || all[k].port <= 0) continue;
    struct port_state *p = port_of(all[k].dev, all[k].port, true);
    bool is_read = false;
    for (int j = 0; j < nseen; j++) is_read |= seen[j] == p;
    if (!p || is_read) continue;
    seen[nseen++] = p;
    read_port(p);
  }
}

/* The counters that rose over the span, in the table's order. */
static void words_of(const uint64_t *sum, char *out, size_t cap) {
  size_t len = 0;
  out[0] = 0;
  for (int c = 0; c < NCOUNTERS && len < cap; c++) {
    if (!sum[c]) continue;
    len += (size_t)snprintf(out + len, cap - len, "%s%llu %s", len ? ", " : "",
                            (unsigned long long)sum[c], counters[c].words);
  }
}

bool slow_port_of(const char *dev, int port, struct slow_port_view *out) {
  memset(out, 0, sizeof(*out));
  const struct port_state *p = port_of(dev, port, false);
  if (!p || p->nwin <= 0) return false;
  uint64_t sum[NCOUNTERS] = {0};
  for (int w = 0; w < p->nwin; w++) {
    bool retry = false, cong = false;
    for (int c = 0; c < NCOUNTERS; c++) {
      uint32_t d = p->w[w][c];
      sum[c] += d;
      if (counters[c].kind == K_RETRY) out->retries += d, retry |= d > 0;
      else out->congestion += d, cong |= d > 0;
    }
    out->retry_windows += retry;
    out->congestion_windows += cong;
  }
  out->has = true;
  out->gbps = p->gbps;
  words_of(sum, out->words, sizeof(out->words));
  return true;
}

#define PORT_CONNS 16 /* connections a port's WARN names */

/* Whether x's connection runs on port p. */
static bool is_on(const struct slow_sample *x, const struct port_state *p) {
  return x->i && !strcmp(x->i->transport, "ib") && x->i->port == p->port &&
         !strcmp(x->i->dev, p->dev);
}

static void judge_port(struct port_state *p, const struct slow_sample *s, int n) {
  struct slow_port_view v;
  if (!slow_port_of(p->dev, p->port, &v)) return;
  const struct slow_sample *on[PORT_CONNS];
  int non = 0, nconns = 0;
  uint64_t requests = 0;
  bool stands_out = false, is_measured = false, is_flapped = false;
  for (int k = 0; k < n; k++) {
    if (!is_on(&s[k], p)) continue;
    if (non < PORT_CONNS) on[non++] = &s[k];
    nconns++;
    requests += s[k].requests;
    stands_out |= s[k].is_named || (s[k].is_measured && s[k].ratio < 0.75);
    is_flapped |= s[k].is_flapped; /* its counters hold a flap's resends */
    is_measured |= s[k].is_measured;
  }
  if (p->is_named && !v.retries && v.retry_windows == 0 && p->nwin >= RUN_SLOW_SPAN)
    p->is_named = false; /* a whole span without a resend: a new episode may be named */
  bool is_lossy = v.retry_windows >= RUN_SLOW_WINDOWS && v.retries >= SLOW_PORT_MIN &&
                  v.retries * 1000 >= (uint64_t)SLOW_PORT_PER_MILLE * requests;
  /* a connection that stands out is named by the link judge, with its path */
  if (p->is_named || !is_lossy || stands_out || is_flapped || !is_measured || !non) return;
  p->is_named = true;
  named_count++;
  slow_say_port(p->dev, p->port, &v, p->nwin * RUN_SLOW_WINDOW_SEC, on, non, nconns, requests);
}

void slow_port_judge(const struct slow_sample *s, int n) {
  for (int k = 0; k < nports; k++) judge_port(&ports[k], s, n);
}

int slow_port_named(void) { return named_count; }
