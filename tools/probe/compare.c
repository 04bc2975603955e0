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
  /* asked while host_first is still unset, cmp_host_first works it out */
  char *first = calloc((size_t)r->world, 1);
  for (int k = 0; first && k < r->world; k++) first[k] = (char)cmp_host_first(r, k);
  r->host_first = first;
  compare_hosts(r);
  compare_nccl(r);
  compare_plugin(r);
  compare_devices(r);
  probe_compare_env(r);
  probe_compare_net(r);
  probe_compare_qos(r);
}
