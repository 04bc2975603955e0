/* SPDX-License-Identifier: Apache-2.0 */
/* Hosts that differ from the rest: NCCL version, net plugin, settings that
 * must agree across a job. */
#include <stdlib.h>
#include <string.h>

#include "common/agree.h"
#include "tools/explain/rules.h"

/* "node-c, node-d" for the odd hosts. */
static void odd_names(const struct corr *c, const bool *is_odd, char *buf, size_t cap, int *n) {
  buf[0] = 0, *n = 0;
  for (int i = 0; i < c->nhosts; i++) {
    if (!is_odd[i]) continue;
    if (++*n <= 6)
      snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", *n > 1 ? ", " : "", c->hosts[i].name);
  }
  if (*n > 6) snprintf(buf + strlen(buf), cap - strlen(buf), " and %d more", *n - 6);
}

void version_build(const struct explain_ctx *cx, const struct hits *h) {
  (void)h;
  const struct corr *c = cx->corr;
  bool *is_odd = calloc((size_t)c->nhosts + 1, sizeof(*is_odd));
  char split[1024], odd[512];
  int nodd;
  struct finding *f;
  if (is_odd && rules_split_by(c, rules_version_of, is_odd, split, sizeof(split)) > 1 &&
      (f = finding_new(cx->out, "version-skew", CONF_HIGH))) {
    odd_names(c, is_odd, odd, sizeof(odd), &nodd);
    if (nodd)
      finding_cause(
        f,
        "%s %s a different NCCL version from the rest of the job (%s): NCCL versions differ in their connection bytes, message sizes and protocols, so mixed nodes fail in setup or hang",
        odd, nodd > 1 ? "run" : "runs", split);
    else
      finding_cause(
        f,
        "the hosts run different NCCL versions (%s): NCCL versions differ in their connection bytes, message sizes and protocols, so mixed nodes fail in setup or hang",
        split);
    finding_fix(
      f,
      "install one NCCL version on every node (one container image or nvidia-nccl-cu12 wheel; no second libnccl on the library path); check each node with python -c 'import torch; print(torch.cuda.nccl.version())'");
    for (int i = 0; i < c->nhosts; i++)
      if (is_odd[i] || !nodd) finding_evidence(f, c->hosts[i].version_rec);
    for (int i = 0; i < c->nhosts; i++) finding_evidence(f, c->hosts[i].version_rec);
  }
  for (int i = 0; i < c->nhosts; i++) {
    const struct corr_host *ch = &c->hosts[i];
    if (!ch->version2[0] || !(f = finding_new(cx->out, "version-skew", CONF_MEDIUM))) continue;
    finding_cause(
      f,
      "processes on %s load two NCCL versions (%s and %s): two NCCL libraries are installed and the library path picks a different one per process",
      ch->name, ch->version, ch->version2);
    finding_fix(
      f,
      "keep one libnccl on %s (compare the wheel's with the system's: ldconfig -p | grep nccl) or pin it with LD_LIBRARY_PATH for every process",
      ch->name);
    finding_evidence(f, ch->version_rec);
    finding_evidence(f, ch->version2_rec);
  }
  free(is_odd);
}

static const char *plugin_of(const struct corr_host *h) {
  return h->plugin_rec ? h->plugin_key : NULL;
}

void plugin_build(const struct explain_ctx *cx, const struct hits *h) {
  (void)h;
  const struct corr *c = cx->corr;
  bool *is_odd = calloc((size_t)c->nhosts + 1, sizeof(*is_odd));
  char split[1024];
  struct finding *f;
  if (is_odd && rules_split_by(c, plugin_of, is_odd, split, sizeof(split)) > 1 &&
      (f = finding_new(cx->out, "plugin-skew", CONF_HIGH))) {
    finding_cause(
      f,
      "the hosts load different NCCL network plugins (%s), so their transports do not speak the same protocol",
      split);
    finding_fix(
      f,
      "install the same net plugin on every node and set NCCL_NET_PLUGIN the same way everywhere (NCCL_NET_PLUGIN=none makes every node use NCCL's own IB and Socket transports)");
    for (int i = 0; i < c->nhosts; i++) finding_evidence(f, c->hosts[i].plugin_rec);
  }
  free(is_odd);
}

static const char *network_of(const struct corr_host *h) {
  return h->network_rec ? h->network : NULL;
}

static bool has_finding(const struct findings *fs, const char *rule) {
  for (int i = 0; i < fs->n; i++)
    if (!strcmp(fs->v[i]->rule, rule)) return true;
  return false;
}

/* "Using network IB" on some hosts, "Using network Socket" on others, with
 * no error that says why (a fallback, a plugin or a setting that differs
 * reports it first): NCCL cannot connect a host over a network the peer
 * does not run. */
void network_build(const struct explain_ctx *cx, const struct hits *h) {
  (void)h;
  const struct corr *c = cx->corr;
  if (has_finding(cx->out, "plugin-skew") || has_finding(cx->out, "ib-fallback") ||
      has_finding(cx->out, "settings-skew"))
    return;
  bool *is_odd = calloc((size_t)c->nhosts + 1, sizeof(*is_odd));
  char split[1024];
  struct finding *f;
  if (is_odd && rules_split_by(c, network_of, is_odd, split, sizeof(split)) > 1 &&
      (f = finding_new(cx->out, "network-skew", CONF_MEDIUM))) {
    finding_cause(
      f,
      "the hosts chose different networks (Using network: %s) and their logs do not say why: a host that cannot open its RDMA devices, or a setting (NCCL_NET, NCCL_IB_DISABLE, NCCL_NET_PLUGIN) that differs in the environment the job gives it",
      split);
    finding_fix(
      f,
      "compare the environment and the RDMA devices of those hosts (nccl-net-diag doctor on each); set NCCL_NET to the network every host must use, so a host that cannot use it fails at init and names why");
    for (int i = 0; i < c->nhosts; i++)
      if (is_odd[i]) finding_evidence(f, c->hosts[i].network_rec);
    for (int i = 0; i < c->nhosts; i++) finding_evidence(f, c->hosts[i].network_rec);
  }
  free(is_odd);
}

static bool has_truncation(const struct logset *ls) {
  for (size_t i = 0; i < ls->nrecs; i++)
    if (truncated_match(&ls->recs[i])) return true;
  return false;
}

/* One key: its split across the hosts that log settings, into text. */
static bool key_split(const struct corr *c, const char *key, const char **values, bool *is_odd,
                      char *buf, size_t cap) {
  bool is_set = false;
  for (int i = 0; i < c->nhosts; i++) {
    const char *v = corr_env(&c->hosts[i], key);
    values[i] = c->hosts[i].nenv ? (v ? v : "unset") : NULL;
    is_set |= v != NULL;
  }
  return is_set && corr_split(c, values, is_odd, buf, cap) > 1;
}

void settings_build(const struct explain_ctx *cx, const struct hits *h) {
  (void)h;
  const struct corr *c = cx->corr;
  const char **values = calloc((size_t)c->nhosts + 1, sizeof(*values));
  bool *is_odd = calloc((size_t)c->nhosts + 1, sizeof(*is_odd));
  bool skip_sizes = has_truncation(cx->ls);
  char text[1100] = "", split[512];
  struct finding *f = NULL;
  size_t nt;
  const struct agree_entry *t = agree_table(&nt);
  /* From the must-agree table (common/agree.h): settings every rank must
   * share, and those that name each node's hardware; with a truncation the
   * size-changing ones are that rule's. */
  for (size_t k = 0; values && is_odd && k < nt; k++) {
    const char *key = t[k].name;
    if (strchr(key, '*') || (t[k].cls != AGREE_MUST && t[k].cls != AGREE_PER_HOST) ||
        (skip_sizes && t[k].changes_sizes))
      continue;
    if (!key_split(c, key, values, is_odd, split, sizeof(split))) continue;
    if (!f && !(f = finding_new(cx->out, "settings-skew", CONF_MEDIUM))) break;
    if (strlen(text) + strlen(split) + 40 < sizeof(text))
      snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s%s: %s", text[0] ? "; " : "",
               key, split);
    for (int i = 0; i < c->nhosts; i++) {
      if (!values[i]) continue;
      if (is_odd[i] || !strcmp(values[i], "unset")) finding_host(f, c->hosts[i].name);
      for (int e = 0; e < c->hosts[i].nenv; e++)
        if (!strcmp(c->hosts[i].env[e].key, key)) finding_evidence(f, c->hosts[i].env[e].rec);
    }
    bool has_majority = false; /* export only the value most hosts have */
    for (int i = 0; i < c->nhosts; i++) has_majority |= is_odd[i];
    for (int i = 0; has_majority && i < c->nhosts; i++)
      if (values[i] && !is_odd[i] && strcmp(values[i], "unset")) {
        finding_export(f, "%s=%s", key, values[i]);
        break;
      }
  }
  if (f) {
    finding_cause(
      f,
      "settings that every rank must share differ between hosts (%s): the hosts then choose different interfaces, devices or message sizes",
      text);
    finding_fix(
      f,
      "set them the same way on every node (mpirun -x, docker -e, srun --export; a platform may inject them into PID 1 only: cat /proc/1/environ | tr '\\0' '\\n' | grep NCCL_)");
  }
  free(values), free(is_odd);
}
