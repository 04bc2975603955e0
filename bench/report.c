/* SPDX-License-Identifier: Apache-2.0 */
/* The nccl-tests-style table: a header that says what ran where, then one
 * block per (comm count, mode) with the plugin, the compared plugin when
 * there is one, and the best baseline shape of each size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_report.h"
#include "common/size.h"

extern char **environ;

const char *const mode_name[MODE_COUNT] = {"uni", "bidir", "lat"};

static void medians(struct variant *v) {
  v->m_gbps = median(v->gbps, v->nrep);
  v->m_p50 = median(v->p50, v->nrep);
  v->m_p99 = median(v->p99, v->nrep);
  v->m_cpu = median(v->cpu, v->nrep);
  v->m_cpu_drv = median(v->cpu_drv, v->nrep);
  v->m_host_cpu = median(v->host_cpu, v->nrep);
}

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

void row_finish(struct row *r) {
  for (int i = 0; i < r->nvariant; i++) medians(&r->variants[i]);
  r->best = -1;
  for (int i = r->first_raw; i < r->nvariant; i++) {
    const struct variant *v = &r->variants[i], *b = r->best > 0 ? &r->variants[r->best] : NULL;
    if (!v->nrep) continue; /* a shape the pilot pass did not choose */
    int better = !b || (r->mode == MODE_LAT ? v->m_p50 < b->m_p50 : v->m_gbps > b->m_gbps);
    if (better) r->best = i;
  }
  const struct variant *p = &r->variants[0];
  r->r_gbps = r->r_p50 = r->r_cpu = r->c_gbps = r->c_p50 = r->c_cpu = 0;
  if (r->best > 0) {
    const struct variant *b = &r->variants[r->best];
    r->r_gbps = ratio(p->m_gbps, b->m_gbps);
    r->r_p50 = ratio(p->m_p50, b->m_p50);
    r->r_cpu = ratio(p->m_cpu, b->m_cpu);
  }
  if (r->cmp > 0 && r->variants[r->cmp].nrep) {
    const struct variant *c = &r->variants[r->cmp];
    r->c_gbps = ratio(p->m_gbps, c->m_gbps);
    r->c_p50 = ratio(p->m_p50, c->m_p50);
    r->c_cpu = ratio(p->m_cpu, c->m_cpu);
  }
}

static void print_env(FILE *f, const char *prefix) {
  int any = 0;
  for (char **e = environ; *e; e++)
    if (!strncmp(*e, "NCCL_", 5)) {
      fprintf(f, "%s%s", any ? " " : prefix, *e);
      any = 1;
    }
  fprintf(f, "%s\n", any ? "" : "no NCCL_* variables set: the plugin's defaults");
}

/* What the bench itself sets in the ranks, and why: never the user's doing. */
static void print_bench_env(FILE *f, const struct report *rep) {
  const struct opts *o = rep->o;
  bool is_ib = !strcmp(o->transport, "ib");
  if (!is_ib || !getenv("NCCL_SOCKET_IFNAME"))
    fprintf(f,
            "# set by the bench: NCCL_SOCKET_IFNAME=%s in each rank (%s), so the plugin "
            "takes the path the baseline measures\n",
            strcmp(o->placement, "netns") ? "=lo" : "=<the rank's veth>",
            strcmp(o->placement, "netns") ? "both ranks on this host" : "two namespace hosts");
  for (int i = 0; i < o->nrank_envs; i++)
    fprintf(f, "# set by --rank-env in rank %d only: %s\n", o->rank_env_ranks[i], o->rank_envs[i]);
}

void report_header(FILE *f, const struct report *rep) {
  const struct opts *o = rep->o;
  fprintf(f, "# nccl-net-bench %s, %s, %d CPUs, load average %.2f\n", DIAG_VERSION, rep->started,
          rep->ncpu, rep->load1);
  fprintf(f, "# command: %s\n", o->command);
  fprintf(f, "# placement: %s; transport %s\n", rep->where, o->transport);
  fprintf(f, "# plugin: %s\n", rep->plugin_desc);
  if (o->compare) fprintf(f, "# compare: %s\n", rep->compare_desc);
  if (o->idle_us)
    fprintf(f, "# EXPERIMENT: the driving thread sleeps %d us when idle (NCCL yields)\n",
            o->idle_us);
  fprintf(f, "# environment: ");
  print_env(f, "");
  print_bench_env(f, rep);
  fprintf(f, "# baseline: %s\n",
          o->has_baseline
            ? "plain TCP sockets, TCP_NODELAY, one thread per socket (sleeping, or "
              "spinning for 'spin' shapes) or every comm on one epoll thread ('epoll'), "
              "same sizes/window/comms; the best shape per size, measured interleaved"
          : o->compare ? "none: the compared plugin is the reference"
                       : "none (functional run)");
  if (o->compare)
    fprintf(f, "# compare: driven exactly as the plugin is, measured interleaved with it\n");
  fprintf(f, "# GB/s: payload received per second in steady state (bidir: both directions "
             "summed; lat: size / half the p50 round trip)\n");
  fprintf(f, "# p50/p99 us: bandwidth rows: time each receive was outstanding (slot free -> "
             "complete); lat rows: round trip\n");
  fprintf(f,
          "# cpu s/GB: user+sys CPU of both processes, all threads (the polling thread "
          "too), per GB moved; medians of %d repetitions\n",
          o->reps);
  if (rep->nofile) fprintf(f, "# ranks run with RLIMIT_NOFILE %ld\n", rep->nofile);
}

static void usage_line(FILE *f, const char *who, const struct block *b, int eng) {
  const struct proc_usage *u0 = &b->usage[0][eng], *u1 = &b->usage[1][eng];
  double per = b->is_one_way ? b->ncomms : 2.0 * b->ncomms; /* the comms a rank holds */
  fprintf(f,
          "#   %-8s rank 0: %+d threads, %+d fds (%.1f per comm), %+.1f MB RSS (%.1f KB per comm); "
          "rank 1: %+d threads, %+d fds, %+.1f MB\n",
          who, u0->threads, u0->fds, u0->fds / per, u0->rss_kb / 1024.0, u0->rss_kb / per,
          u1->threads, u1->fds, u1->rss_kb / 1024.0);
}

void report_usage(FILE *f, const struct report *rep, const struct block *b) {
  fprintf(f,
          "#\n# %d comm%s %s: what connecting them added to each rank process "
          "(threads, descriptors, resident memory held)\n",
          b->ncomms, b->ncomms > 1 ? "s" : "",
          b->is_one_way ? "from rank 0 to rank 1 (the block needs no others)"
                        : "each way per rank");
  usage_line(f, "plugin", b, ENGINE_PLUGIN);
  if (rep->o->compare) usage_line(f, "compare", b, ENGINE_COMPARE);
  if (rep->o->has_baseline) usage_line(f, "baseline", b, ENGINE_RAW);
}

void report_block(FILE *f, const struct report *rep, const struct row *r) {
  static const char *const what[MODE_COUNT] = {"unidirectional bandwidth",
                                               "bidirectional bandwidth", "ping-pong latency"};
  int cmp = rep->o->compare != NULL;
  fprintf(f, "#\n# %s: %s, %d comm%s\n", mode_name[r->mode], what[r->mode], r->ncomms,
          r->ncomms > 1 ? "s" : "");
  fprintf(f, "#                            %-36s|%s %-49s| ratio plugin/baseline%s\n", "plugin",
          cmp ? " compare                    |" : "", "raw TCP baseline",
          cmp ? " | plugin/compare" : "");
  fprintf(f, "# %9s %3s %7s |%8s %8s %8s %9s |", "size", "win", "iters", "GB/s", "p50 us", "p99 us",
          "cpu s/GB");
  if (cmp) fprintf(f, "%8s %8s %9s |", "GB/s", "p50 us", "cpu s/GB");
  fprintf(f, "%8s %8s %8s %9s %-13s|%7s %6s %5s", "GB/s", "p50 us", "p99 us", "cpu s/GB", " shape",
          r->mode == MODE_LAT ? "p50" : "GB/s", "cpu", "data");
  if (cmp) fprintf(f, " |%7s %6s", r->mode == MODE_LAT ? "p50" : "GB/s", "cpu");
  fprintf(f, "\n");
}

void report_row(FILE *f, const struct row *r) {
  char sz[24];
  size_format(sz, sizeof(sz), r->size);
  const struct variant *p = &r->variants[0];
  fprintf(f, "  %9s %3d %7llu |%8.3f %8.1f %8.1f %9.3f |", sz, r->window,
          (unsigned long long)r->iters, p->m_gbps, p->m_p50, p->m_p99, p->m_cpu);
  if (r->cmp > 0) {
    const struct variant *c = &r->variants[r->cmp];
    fprintf(f, "%8.3f %8.1f %9.3f |", c->m_gbps, c->m_p50, c->m_cpu);
  }
  if (r->best > 0) {
    const struct variant *b = &r->variants[r->best];
    fprintf(f, "%8.3f %8.1f %8.1f %9.3f  %-12s|%7.2f %6.2f %5s", b->m_gbps, b->m_p50, b->m_p99,
            b->m_cpu, b->name, r->mode == MODE_LAT ? r->r_p50 : r->r_gbps, r->r_cpu,
            r->is_verified ? "ok" : "BAD");
  } else {
    fprintf(f, "%8s %8s %8s %9s  %-12s|%7s %6s %5s", "-", "-", "-", "-", "", "-", "-",
            r->is_verified ? "ok" : "BAD");
  }
  if (r->cmp > 0) fprintf(f, " |%7.2f %6.2f", r->mode == MODE_LAT ? r->c_p50 : r->c_gbps, r->c_cpu);
  fprintf(f, "\n");
}
