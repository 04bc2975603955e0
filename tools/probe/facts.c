/* SPDX-License-Identifier: Apache-2.0 */
/* A host's facts: NCCL, the plugin as NCCL loads it, the settings. */
#include "tools/probe/facts.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/strutil.h"
#include "common/version.h"
#include "tools/probe/capture.h"
#include "tools/probe/plugin_events.h"

typedef int (*get_version_fn)(int *version);

/* As the job's loader would find it: by soname on the search path, or the
 * library --nccl-lib names. Kept open: the plugin then reads the same
 * version (it tells its peers, which compare). */
static void nccl_facts(struct probe_facts *f, struct facts_ctx *ctx, const char *lib) {
  const char *name = lib ? lib : "libnccl.so.2";
  void *h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
  if (!h) {
    snprintf(f->nccl_err, sizeof(f->nccl_err), "none found: %s", dlerror());
    return;
  }
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0])
    scopy(f->nccl_path, sizeof(f->nccl_path), lm->l_name);
  else scopy(f->nccl_path, sizeof(f->nccl_path), name);
  get_version_fn fn = (get_version_fn)dlsym(h, "ncclGetVersion");
  int v = 0;
  if (!fn) snprintf(f->nccl_err, sizeof(f->nccl_err), "%s has no ncclGetVersion", f->nccl_path);
  else if (fn(&v) != 0 || v <= 0)
    snprintf(f->nccl_err, sizeof(f->nccl_err), "ncclGetVersion of %s failed", f->nccl_path);
  else f->nccl_code = v;
  ctx->nccl = h;
}

static void plugin_devices(struct probe_facts *f, struct facts_ctx *ctx, uint64_t mark) {
  int n = 0;
  if (netload_devices(&ctx->nl, &n) != ncclSuccess) n = 0;
  for (int d = 0; d < n && f->ndev < PROBE_MAX_DEVS; d++) {
    struct netload_props p;
    if (netload_props(&ctx->nl, d, &p) != ncclSuccess) break;
    scopy(f->devs[f->ndev].name, sizeof(f->devs[0].name), p.name);
    f->devs[f->ndev].speed = p.speed;
    f->ndev++;
  }
  ctx->ndev = f->ndev;
  if (!f->ndev) {
    capture_warns_since(mark, f->no_dev, sizeof(f->no_dev));
    if (!f->no_dev[0]) scopy(f->no_dev, sizeof(f->no_dev), "the plugin reports no device");
  }
}

static void plugin_facts(struct probe_facts *f, struct facts_ctx *ctx, const struct probe_opts *o) {
  char err[512];
  if (netload_open(&ctx->nl, o->plugin, o->abi, err, sizeof(err))) {
    snprintf(f->plugin_err, sizeof(f->plugin_err), "cannot load the plugin: %s", err);
    scopy(f->no_dev, sizeof(f->no_dev), f->plugin_err);
    ctx->nl.dl = NULL;
    return;
  }
  scopy(f->plugin_path, sizeof(f->plugin_path), ctx->nl.path);
  for (int v = NETLOAD_ABI_MIN; v <= NETLOAD_ABI_MAX; v++) {
    char sym[32];
    snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
    if (dlsym(ctx->nl.dl, sym)) f->abi_mask |= 1 << v;
  }
  f->abi_used = ctx->nl.version;
  uint64_t mark = capture_mark();
  netload_init(&ctx->nl, capture_logger);
  capture_plugin_version(f->plugin_version, sizeof(f->plugin_version));
  plugin_devices(f, ctx, mark);
}

void facts_gather(struct probe_facts *f, struct facts_ctx *ctx, const struct probe_opts *o,
                  int rank, int local_rank) {
  memset(ctx, 0, sizeof(*ctx));
  f->rank = rank;
  f->local_rank = local_rank;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  scopy(f->host, sizeof(f->host), host);
  scopy(f->probe_version, sizeof(f->probe_version), DIAG_VERSION);
  facts_env_process(&f->env);
  f->pid1_ok = facts_env_file(&f->pid1, "/proc/1/environ", f->pid1_err, sizeof(f->pid1_err)) == 0;
  facts_topo(f);
  scopy(f->transport, sizeof(f->transport), f->nrdma ? "RDMA" : "TCP");
  nccl_facts(f, ctx, o->nccl_lib);
  /* The probe tests RDMA itself: a pair whose RDMA path fails must fail
   * with the plugin's diagnosis, not pass over TCP. */
  setenv("NCCL_DIAG_FALLBACK", "off", 1);
  plugin_events_setup(o);
  plugin_facts(f, ctx, o);
}

void facts_release(struct facts_ctx *ctx) {
  if (ctx->nl.dl) {
    netload_finalize(&ctx->nl);
    netload_close(&ctx->nl);
  }
  /* libnccl stays loaded: its destructors may expect a CUDA it never found. */
  ctx->nccl = NULL;
}
