/* SPDX-License-Identifier: Apache-2.0 */
/* Differences between hosts that break or slow a job: versions, the
 * plugin's devices and transport, and each host's own topology problems
 * (compare_env.c: settings; compare_net.c: interfaces and RDMA ports). */
#include "tools/probe/compare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ncclver.h"
#include "common/strutil.h"

void cmp_add(struct cmp_groups *gs, const char *value, const char *host) {
  int i = 0;
  while (i < gs->n && !(value ? gs->g[i].value && !strcmp(gs->g[i].value, value) : !gs->g[i].value))
    i++;
  if (i == gs->n) {
    struct cmp_group *grown = probe_grow(gs->g, gs->n, sizeof(*grown));
    if (!grown) return;
    gs->g = grown;
    memset(&grown[gs->n], 0, sizeof(*grown));
    grown[gs->n].value = value ? strdup(value) : NULL;
    gs->n++;
  }
  struct cmp_group *g = &gs->g[i];
  for (int k = 0; k < g->nhost; k++)
    if (!strcmp(g->hosts[k], host)) return;
  char **grown = probe_grow(g->hosts, g->nhost, sizeof(char *));
  if (!grown) return;
  g->hosts = grown;
  g->hosts[g->nhost] = strdup(host);
  if (g->hosts[g->nhost]) g->nhost++;
}

void cmp_free(struct cmp_groups *gs) {
  for (int i = 0; i < gs->n; i++) {
    for (int k = 0; k < gs->g[i].nhost; k++) free(gs->g[i].hosts[k]);
    free(gs->g[i].hosts);
    free(gs->g[i].value);
  }
  free(gs->g);
  memset(gs, 0, sizeof(*gs));
}

int cmp_majority(const struct cmp_groups *gs) {
  int best = 0;
  for (int i = 1; i < gs->n; i++)
    if (gs->g[i].nhost > gs->g[best].nhost) best = i;
  return best;
}

void cmp_hosts(const struct cmp_group *g, int full, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  int shown = full || g->nhost <= CMP_HOSTS_SHOWN + 1 ? g->nhost : CMP_HOSTS_SHOWN;
  for (int k = 0; k < shown && o < cap; k++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%s", k ? ", " : "", g->hosts[k]);
  if (shown < g->nhost && o < cap) snprintf(buf + o, cap - o, " and %d more", g->nhost - shown);
}

void cmp_describe(const struct cmp_groups *gs, const char *unset_word, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  /* The minorities first: they are what to look at. */
  int major = cmp_majority(gs);
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < gs->n && o < cap; i++) {
      if ((i == major) != (pass == 1)) continue;
      char hosts[600];
      cmp_hosts(&gs->g[i], 0, hosts, sizeof(hosts));
      o += (size_t)snprintf(buf + o, cap - o, "%s%s on %s", o ? "; " : "",
                            gs->g[i].value ? gs->g[i].value : unset_word, hosts);
    }
}

void cmp_minority_hosts(const struct cmp_groups *gs, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  int major = cmp_majority(gs);
  for (int i = 0; i < gs->n; i++)
    for (int k = 0; i != major && k < gs->g[i].nhost && o < cap; k++)
      o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? "," : "", gs->g[i].hosts[k]);
}

int cmp_reported(const struct probe_run *r, int rank) { return r->facts[rank].host[0] != 0; }

static int first_of_host(const struct probe_run *r, int rank) {
  if (!cmp_reported(r, rank)) return 0;
  for (int k = 0; k < rank; k++)
    if (cmp_reported(r, k) && !strcmp(r->facts[k].host, r->facts[rank].host)) return 0;
  return 1;
}

/* Answered from the table probe_compare builds once (every check asks it
 * for every rank). */
int cmp_host_first(const struct probe_run *r, int rank) {
  return r->host_first ? r->host_first[rank] : first_of_host(r, rank);
}

/* The recommended settings of a host as export lines. */
static void host_fix(const struct probe_facts *f, char *fix, size_t cap) {
  size_t o = 0;
  fix[0] = 0;
  for (int i = 0; i < f->nrec && o < cap; i++)
    if (strcmp(f->recs[i].status, "keep"))
      o += (size_t)snprintf(fix + o, cap - o, "%son %s: export %s=%s", o ? "\n" : "", f->host,
                            f->recs[i].name, f->recs[i].value);
  if (!o)
    snprintf(fix, cap, "run nccl-net-diag doctor on %s for the details and the settings to use",
             f->host);
}

/* Each host's own problems, as the plugin's topology code finds them. */
static void compare_hosts(struct probe_run *r) {
  for (int k = 0; k < r->world; k++) {
    if (!cmp_host_first(r, k)) continue;
    const struct probe_facts *f = &r->facts[k];
    char fix[1200];
    host_fix(f, fix, sizeof(fix));
    int errors = 0;
    for (int i = 0; i < f->nissue; i++) {
      const struct probe_issue *is = &f->issues[i];
      errors += is->sev == 2;
      probe_add_problem(r,
                        is->sev == 2   ? SEV_ERROR
                        : is->sev == 1 ? SEV_WARNING
                                       : SEV_NOTE,
                        f->host, fix, "%s: %s%s", f->host, is->text,
                        is->sev == 2 && !f->ndev
                          ? " (so the plugin offers no network device there: no pair with it "
                            "can be tested)"
                          : "");
    }
    if (!f->ndev && !errors)
      probe_add_problem(r, SEV_ERROR, f->host, fix,
                        "%s: the plugin offers no network device, so NCCL cannot use it there: "
                        "%s",
                        f->host, f->no_dev);
  }
}

static void version_text(const struct probe_facts *f, char *buf, size_t cap) {
  if (f->nccl_code) nccl_version_str(f->nccl_code, buf, cap);
  else snprintf(buf, cap, "none found");
}

static void compare_nccl(struct probe_run *r) {
  struct cmp_groups gs = {0};
  for (int k = 0; k < r->world; k++) {
    if (!cmp_reported(r, k)) continue;
    char v[32];
    version_text(&r->facts[k], v, sizeof(v));
    cmp_add(&gs, v, r->facts[k].host);
  }
  char desc[1500], hosts[512];
  cmp_describe(&gs, "", desc, sizeof(desc));
  cmp_minority_hosts(&gs, hosts, sizeof(hosts));
  if (gs.n > 1)
    probe_add_problem(r, SEV_ERROR, hosts,
                      "install the same NCCL on every node (the same nvidia-nccl-cuXX wheel or "
                      "package; python -c \"import torch; print(torch.cuda.nccl.version())\" "
                      "shows what a job loads); --nccl-lib PATH probes another library",
                      "NCCL versions differ: %s (nodes that run different NCCL releases do not "
                      "understand each other's connection data)",
                      desc);
  else if (gs.n == 1 && !strcmp(gs.g[0].value, "none found"))
    probe_add_problem(r, SEV_NOTE, "",
                      "pass --nccl-lib PATH with the library the job loads (a Python job often "
                      "loads the one in its nvidia-nccl wheel)",
                      "no host finds libnccl.so.2 on the loader's path, so the NCCL versions "
                      "were not compared");
  cmp_free(&gs);
}

/* A node whose NCCL_NET_PLUGIN loads nothing: its own error (which names
 * the value, the cause and the fix), never another node's value to copy. */
static void plugin_unloadable(struct probe_run *r, int k) {
  const struct probe_facts *f = &r->facts[k];
  const char *v = probe_env_get(&f->env, "NCCL_NET_PLUGIN");
  char fix[600];
  if (v && strchr(v, '/'))
    snprintf(fix, sizeof(fix),
             "on %s: set NCCL_NET_PLUGIN to the full path of a libnccl-net-diag.so that exists "
             "there, or to diag with the libnccl-net-diag package installed",
             f->host);
  else
    snprintf(fix, sizeof(fix),
             "on %s: install the libnccl-net-diag package, or add the folder that holds "
             "libnccl-net-diag.so to LD_LIBRARY_PATH",
             f->host);
  probe_add_problem(r, SEV_ERROR, f->host, fix, "on %s the plugin does not load%s%s%s: %s", f->host,
                    v ? " (NCCL_NET_PLUGIN=" : "", v ? v : "", v ? ")" : "", f->plugin_err);
}

static void compare_plugin(struct probe_run *r) {
  struct cmp_groups ver = {0}, abi = {0};
  for (int k = 0; k < r->world; k++) {
    const struct probe_facts *f = &r->facts[k];
    if (!cmp_reported(r, k)) continue;
    if (f->plugin_err[0]) {
      if (cmp_host_first(r, k)) plugin_unloadable(r, k);
      continue;
    }
    char a[64] = "";
    size_t o = 0;
    for (int v = 5; v <= 12 && o < sizeof(a); v++)
      if (f->abi_mask & (1 << v))
        o += (size_t)snprintf(a + o, sizeof(a) - o, "%sv%d", o ? "," : "", v);
    cmp_add(&ver, f->plugin_version[0] ? f->plugin_version : "unknown", f->host);
    cmp_add(&abi, a, f->host);
  }
  char desc[1500], hosts[512];
  cmp_describe(&ver, "", desc, sizeof(desc));
  cmp_minority_hosts(&ver, hosts, sizeof(hosts));
  if (ver.n > 1)
    probe_add_problem(r, SEV_ERROR, hosts,
                      "install the same libnccl-net-diag release on every node (the file "
                      "NCCL_NET_PLUGIN names there; nccl-net-diag doctor on a node names it)",
                      "libnccl-net-diag versions differ: %s", desc);
  cmp_describe(&abi, "", desc, sizeof(desc));
  cmp_minority_hosts(&abi, hosts, sizeof(hosts));
  if (abi.n > 1)
    probe_add_problem(r, SEV_WARNING, hosts,
                      "install the same libnccl-net-diag build on every node",
                      "the plugin exports different NCCL ABI tables: %s", desc);
  cmp_free(&ver);
  cmp_free(&abi);
}

static void compare_devices(struct probe_run *r) {
  struct cmp_groups tr = {0}, nd = {0};
  for (int k = 0; k < r->world; k++) {
    const struct probe_facts *f = &r->facts[k];
    if (!cmp_host_first(r, k) || !f->ndev) continue;
    char n[16];
    snprintf(n, sizeof(n), "%d", f->ndev);
    cmp_add(&tr, f->transport, f->host);
    cmp_add(&nd, n, f->host);
  }
  char desc[1500], hosts[512];
  cmp_describe(&tr, "", desc, sizeof(desc));
  cmp_minority_hosts(&tr, hosts, sizeof(hosts));
  if (tr.n > 1)
    probe_add_problem(r, SEV_ERROR, hosts,
                      "make RDMA usable on every node (nccl-net-diag doctor on the TCP ones says "
                      "why it is not), or export NCCL_IB_DISABLE=1 on every node to run all of "
                      "it over TCP",
                      "RDMA on some nodes but not others: %s (an RDMA rank cannot connect to a "
                      "TCP-only one)",
                      desc);
  cmp_describe(&nd, "", desc, sizeof(desc));
  cmp_minority_hosts(&nd, hosts, sizeof(hosts));
  if (nd.n > 1)
    probe_add_problem(r, SEV_WARNING, hosts,
                      "make the same network devices usable on every node (nccl-net-diag "
                      "doctor on each says which ports it set apart and why)",
                      "the number of network devices differs: %s (rings through the nodes with "
                      "fewer use fewer NICs)",
                      desc);
  cmp_free(&tr);
  cmp_free(&nd);
}

void probe_compare(struct probe_run *r) {
  r->host_first = calloc((size_t)r->world, 1);
  for (int k = 0; r->host_first && k < r->world; k++) r->host_first[k] = (char)first_of_host(r, k);
  compare_hosts(r);
  compare_nccl(r);
  compare_plugin(r);
  compare_devices(r);
  probe_compare_env(r);
  probe_compare_net(r);
}
