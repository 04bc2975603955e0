/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL_* settings across the ranks. Some must agree or the job breaks
 * (NCCL_PROTO, NCCL_ALGO, buffer sizes: ranks size and pair their messages
 * by them); some name hardware and may differ per node but usually should
 * not (NCCL_SOCKET_IFNAME, NCCL_IB_HCA); logging and this plugin's test
 * knobs are ignored; any other difference is worth a look. Also: settings
 * PID 1 has that the job's processes do not (a platform that injects them
 * into PID 1 only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/agree.h"
#include "common/knob_names.h"
#include "tools/probe/compare.h"
#include "tools/probe/env_class.h"

/* Every variable any rank sets, once. */
static int names_of(const struct probe_run *r, const char ***out) {
  const char **names = NULL;
  int n = 0;
  for (int k = 0; k < r->world; k++)
    for (int i = 0; cmp_reported(r, k) && i < r->facts[k].env.n; i++) {
      const char *name = r->facts[k].env.v[i].name;
      int j = 0;
      while (j < n && strcmp(names[j], name)) j++;
      if (j < n) continue;
      const char **grown = probe_grow(names, n, sizeof(*grown));
      if (!grown) break;
      names = grown;
      names[n++] = name;
    }
  *out = names;
  return n;
}

/* Make the minority match the majority, spelled out per group. */
static void env_fix(const struct cmp_groups *gs, const char *name, char *fix, size_t cap) {
  int major = cmp_majority(gs);
  const char *mv = gs->g[major].value;
  size_t o = 0;
  fix[0] = 0;
  for (int i = 0; i < gs->n && o < cap; i++) {
    if (i == major) continue;
    char hosts[600];
    cmp_hosts(&gs->g[i], 1, hosts, sizeof(hosts));
    if (mv)
      o +=
        (size_t)snprintf(fix + o, cap - o, "%son %s: export %s=%s", o ? "\n" : "", hosts, name, mv);
    else o += (size_t)snprintf(fix + o, cap - o, "%son %s: unset %s", o ? "\n" : "", hosts, name);
  }
  if (o < cap)
    snprintf(fix + o, cap - o,
             "\n(as on the other %d host%s, or make every node use "
             "the value you intend)",
             gs->g[major].nhost, gs->g[major].nhost == 1 ? "" : "s");
}

/* A setting that names hardware: what each node's own layout recommends. */
static void per_host_fix(const struct probe_run *r, const char *name, char *fix, size_t cap) {
  size_t o = 0;
  fix[0] = 0;
  for (int k = 0; k < r->world && o < cap; k++) {
    const struct probe_facts *f = &r->facts[k];
    for (int i = 0; cmp_host_first(r, k) && i < f->nrec && o < cap; i++)
      if (!strcmp(f->recs[i].name, name) && strcmp(f->recs[i].status, "keep"))
        o += (size_t)snprintf(fix + o, cap - o, "on %s: export %s=%s\n", f->host, name,
                              f->recs[i].value);
  }
  if (o < cap)
    snprintf(fix + o, cap - o,
             "make %s select the same network on every node (nccl-net-diag "
             "doctor on a node recommends its value)",
             name);
}

static void compare_var(struct probe_run *r, const char *name, enum env_class cls) {
  struct cmp_groups gs = {0};
  for (int k = 0; k < r->world; k++)
    if (cmp_reported(r, k)) cmp_add(&gs, probe_env_get(&r->facts[k].env, name), r->facts[k].host);
  if (gs.n > 1) {
    char desc[1500], hosts[512], fix[2000];
    cmp_describe(&gs, "unset", desc, sizeof(desc));
    cmp_minority_hosts(&gs, hosts, sizeof(hosts));
    if (cls == EC_PER_HOST) per_host_fix(r, name, fix, sizeof(fix));
    else env_fix(&gs, name, fix, sizeof(fix));
    char why[400];
    snprintf(why, sizeof(why), "%s: %s",
             cls == EC_MUST_AGREE ? "every rank must use the same value"
             : cls == EC_PER_HOST ? "it names each node's hardware"
                                  : "worth a look",
             agree_lookup(name)->why);
    probe_add_problem(r, cls == EC_MUST_AGREE ? SEV_ERROR : SEV_WARNING, hosts, fix,
                      "%s differs: %s (%s)", name, desc, why);
  }
  cmp_free(&gs);
}

/* PID 1 sets it, the job's processes do not see it (or see another value). */
static void compare_pid1(struct probe_run *r) {
  for (int k = 0; k < r->world; k++) {
    const struct probe_facts *f = &r->facts[k];
    if (!cmp_host_first(r, k) || !f->pid1_ok) continue;
    for (int i = 0; i < f->pid1.n; i++) {
      const struct probe_var *v = &f->pid1.v[i];
      const char *mine = probe_env_get(&f->env, v->name);
      if (probe_env_class(v->name) == EC_IGNORE || (mine && !strcmp(mine, v->value))) continue;
      char fix[1200];
      snprintf(fix, sizeof(fix),
               "on %s: export %s=%s in the job's environment (mpirun -x, srun "
               "--export, a torchrun wrapper), or remove it from PID 1's if it is wrong",
               f->host, v->name, v->value);
      probe_add_problem(r, SEV_WARNING, f->host, fix,
                        "%s: PID 1 sets %s=%s but this job's processes see %s%s (a job started "
                        "by PID 1 would differ from one started from a shell)",
                        f->host, v->name, v->value, mine ? mine : "it unset", mine ? "" : "");
    }
  }
}

/* A name neither NCCL nor the plugin reads (a typo NCCL ignores silently):
 * one warning naming the hosts that set it and the closest known name. */
static void unknown_name(struct probe_run *r, const char *name) {
  char msg[900], hosts[512] = "", fix[400];
  if (!knob_name_unknown(name, NULL, msg, sizeof(msg))) return;
  size_t o = 0;
  for (int k = 0; k < r->world && o < sizeof(hosts); k++)
    if (cmp_host_first(r, k) && probe_env_get(&r->facts[k].env, name))
      o += (size_t)snprintf(hosts + o, sizeof(hosts) - o, "%s%s", o ? ", " : "", r->facts[k].host);
  const char *near = knob_name_closest(name);
  if (near)
    snprintf(fix, sizeof(fix),
             "on %s: set %s instead of %s (in the job's environment or the "
             "NCCL config file that sets it)",
             hosts, near, name);
  else
    snprintf(fix, sizeof(fix), "on %s: unset %s, or spell it as NCCL's documentation does", hosts,
             name);
  probe_add_problem(r, SEV_WARNING, hosts, fix, "on %s: %s", hosts, msg);
}

void probe_compare_env(struct probe_run *r) {
  const char **names = NULL;
  int n = names_of(r, &names);
  for (int i = 0; i < n; i++) {
    enum env_class cls = probe_env_class(names[i]);
    /* diag on one node and the full path of the same file on another are
     * the same plugin: the files and releases are compared (compare.c). */
    unknown_name(r, names[i]);
    if (!strcmp(names[i], "NCCL_NET_PLUGIN")) continue;
    if (cls != EC_IGNORE) compare_var(r, names[i], cls);
  }
  free(names);
  compare_pid1(r);
}
