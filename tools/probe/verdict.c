/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/probe/verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/strutil.h"

#define SLOW_MIN_BYTES (8u << 20) /* below this a transfer measures latency, not bandwidth */
#define SLOW_MIN_PAIRS 4
#define PAIR_PROBLEMS_MAX 32

void verdict_direction(const struct probe_run *r, struct probe_pair *p, const char *fail,
                       const struct wire_result *rx, int have_rx, const struct wire_result *tx,
                       int have_tx, uint64_t lat_ns) {
  p->tested = 1;
  p->ok = have_rx && rx->ok_recv;
  if (p->ok) {
    p->gbps = rx->recv_ns ? (double)rx->recv_bytes / (double)rx->recv_ns : 0;
    p->lat_us = (double)lat_ns / 1000.0;
    verdict_repaired(p, rx, tx, have_tx);
    return;
  }
  char src[PROBE_HOST_MAX + 16], dst[PROBE_HOST_MAX + 16];
  probe_rank_host(r, p->src, src, sizeof(src));
  probe_rank_host(r, p->dst, dst, sizeof(dst));
  verdict_label(r, p, fail, rx, have_rx, tx, have_tx);
  /* Rank 0's reason, then the plugin's own diagnosis, then what each side saw. */
  size_t o = 0, cap = sizeof(p->error);
  if (fail && fail[0]) o = strbuf_cat(p->error, cap, o, "%s", fail);
  if (have_tx && tx->warns[0])
    o = strbuf_cat(p->error, cap, o, "%sthe plugin on %s: %s", o ? "\n" : "", src, tx->warns);
  if (have_rx && rx->warns[0])
    o = strbuf_cat(p->error, cap, o, "%sthe plugin on %s: %s", o ? "\n" : "", dst, rx->warns);
  if (have_tx && tx->error[0])
    o = strbuf_cat(p->error, cap, o, "%son %s: %s", o ? "\n" : "", src, tx->error);
  if (have_rx && rx->error[0])
    o = strbuf_cat(p->error, cap, o, "%son %s: %s", o ? "\n" : "", dst, rx->error);
  if (!o) scopy(p->error, cap, "the data did not arrive and neither side said why");
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of the passing pairs of one transport; 0 with too few. */
static double median_of(const struct probe_run *r, const char *transport) {
  double *v = calloc((size_t)(r->npair ? r->npair : 1), sizeof(double));
  int n = 0;
  for (int i = 0; v && i < r->npair; i++)
    if (r->pairs[i].ok && !strcmp(r->pairs[i].transport, transport)) v[n++] = r->pairs[i].gbps;
  double m = 0;
  if (n >= SLOW_MIN_PAIRS) {
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }
  free(v);
  return m;
}

static const char *const kinds[] = {"RDMA", "TCP"};

int verdict_mark_slow(struct probe_run *r) {
  int n = 0;
  for (int i = 0; i < r->npair; i++) r->pairs[i].slow = 0;
  if (r->opts->bytes < SLOW_MIN_BYTES) return 0;
  for (int k = 0; k < 2; k++) {
    double med = median_of(r, kinds[k]);
    for (int i = 0; med > 0 && i < r->npair; i++) {
      struct probe_pair *p = &r->pairs[i];
      if (p->ok && !strcmp(p->transport, kinds[k]) && p->gbps < med * r->opts->slow_ratio)
        p->slow = 1, n++;
    }
  }
  return n;
}

/* Pairs that were slow on the first run and again on the retest. */
static void judge_slow(struct probe_run *r) {
  verdict_mark_slow(r);
  for (int i = 0; i < r->npair; i++) {
    struct probe_pair *p = &r->pairs[i];
    if (!p->slow) continue;
    char s[PROBE_HOST_MAX + 16], d[PROBE_HOST_MAX + 16], hosts[200];
    probe_rank_host(r, p->src, s, sizeof(s));
    probe_rank_host(r, p->dst, d, sizeof(d));
    snprintf(hosts, sizeof(hosts), "%s,%s", s, d);
    probe_add_problem(r, SEV_WARNING, hosts,
                      "check both ends' link (speed and error counters: ethtool -S, ibstat, "
                      "perfquery), the cable and switch port, and congestion settings (PFC, ECN); "
                      "then rerun the probe",
                      "%s -> %s on device %s (%s) moves %.2f GB/s%s, far below the median %.2f "
                      "GB/s of the %s pairs",
                      s, d, p->dev_name, p->transport, p->gbps,
                      p->retested ? " at best of two runs" : "", median_of(r, p->transport),
                      p->transport);
  }
}

/* The fix the plugin's diagnosis names ("exclude it with NCCL_IB_HCA=^x on
 * every node"): a setting right after "with", "set" or "export". */
static size_t diagnosis_fix(const char *error, char *fix, size_t cap) {
  static const char *const lead[] = {"with NCCL_", "set NCCL_", "export NCCL_"};
  for (size_t i = 0; i < sizeof(lead) / sizeof(lead[0]); i++) {
    const char *at = strstr(error, lead[i]);
    if (!at) continue;
    at += strlen(lead[i]) - strlen("NCCL_");
    size_t n = strcspn(at, " ;)\n");
    while (n && (at[n - 1] == '.' || at[n - 1] == ',')) n--;
    if (!memchr(at, '=', n)) continue;
    return (size_t)snprintf(fix, cap, "export %.*s%s (the plugin's own diagnosis)", (int)n, at,
                            !strncmp(at + n, " on every node", 14) ? " on every node" : "");
  }
  return 0;
}

/* The plugin's fix, then each host's recommended settings, else where to look. */
static void pair_fix(const struct probe_run *r, const struct probe_pair *p, char *fix, size_t cap) {
  const struct probe_facts *a = &r->facts[p->src], *b = &r->facts[p->dst];
  if (p->stall_bytes) {
    snprintf(fix, cap,
             "give every hop between %s and %s the MTU of their interfaces (%d, %d), or lower "
             "theirs to the path's; find the hop with ping -M do -s %d <address of %s> on %s",
             a->host, b->host, a->sock_mtu, b->sock_mtu,
             (b->sock_mtu > 28 ? b->sock_mtu : 1500) - 28, b->host, a->host);
    return;
  }
  if (!strcmp(p->code, "no_answer")) {
    snprintf(fix, cap,
             "allow TCP between %s and %s, ports 1024-65535 (nftables/iptables on both, or the "
             "cloud security group); then rerun the probe",
             a->host, b->host);
    return;
  }
  size_t o = diagnosis_fix(p->error, fix, cap);
  for (int side = 0; side < 2 && o < cap; side++) {
    const struct probe_facts *f = &r->facts[side ? p->dst : p->src];
    for (int i = 0; i < f->nrec && o < cap; i++)
      if (strcmp(f->recs[i].status, "keep"))
        o = strbuf_cat(fix, cap, o, "%son %s: export %s=%s (from its layout)", o ? "\n" : "",
                       f->host, f->recs[i].name, f->recs[i].value);
  }
  if (!o)
    snprintf(fix, cap,
             "run nccl-net-diag doctor on %s and %s, and check the path between them "
             "(ib_write_bw for RDMA, iperf3 for TCP)",
             r->facts[p->src].host, r->facts[p->dst].host);
}

/* The other direction of p, when it failed too. */
static int reverse_failed(const struct probe_run *r, const struct probe_pair *p) {
  for (int i = 0; i < r->npair; i++) {
    const struct probe_pair *q = &r->pairs[i];
    if (q->src == p->dst && q->dst == p->src && q->dev == p->dev) return q->tested && !q->ok;
  }
  return 0;
}

static void judge_pairs(struct probe_run *r) {
  int shown = 0, more = 0;
  for (int i = 0; i < r->npair; i++) {
    const struct probe_pair *p = &r->pairs[i];
    /* Untested pairs and pairs of a host that died: that host's problem says why. */
    if (!p->tested || p->ok || !strcmp(p->cause, "host gone")) continue;
    if (shown == PAIR_PROBLEMS_MAX) {
      more++;
      continue;
    }
    int both = reverse_failed(r, p);
    if (both && p->src > p->dst) continue; /* told with the other direction */
    char s[PROBE_HOST_MAX + 16], d[PROBE_HOST_MAX + 16], hosts[200], fix[1500];
    probe_rank_host(r, p->src, s, sizeof(s));
    probe_rank_host(r, p->dst, d, sizeof(d));
    snprintf(hosts, sizeof(hosts), "%s,%s", s, d);
    pair_fix(r, p, fix, sizeof(fix));
    char lead[300] = "";
    if (p->stall_bytes)
      snprintf(lead, sizeof(lead),
               "the pair's large transfers stall while small ones pass: path MTU (socket "
               "interface MTU %d on %s, %d on %s; a hop between them carries less). ",
               r->facts[p->src].sock_mtu, s, r->facts[p->dst].sock_mtu, d);
    probe_add_problem(
      r, SEV_ERROR, hosts, fix, "%s %s %s on device %d (%s on %s, %s on %s; %s) failed%s: %s%s", s,
      both ? "<->" : "->", d, p->dev, p->dev_name, s, p->dst_dev_name[0] ? p->dst_dev_name : "?", d,
      p->transport, both ? " both ways" : "", lead, p->error);
    shown++;
  }
  if (more)
    probe_add_problem(r, SEV_ERROR, "", "see the pairs list",
                      "%d more failed directions of pairs, not listed here", more);
}

static void judge_ranks(struct probe_run *r) {
  for (int k = 0; k < r->world; k++) {
    const struct probe_rank_state *s = &r->ranks[k];
    char h[PROBE_HOST_MAX + 16];
    probe_rank_host(r, k, h, sizeof(h));
    if (!s->arrived)
      probe_add_problem(r, SEV_ERROR, h,
                        "check that this rank started (its launcher's log), that MASTER_ADDR and "
                        "MASTER_PORT are the same on every rank, and that no firewall blocks the "
                        "port; then rerun the probe",
                        "rank %d never reached rank 0's rendezvous at %s in the %.0f s rank 0 "
                        "waited",
                        k, r->rendezvous, r->arrival_s);
    else if (!s->dead && !r->facts[k].host[0])
      probe_add_problem(r, SEV_ERROR, h,
                        "look at that rank's output: it may hang in the plugin's or NCCL's "
                        "initialisation; then rerun the probe",
                        "rank %d connected from %s but never sent its host's facts", k, s->addr);
    else if (s->dead)
      probe_add_problem(r, SEV_ERROR, h,
                        "look at that rank's output and the node's kernel log (a crash, the "
                        "out-of-memory killer, a reboot); then rerun the probe",
                        "%s (rank %d) stopped %.1f s into the probe: %s", h, k, s->dead_at_s,
                        s->why);
  }
  for (int i = 0; i < r->nrefusal && i < 5; i++) {
    const struct probe_refusal *f = &r->refusals[i];
    int ours = strstr(f->why, "claims rank") || strstr(f->why, "expects");
    probe_add_problem(r, ours ? SEV_WARNING : SEV_NOTE, f->peer,
                      ours ? "give every rank the same world size and its own rank"
                           : "nothing, if that program is meant to be there",
                      "rank 0 refused a connection from %s: %s", f->peer, f->why);
  }
}

void probe_judge(struct probe_run *r) {
  judge_ranks(r);
  verdict_hosts(r);
  judge_pairs(r);
  verdict_repaired_pairs(r);
  judge_slow(r);
  if (r->nhost == 1)
    probe_add_problem(r, SEV_NOTE, "", "run it with ranks on two or more hosts",
                      "only one host took part: no pair to test");
}
