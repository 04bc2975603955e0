/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON record of a run: parameters, environment, target verdicts,
 * what each comm count's connections cost, and every row with every
 * variant's repetitions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/report.h"

extern char **environ;

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
  static const char *const engines[ENGINE_COUNT] = {"plugin", "raw", "compare"};
  fprintf(f,
          ", \"engine\": \"%s\", \"sockets\": %d, \"spin\": %s, \"one_connection\": %s, "
          "\"epoll\": %s, \"threads\": %d, ",
          engines[v->engine], v->shape.nsocks, v->shape.is_spinning ? "true" : "false",
          v->shape.is_shared ? "true" : "false", v->shape.is_event ? "true" : "false", v->threads);
  if (v->engine == ENGINE_RAW) {
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
  fprintf(f, ",\n     \"compare\": ");
  if (r->cmp > 0) jvariant(f, &r->variants[r->cmp]);
  else fprintf(f, "null");
  fprintf(f, ",\n     \"baseline\": ");
  if (r->best > 0) jvariant(f, &r->variants[r->best]);
  else fprintf(f, "null");
  const struct {
    const char *key;
    double v;
    bool has_value;
  } ratios[] = {{"gbps", r->r_gbps, r->best > 0},      {"p50", r->r_p50, r->best > 0},
                {"cpu", r->r_cpu, r->best > 0},        {"compare_gbps", r->c_gbps, r->cmp > 0},
                {"compare_p50", r->c_p50, r->cmp > 0}, {"compare_cpu", r->c_cpu, r->cmp > 0}};
  fprintf(f, ",\n     \"ratio\": {");
  for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]); i++) {
    fprintf(f, "%s\"%s\": ", i ? ", " : "", ratios[i].key);
    jnum(f, ratios[i].has_value ? ratios[i].v : NAN);
  }
  fprintf(f, "},\n     \"baseline_shapes\": [");
  for (int i = r->first_raw; i < r->nvariant; i++) {
    if (i > r->first_raw) fprintf(f, ",\n       ");
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
            o->raw_shapes[i].is_spinning ? "s"
            : o->raw_shapes[i].is_event  ? "e"
                                         : "");
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
  struct verdict v[NTARGETS];
  targets_judge(rep, v);
  fprintf(f, "  \"targets\": [");
  for (int i = 0; i < NTARGETS; i++) {
    fprintf(f, "%s{\"target\": ", i ? ",\n    " : "");
    jstr(f, v[i].name);
    fprintf(f,
            ", \"measured\": %s, \"met\": %s, \"worst_ratio\": ", v[i].is_seen ? "true" : "false",
            v[i].is_seen && v[i].has_passed ? "true" : "false");
    jnum(f, v[i].is_seen ? v[i].worst : NAN);
    fprintf(f, ", \"worst_row\": ");
    jstr(f, v[i].is_seen ? v[i].where : "");
    fprintf(f, "}");
  }
  fprintf(f, "],\n");
}

static void jusage(FILE *f, const struct proc_usage *u) {
  fprintf(f, "{\"threads\": %d, \"fds\": %d, \"rss_kb\": %lld}", u->threads, u->fds,
          (long long)u->rss_kb);
}

/* Per comm count: what each engine's connections added to each rank. */
static void jblocks(FILE *f, const struct report *rep) {
  static const char *const engines[ENGINE_COUNT] = {"plugin", "raw", "compare"};
  fprintf(f, "  \"connections\": [");
  for (int b = 0; b < rep->nblocks; b++) {
    const struct block *k = &rep->blocks[b];
    fprintf(f, "%s{\"comms\": %d, \"one_way\": %s, \"baseline_sockets_per_comm\": %d",
            b ? ",\n    " : "", k->ncomms, k->is_one_way ? "true" : "false", k->raw_socks);
    for (int e = 0; e < ENGINE_COUNT; e++) {
      if ((e == ENGINE_COMPARE && !rep->o->compare) || (e == ENGINE_RAW && !rep->o->has_baseline))
        continue;
      fprintf(f, ", \"%s\": {\"rank0\": ", engines[e]);
      jusage(f, &k->usage[0][e]);
      fprintf(f, ", \"rank1\": ");
      jusage(f, &k->usage[1][e]);
      fprintf(f, "}");
    }
    fprintf(f, "}");
  }
  fprintf(f, "],\n");
}

void report_json(const struct report *rep, FILE *f) {
  const struct opts *o = rep->o;
  fprintf(f,
          "{\n  \"schema\": \"nccl-net-bench.run/1\", \"bench\": \"nccl-net-bench\", \"version\": "
          "\"%s\", \"started\": ",
          DIAG_VERSION);
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
  fprintf(f, ",\n  \"compare\": ");
  if (o->compare) jstr(f, rep->compare_desc);
  else fprintf(f, "null");
  fprintf(f, ", \"rlimit_nofile\": %ld,\n", rep->nofile);
  jparams(f, o);
  jtargets(f, rep);
  jblocks(f, rep);
  fprintf(f, "  \"ok\": %s,\n  \"rows\": [\n", rep->has_failed ? "false" : "true");
  for (int i = 0; i < rep->nrows; i++) {
    jrow(f, &rep->rows[i]);
    fprintf(f, "%s\n", i + 1 < rep->nrows ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
}
