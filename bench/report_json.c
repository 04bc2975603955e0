/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON record of a run: parameters, environment, target verdicts,
 * what each comm count's connections cost, and every row with every
 * variant's repetitions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_report.h"
#include "tools/json_out.h"

extern char **environ;

static const char *const engines[ENGINE_COUNT] = {"plugin", "raw", "compare"};

static void jstat(struct json *j, const char *key, const double *reps, int n, double m) {
  json_obj(j, key);
  json_sig(j, "median", m);
  json_arr_flat(j, "reps");
  for (int i = 0; i < n; i++) json_sig(j, NULL, reps[i]);
  json_close_arr(j);
  json_close_obj(j);
}

static void jvariant(struct json *j, const char *key, const struct variant *v) {
  json_obj(j, key);
  json_str(j, "name", v->name);
  json_str(j, "engine", engines[v->engine]);
  json_int(j, "sockets", v->shape.nsocks);
  json_bool(j, "spin", v->shape.is_spinning);
  json_bool(j, "one_connection", v->shape.is_shared);
  json_bool(j, "epoll", v->shape.is_event);
  json_int(j, "threads", v->threads);
  if (v->engine == ENGINE_RAW) json_sig(j, "pilot_median", v->pilot);
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
  for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
    jstat(j, st[i].key, st[i].reps, v->nrep, st[i].med);
  jstat(j, "other_load", v->foreign, v->nrep, median(v->foreign, v->nrep));
  json_close_obj(j);
}

static void jrow(struct json *j, const struct row *r) {
  json_obj(j, NULL);
  json_str(j, "mode", mode_name[r->mode]);
  json_int(j, "comms", r->ncomms);
  json_int(j, "size", (long long)r->size);
  json_int(j, "window", r->window);
  json_int(j, "warmup", (long long)r->warm);
  json_int(j, "iters", (long long)r->iters);
  json_bool(j, "verified", r->is_verified);
  jvariant(j, "plugin", &r->variants[0]);
  if (r->cmp > 0) jvariant(j, "compare", &r->variants[r->cmp]);
  else json_null(j, "compare");
  if (r->best > 0) jvariant(j, "baseline", &r->variants[r->best]);
  else json_null(j, "baseline");
  const struct {
    const char *key;
    double v;
    bool has_value;
  } ratios[] = {{"gbps", r->r_gbps, r->best > 0},      {"p50", r->r_p50, r->best > 0},
                {"cpu", r->r_cpu, r->best > 0},        {"compare_gbps", r->c_gbps, r->cmp > 0},
                {"compare_p50", r->c_p50, r->cmp > 0}, {"compare_cpu", r->c_cpu, r->cmp > 0}};
  json_obj(j, "ratio");
  for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]); i++)
    json_sig(j, ratios[i].key, ratios[i].has_value ? ratios[i].v : NAN);
  json_close_obj(j);
  json_arr(j, "baseline_shapes");
  for (int i = r->first_raw; i < r->nvariant; i++) jvariant(j, NULL, &r->variants[i]);
  json_close_arr(j);
  json_close_obj(j);
}

static void jparams(struct json *j, const struct opts *o) {
  json_obj(j, "params");
  json_int(j, "reps", o->reps);
  json_int(j, "window", o->window);
  json_int(j, "driver_idle_us", o->idle_us);
  json_int(j, "target_bytes", (long long)o->target_bytes);
  json_int(j, "max_msgs", (long long)o->max_msgs);
  json_int(j, "lat_iters", (long long)o->lat_iters);
  json_int(j, "max_mem", (long long)o->max_mem);
  json_int(j, "raw_min_stripe", (long long)o->raw_min_stripe);
  json_arr_flat(j, "sizes");
  for (int i = 0; i < o->nsizes; i++) json_int(j, NULL, (long long)o->sizes[i]);
  json_close_arr(j);
  json_arr_flat(j, "lat_sizes");
  for (int i = 0; i < o->nlat_sizes; i++) json_int(j, NULL, (long long)o->lat_sizes[i]);
  json_close_arr(j);
  json_arr_flat(j, "comms");
  for (int i = 0; i < o->ncomms_list; i++) json_int(j, NULL, o->comms[i]);
  json_close_arr(j);
  json_arr_flat(j, "raw_shapes");
  for (int i = 0; i < o->nraw_shapes; i++) {
    char shape[16];
    snprintf(shape, sizeof(shape), "%d%s", o->raw_shapes[i].nsocks,
             o->raw_shapes[i].is_spinning ? "s"
             : o->raw_shapes[i].is_event  ? "e"
                                          : "");
    json_str(j, NULL, shape);
  }
  json_close_arr(j);
  json_close_obj(j);
  json_obj(j, "environment");
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (strncmp(*e, "NCCL_", 5) || !eq) continue;
    char name[128];
    snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
    json_str(j, name, eq + 1);
  }
  json_close_obj(j);
}

static void jtargets(struct json *j, const struct report *rep) {
  struct verdict v[NTARGETS];
  targets_judge(rep, v);
  json_arr(j, "targets"); /* empty without --targets: development goals, not a verdict */
  for (int i = 0; i < NTARGETS && rep->o->has_targets; i++) {
    json_obj(j, NULL);
    json_str(j, "target", v[i].name);
    json_bool(j, "measured", v[i].is_seen);
    json_bool(j, "met", v[i].is_seen && v[i].has_passed);
    json_sig(j, "worst_ratio", v[i].is_seen ? v[i].worst : NAN);
    json_str(j, "worst_row", v[i].is_seen ? v[i].where : "");
    json_close_obj(j);
  }
  json_close_arr(j);
}

static void jusage(struct json *j, const char *key, const struct proc_usage *u) {
  json_obj(j, key);
  json_int(j, "threads", u->threads);
  json_int(j, "fds", u->fds);
  json_int(j, "rss_kb", (long long)u->rss_kb);
  json_close_obj(j);
}

/* Per comm count: what each engine's connections added to each rank. */
static void jblocks(struct json *j, const struct report *rep) {
  json_arr(j, "connections");
  for (int b = 0; b < rep->nblocks; b++) {
    const struct block *k = &rep->blocks[b];
    json_obj(j, NULL);
    json_int(j, "comms", k->ncomms);
    json_bool(j, "one_way", k->is_one_way);
    json_int(j, "baseline_sockets_per_comm", k->raw_socks);
    for (int e = 0; e < ENGINE_COUNT; e++) {
      if ((e == ENGINE_COMPARE && !rep->o->compare) || (e == ENGINE_RAW && !rep->o->has_baseline))
        continue;
      json_obj(j, engines[e]);
      jusage(j, "rank0", &k->usage[0][e]);
      jusage(j, "rank1", &k->usage[1][e]);
      json_close_obj(j);
    }
    json_close_obj(j);
  }
  json_close_arr(j);
}

void report_json(const struct report *rep, FILE *f) {
  const struct opts *o = rep->o;
  struct json j;
  json_begin(&j, f);
  json_str(&j, "schema", "nccl-net-bench.run/1");
  json_str(&j, "bench", "nccl-net-bench");
  json_str(&j, "version", DIAG_VERSION);
  json_str(&j, "started", rep->started);
  json_str(&j, "command", o->command);
  json_obj(&j, "host");
  json_int(&j, "cpus", rep->ncpu);
  json_num(&j, "load1", rep->load1, 2);
  json_close_obj(&j);
  json_str(&j, "placement", o->placement);
  json_str(&j, "where", rep->where);
  json_str(&j, "transport", o->transport);
  json_str(&j, "plugin", rep->plugin_desc);
  json_str(&j, "compare", o->compare ? rep->compare_desc : NULL);
  json_int(&j, "rlimit_nofile", rep->nofile);
  jparams(&j, o);
  jtargets(&j, rep);
  jblocks(&j, rep);
  json_shape(&j, rep);
  json_bool(&j, "ok", !rep->has_failed);
  json_arr(&j, "rows");
  for (int i = 0; i < rep->nrows; i++) jrow(&j, &rep->rows[i]);
  json_close_arr(&j);
  json_end(&j);
}
