/* SPDX-License-Identifier: Apache-2.0 */
/* --json[=FILE]: hosts (one entry per rank), pairs (src and dst as ranks),
 * problems (severity, hosts, text, fix). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/ncclver.h"
#include "common/version.h"
#include "tools/json_out.h"
#include "tools/probe/facts.h"
#include "tools/probe/probe_report.h"

static void env_json(struct json *j, const char *key, const struct probe_env *e) {
  json_obj(j, key);
  for (int i = 0; i < e->n; i++) json_str(j, e->v[i].name, e->v[i].value);
  json_close_obj(j);
}

static void nccl_plugin_json(struct json *j, const struct probe_facts *f) {
  char v[32];
  json_obj(j, "nccl");
  probe_report_nccl_version(f, v, sizeof(v));
  json_str(j, "version", f->nccl_code ? v : NULL);
  json_int(j, "code", f->nccl_code);
  json_str(j, "path", f->nccl_path[0] ? f->nccl_path : NULL);
  json_str(j, "error", f->nccl_err[0] ? f->nccl_err : NULL);
  json_close_obj(j);
  json_obj(j, "plugin");
  json_str(j, "version", f->plugin_version[0] ? f->plugin_version : NULL);
  json_str(j, "path", f->plugin_path[0] ? f->plugin_path : NULL);
  json_str(j, "error", f->plugin_err[0] ? f->plugin_err : NULL);
  json_arr(j, "abi_exported");
  for (int k = 5; k <= 12; k++)
    if (f->abi_mask & (1 << k)) json_int(j, NULL, k);
  json_close_arr(j);
  json_int(j, "abi_used", f->abi_used);
  json_close_obj(j);
}

static void net_json(struct json *j, const struct probe_facts *f) {
  json_str(j, "transport", f->transport);
  json_arr(j, "devices");
  for (int i = 0; i < f->ndev; i++) {
    json_obj(j, NULL);
    json_str(j, "name", f->devs[i].name);
    json_int(j, "speed_mbps", f->devs[i].speed);
    json_close_obj(j);
  }
  json_close_arr(j);
  json_str(j, "no_device", f->ndev ? NULL : f->no_dev);
  json_str(j, "socket_interfaces", f->sock_ifs);
  json_str(j, "socket_error", f->sock_err[0] ? f->sock_err : NULL);
  json_int(j, "socket_mtu", f->sock_mtu);
  json_arr(j, "interfaces");
  for (int i = 0; i < f->nif; i++) {
    json_obj(j, NULL);
    json_str(j, "name", f->ifs[i].name);
    json_str(j, "addr", f->ifs[i].addr[0] ? f->ifs[i].addr : NULL);
    json_int(j, "mtu", f->ifs[i].mtu);
    json_bool(j, "up", f->ifs[i].up);
    json_close_obj(j);
  }
  json_close_arr(j);
  json_bool(j, "rdma_present", f->rdma_present);
  json_arr(j, "rdma");
  for (int i = 0; i < f->nrdma; i++) {
    const struct probe_rdma *x = &f->rdma[i];
    json_obj(j, NULL);
    json_str(j, "device", x->name);
    json_int(j, "port", x->port);
    json_str(j, "link_layer", x->ll);
    json_int(j, "gid_index", x->gid_index);
    json_str(j, "gid", x->gid);
    json_str(j, "gid_type", x->gid_type);
    json_str(j, "subnet", x->subnet[0] ? x->subnet : NULL);
    json_str(j, "netdev", x->netdev[0] ? x->netdev : NULL);
    json_int(j, "mtu", x->mtu);
    json_int(j, "speed_mbps", x->speed_mbps);
    if (x->pkey >= 0) json_int(j, "pkey", x->pkey);
    else json_null(j, "pkey");
    facts_qos_json(j, x);
    json_close_obj(j);
  }
  json_close_arr(j);
}

static void advice_json(struct json *j, const struct probe_facts *f) {
  json_arr(j, "issues");
  for (int i = 0; i < f->nissue; i++) {
    json_obj(j, NULL);
    json_str(j, "severity", probe_sev_name((enum probe_sev)f->issues[i].sev));
    json_str(j, "text", f->issues[i].text);
    json_close_obj(j);
  }
  json_close_arr(j);
  json_arr(j, "recommended");
  for (int i = 0; i < f->nrec; i++) {
    json_obj(j, NULL);
    json_str(j, "name", f->recs[i].name);
    json_str(j, "value", f->recs[i].value);
    json_str(j, "status", f->recs[i].status);
    json_close_obj(j);
  }
  json_close_arr(j);
}

static void host_json(struct json *j, const struct probe_run *r, int k) {
  const struct probe_facts *f = &r->facts[k];
  const struct probe_rank_state *s = &r->ranks[k];
  json_obj(j, NULL);
  json_int(j, "rank", k);
  json_str(j, "host", f->host[0] ? f->host : NULL);
  const char *state = probe_report_rank_state(r, k);
  json_str(j, "state", state[0] ? state : "ok");
  json_str(j, "gone_why", s->dead ? s->why : NULL);
  json_str(j, "addr", s->addr[0] ? s->addr : NULL);
  if (!f->host[0]) return json_close_obj(j);
  json_int(j, "local_rank", f->local_rank);
  json_str(j, "probe_version", f->probe_version);
  nccl_plugin_json(j, f);
  net_json(j, f);
  env_json(j, "env", &f->env);
  if (f->pid1_ok) env_json(j, "pid1_env", &f->pid1);
  else json_null(j, "pid1_env");
  json_str(j, "pid1_error", f->pid1_ok ? NULL : f->pid1_err);
  advice_json(j, f);
  json_close_obj(j);
}

static void pair_json(struct json *j, const struct probe_run *r, const struct probe_pair *p) {
  char h[PROBE_HOST_MAX + 16];
  json_obj(j, NULL);
  json_int(j, "src", p->src);
  json_int(j, "dst", p->dst);
  json_str(j, "src_host", probe_rank_host(r, p->src, h, sizeof(h)));
  json_str(j, "dst_host", probe_rank_host(r, p->dst, h, sizeof(h)));
  json_int(j, "device", p->dev);
  json_str(j, "device_name", p->dev_name[0] ? p->dev_name : NULL);
  json_str(j, "dst_device_name", p->dst_dev_name[0] ? p->dst_dev_name : NULL);
  json_str(j, "transport", p->transport);
  json_bool(j, "tested", p->tested);
  json_bool(j, "ok", p->ok);
  if (p->ok) json_num(j, "gbps", p->gbps, 3), json_num(j, "lat_us", p->lat_us, 1);
  else json_null(j, "gbps"), json_null(j, "lat_us");
  json_bool(j, "slow", p->slow);
  json_bool(j, "retested", p->retested);
  json_str(j, "cause", p->ok ? NULL : p->cause);
  json_str(j, "plugin_cause", p->code[0] ? p->code : NULL);
  if (p->stall_bytes) json_int(j, "stall_bytes", p->stall_bytes);
  json_str(j, "error", p->ok ? NULL : p->error);
  json_close_obj(j);
}

static void problem_json(struct json *j, const struct probe_problem *p) {
  json_obj(j, NULL);
  json_str(j, "severity", probe_sev_name(p->sev));
  json_arr(j, "hosts");
  for (const char *s = p->hosts; *s;) {
    size_t n = strcspn(s, ",");
    char h[PROBE_HOST_MAX + 16];
    snprintf(h, sizeof(h), "%.*s", (int)n, s);
    json_str(j, NULL, h);
    s += n + (s[n] == ',');
  }
  json_close_arr(j);
  json_str(j, "text", p->text);
  json_str(j, "fix", p->fix);
  json_close_obj(j);
}

void probe_report_json(FILE *f, const struct probe_run *r, int exit_status) {
  struct json j;
  json_begin(&j, f);
  json_str(&j, "schema", "nccl-net-diag.probe/1");
  json_str(&j, "version", DIAG_VERSION);
  json_str(&j, "launcher", r->launcher);
  json_str(&j, "rendezvous", r->rendezvous);
  json_str(&j, "job", r->job);
  json_int(&j, "world_size", r->world);
  json_int(&j, "host_count", r->nhost);
  json_str(&j, "pairs_mode", r->pairs_mode);
  json_int(&j, "rounds", r->nrounds);
  json_int(&j, "bytes", (long long)r->opts->bytes);
  json_num(&j, "elapsed_s", r->elapsed_s, 2);
  json_bool(&j, "timed_out", r->timed_out);
  json_int(&j, "exit_status", exit_status);
  json_arr(&j, "hosts");
  for (int k = 0; k < r->world; k++) host_json(&j, r, k);
  json_close_arr(&j);
  json_arr(&j, "pairs");
  for (int i = 0; i < r->npair; i++) pair_json(&j, r, &r->pairs[i]);
  json_close_arr(&j);
  json_arr(&j, "problems");
  for (int i = 0; i < r->nproblem; i++) problem_json(&j, &r->problems[i]);
  json_close_arr(&j);
  json_end(&j);
}
