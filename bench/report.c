/* SPDX-License-Identifier: Apache-2.0 */
/* The nccl-tests-style table, the target verdicts and the JSON record. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/report.h"

extern char **environ;

const char *const mode_name[MODE_COUNT] = {"uni", "bidir", "lat"};

static double med(const double *v, int n) { return median(v, n); }

void row_finish(struct row *r) {
  for (int i = 0; i < r->nvariant; i++) {
    struct variant *v = &r->variants[i];
    v->m_gbps = med(v->gbps, v->nrep);
    v->m_p50 = med(v->p50, v->nrep);
    v->m_p99 = med(v->p99, v->nrep);
    v->m_cpu = med(v->cpu, v->nrep);
    v->m_cpu_drv = med(v->cpu_drv, v->nrep);
    v->m_host_cpu = med(v->host_cpu, v->nrep);
  }
  r->best = -1;
  for (int i = 1; i < r->nvariant; i++) {
    const struct variant *v = &r->variants[i], *b = r->best > 0 ? &r->variants[r->best] : NULL;
    if (!v->nrep) continue; /* a shape the pilot pass did not choose */
    int better = !b || (r->mode == MODE_LAT ? v->m_p50 < b->m_p50 : v->m_gbps > b->m_gbps);
    if (better) r->best = i;
  }
  r->r_gbps = r->r_p50 = r->r_cpu = 0;
  if (r->best < 0) return;
  const struct variant *p = &r->variants[0], *b = &r->variants[r->best];
  if (b->m_gbps > 0) r->r_gbps = p->m_gbps / b->m_gbps;
  if (b->m_p50 > 0) r->r_p50 = p->m_p50 / b->m_p50;
  if (b->m_cpu > 0) r->r_cpu = p->m_cpu / b->m_cpu;
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

void report_header(FILE *f, const struct report *rep) {
  const struct opts *o = rep->o;
  fprintf(f, "# nccl-net-bench %s, %s, %d CPUs, load average %.2f\n", DIAG_VERSION, rep->started,
          rep->ncpu, rep->load1);
  fprintf(f, "# command: %s\n", o->command);
  fprintf(f, "# placement: %s; transport %s\n", rep->where, o->transport);
  fprintf(f, "# plugin: %s\n", rep->plugin_desc);
  if (o->idle_us)
    fprintf(f, "# EXPERIMENT: the driving thread sleeps %d us when idle (NCCL yields)\n",
            o->idle_us);
  fprintf(f, "# environment: ");
  print_env(f, "");
  fprintf(f, "# baseline: %s\n",
          o->has_baseline ? "plain TCP sockets, TCP_NODELAY, one thread per socket (sleeping, or "
                            "spinning for 'spin' shapes), same sizes/window/comms; the best shape "
                            "per size, measured interleaved"
                          : "none (functional run)");
  fprintf(f, "# GB/s: payload received per second in steady state (bidir: both directions "
             "summed; lat: size / half the p50 round trip)\n");
  fprintf(f, "# p50/p99 us: bandwidth rows: time each receive was outstanding (slot free -> "
             "complete); lat rows: round trip\n");
  fprintf(f,
          "# cpu s/GB: user+sys CPU of both processes, all threads (the polling thread "
          "too), per GB moved; medians of %d repetitions\n",
          o->reps);
}

void report_block(FILE *f, const struct report *rep, const struct row *r) {
  (void)rep;
  static const char *const what[MODE_COUNT] = {"unidirectional bandwidth",
                                               "bidirectional bandwidth", "ping-pong latency"};
  fprintf(f, "#\n# %s: %s, %d comm%s\n", mode_name[r->mode], what[r->mode], r->ncomms,
          r->ncomms > 1 ? "s" : "");
  fprintf(f, "#                            %-36s| %-49s| ratio plugin/baseline\n", "plugin",
          "raw TCP baseline");
  fprintf(f, "# %9s %3s %7s |%8s %8s %8s %9s |%8s %8s %8s %9s %-13s|%7s %6s %5s\n", "size", "win",
          "iters", "GB/s", "p50 us", "p99 us", "cpu s/GB", "GB/s", "p50 us", "p99 us", "cpu s/GB",
          " shape", r->mode == MODE_LAT ? "p50" : "GB/s", "cpu", "data");
}

void report_row(FILE *f, const struct row *r) {
  char sz[24];
  fmt_size(sz, sizeof(sz), r->size);
  const struct variant *p = &r->variants[0];
  fprintf(f, "  %9s %3d %7llu |%8.3f %8.1f %8.1f %9.3f |", sz, r->window,
          (unsigned long long)r->iters, p->m_gbps, p->m_p50, p->m_p99, p->m_cpu);
  if (r->best > 0) {
    const struct variant *b = &r->variants[r->best];
    fprintf(f, "%8.3f %8.1f %8.1f %9.3f  %-12s|%7.2f %6.2f %5s\n", b->m_gbps, b->m_p50, b->m_p99,
            b->m_cpu, b->name, r->mode == MODE_LAT ? r->r_p50 : r->r_gbps, r->r_cpu,
            r->is_verified ? "ok" : "BAD");
  } else {
    fprintf(f, "%8s %8s %8s %9s  %-12s|%7s %6s %5s\n", "-", "-", "-", "-", "", "-", "-",
            r->is_verified ? "ok" : "BAD");
  }
}

struct verdict {
  const char *name;
  double worst;
  int seen, pass;
};

static void judge(const struct report *rep, struct verdict v[3]) {
  v[0] = (struct verdict){"unidirectional GB/s >= 0.9x baseline at >= 1 MiB", 1e9, 0, 1};
  v[1] = (struct verdict){"8-byte ping-pong p50 <= 1.2x baseline", 0, 0, 1};
  v[2] = (struct verdict){"CPU s/GB <= 1.2x baseline (unidirectional, >= 1 MiB)", 0, 0, 1};
  for (int i = 0; i < rep->nrows; i++) {
    const struct row *r = &rep->rows[i];
    if (r->best < 0) continue;
    if (r->mode == MODE_UNI && r->size >= (1 << 20)) {
      v[0].seen = v[2].seen = 1;
      v[0].worst = fmin(v[0].worst, r->r_gbps);
      v[2].worst = fmax(v[2].worst, r->r_cpu);
    }
    if (r->mode == MODE_LAT && r->size == 8) {
      v[1].seen = 1;
      v[1].worst = fmax(v[1].worst, r->r_p50);
    }
  }
  v[0].pass = v[0].worst >= 0.9;
  v[1].pass = v[1].worst <= 1.2;
  v[2].pass = v[2].worst <= 1.2;
}

/* How busy others kept the host while we measured: the noise floor. */
static void report_noise(FILE *f, const struct report *rep) {
  double all[BENCH_MAX_ROWS];
  double worst = 0;
  int n = 0;
  for (int i = 0; i < rep->nrows; i++) {
    const struct row *r = &rep->rows[i];
    double row_max = 0;
    int seen = 0;
    for (int v = 0; v < r->nvariant; v++)
      for (int k = 0; k < r->variants[v].nrep; k++)
        if (isfinite(r->variants[v].foreign[k]))
          row_max = fmax(row_max, r->variants[v].foreign[k]), seen = 1;
    if (!seen) continue;
    all[n++] = row_max;
    worst = fmax(worst, row_max);
  }
  if (n)
    fprintf(f,
            "# other load on the host while measuring: median row %.0f %%, worst %.0f %% of "
            "its CPUs%s\n",
            100 * median(all, n < 64 ? n : 64), 100 * worst,
            worst > 0.15 ? " (noisy: repeat when the host is quiet, or use --wait-quiet)" : "");
}

void report_targets(FILE *f, const struct report *rep) {
  struct verdict v[3];
  judge(rep, v);
  fprintf(f, "#\n");
  report_noise(f, rep);
  for (int i = 0; i < 3; i++) {
    if (!v[i].seen) fprintf(f, "# target: %-55s not measured in this run\n", v[i].name);
    else
      fprintf(f, "# target: %-55s %s (worst ratio %.2f)\n", v[i].name, v[i].pass ? "MET" : "MISSED",
              v[i].worst);
  }
}

/* --- JSON ---------------------------------------------------------------- */

static void jstr(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
    else fputc(ch, f);
  }
  fputc('"', f);
}

static void jnum(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.6g", v);
  else fprintf(f, "null");
}

static void jstat(FILE *f, const char *key, const double *reps, int n, double m) {
  fprintf(f, "\"%s\": {\"median\": ", key);
  jnum(f, m);
  fprintf(f, ", \"reps\": [");
  for (int i = 0; i < n; i++) {
    if (i) fprintf(f, ", ");
    jnum(f, reps[i]);
  }
  fprintf(f, "]}");
}

static void jvariant(FILE *f, const struct variant *v) {
  fprintf(f, "{\"name\": ");
  jstr(f, v->name);
  fprintf(f, ", \"engine\": \"%s\", \"sockets\": %d, \"spin\": %s, \"one_connection\": %s, ",
          v->engine == ENGINE_PLUGIN ? "plugin" : "raw", v->shape.nsocks,
          v->shape.is_spinning ? "true" : "false", v->shape.is_shared ? "true" : "false");
  if (v->engine != ENGINE_PLUGIN) {
    fprintf(f, "\"pilot_median\": ");
    jnum(f, v->pilot);
    fprintf(f, ", ");
  }
  const struct {
    const char *key;
    const double *reps;
    double med;
  } st[] = {
    {"gbps", v->gbps, v->m_gbps},
    {"p50_us", v->p50, v->m_p50},
    {"p99_us", v->p99, v->m_p99},
    {"cpu_s_per_gb", v->cpu, v->m_cpu},
    {"driver_thread_cpu_s_per_gb", v->cpu_drv, v->m_cpu_drv},
    {"host_busy_cpu_s_per_gb", v->host_cpu, v->m_host_cpu},
  };
  for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
    jstat(f, st[i].key, st[i].reps, v->nrep, st[i].med);
    fprintf(f, ", ");
  }
  jstat(f, "other_load", v->foreign, v->nrep, median(v->foreign, v->nrep));
  fprintf(f, "}");
}

static void jrow(FILE *f, const struct row *r) {
  fprintf(f,
          "    {\"mode\": \"%s\", \"comms\": %d, \"size\": %llu, \"window\": %d, "
          "\"warmup\": %llu, \"iters\": %llu, \"verified\": %s,\n     \"plugin\": ",
          mode_name[r->mode], r->ncomms, (unsigned long long)r->size, r->window,
          (unsigned long long)r->warm, (unsigned long long)r->iters,
          r->is_verified ? "true" : "false");
  jvariant(f, &r->variants[0]);
  fprintf(f, ",\n     \"baseline\": ");
  if (r->best > 0) jvariant(f, &r->variants[r->best]);
  else fprintf(f, "null");
  fprintf(f, ",\n     \"ratio\": {\"gbps\": ");
  jnum(f, r->best > 0 ? r->r_gbps : NAN);
  fprintf(f, ", \"p50\": ");
  jnum(f, r->best > 0 ? r->r_p50 : NAN);
  fprintf(f, ", \"cpu\": ");
  jnum(f, r->best > 0 ? r->r_cpu : NAN);
  fprintf(f, "},\n     \"baseline_shapes\": [");
  for (int i = 1; i < r->nvariant; i++) {
    if (i > 1) fprintf(f, ",\n       ");
    jvariant(f, &r->variants[i]);
  }
  fprintf(f, "]}");
}

static void jparams(FILE *f, const struct opts *o) {
  fprintf(f,
          "  \"params\": {\"reps\": %d, \"window\": %d, \"driver_idle_us\": %d, "
          "\"target_bytes\": %llu, "
          "\"max_msgs\": %llu, \"lat_iters\": %llu, \"max_mem\": %llu, "
          "\"raw_min_stripe\": %llu, \"sizes\": [",
          o->reps, o->window, o->idle_us, (unsigned long long)o->target_bytes,
          (unsigned long long)o->max_msgs, (unsigned long long)o->lat_iters,
          (unsigned long long)o->max_mem, (unsigned long long)o->raw_min_stripe);
  for (int i = 0; i < o->nsizes; i++)
    fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)o->sizes[i]);
  fprintf(f, "], \"lat_sizes\": [");
  for (int i = 0; i < o->nlat_sizes; i++)
    fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)o->lat_sizes[i]);
  fprintf(f, "], \"comms\": [");
  for (int i = 0; i < o->ncomms_list; i++) fprintf(f, "%s%d", i ? ", " : "", o->comms[i]);
  fprintf(f, "], \"raw_shapes\": [");
  for (int i = 0; i < o->nraw_shapes; i++)
    fprintf(f, "%s\"%d%s\"", i ? ", " : "", o->raw_shapes[i].nsocks,
            o->raw_shapes[i].is_spinning ? "s" : "");
  fprintf(f, "]},\n  \"environment\": {");
  int n = 0;
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (strncmp(*e, "NCCL_", 5) || !eq) continue;
    char name[128];
    snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
    fprintf(f, "%s", n++ ? ", " : "");
    jstr(f, name);
    fprintf(f, ": ");
    jstr(f, eq + 1);
  }
  fprintf(f, "},\n");
}

static void jtargets(FILE *f, const struct report *rep) {
  struct verdict v[3];
  judge(rep, v);
  fprintf(f, "  \"targets\": [");
  for (int i = 0; i < 3; i++) {
    fprintf(f, "%s{\"target\": ", i ? ", " : "");
    jstr(f, v[i].name);
    fprintf(f, ", \"measured\": %s, \"met\": %s, \"worst_ratio\": ", v[i].seen ? "true" : "false",
            v[i].seen && v[i].pass ? "true" : "false");
    jnum(f, v[i].seen ? v[i].worst : NAN);
    fprintf(f, "}");
  }
  fprintf(f, "],\n");
}

int report_json(const struct report *rep, const char *path) {
  FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
  if (!f) return -1;
  const struct opts *o = rep->o;
  fprintf(f,
          "{\n  \"bench\": \"nccl-net-bench\", \"version\": \"%s\", \"started\": ", DIAG_VERSION);
  jstr(f, rep->started);
  fprintf(f, ",\n  \"command\": ");
  jstr(f, o->command);
  fprintf(f, ",\n  \"host\": {\"cpus\": %d, \"load1\": %.2f},\n  \"placement\": ", rep->ncpu,
          rep->load1);
  jstr(f, o->placement);
  fprintf(f, ", \"where\": ");
  jstr(f, rep->where);
  fprintf(f, ", \"transport\": ");
  jstr(f, o->transport);
  fprintf(f, ",\n  \"plugin\": ");
  jstr(f, rep->plugin_desc);
  fprintf(f, ",\n");
  jparams(f, o);
  jtargets(f, rep);
  fprintf(f, "  \"ok\": %s,\n  \"rows\": [\n", rep->has_failed ? "false" : "true");
  for (int i = 0; i < rep->nrows; i++) {
    jrow(f, &rep->rows[i]);
    fprintf(f, "%s\n", i + 1 < rep->nrows ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  int bad = ferror(f);
  if (f != stdout) bad |= fclose(f);
  return bad ? -1 : 0;
}
