/* SPDX-License-Identifier: Apache-2.0 */
/* A net plugin that was asked for and not loaded (the job stopped, or ran
 * on with NCCL's own transport), aws-ofi-nccl's NET/OFI errors, and NCCL
 * before 2.21 on RoCE with its default GID index 0. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/explain/rules.h"

/* --- a net plugin not loaded ---------------------------------------------- */

static bool is_failed_any(const char *t) {
  return strstr(t, "Failed to initialize any NET plugin") != NULL;
}

/* 2.12-2.20 "NET/Plugin : No plugin found (x)", "Plugin load returned N : E
 * when loading x"; 2.21+ "All attempts to load 'x y' also failed"; 2.24+
 * "NET/Plugin: Could not find: x y." or "NET/Plugin: x: <dlerror>". */
static bool plugin_missing_name(const char *t, char *name, size_t cap) {
  if (!strstr(t, "NET/Plugin")) return false;
  const char *p;
  if ((p = text_after(t, "Could not find:"))) {
  } else if ((p = text_after(t, "No plugin found ("))) {
  } else if ((p = text_after(t, "when loading "))) {
  } else if ((p = text_after(t, "to load '"))) {
  } else if ((p = text_after(t, "Plugin load ("))) {
  } else return false;
  /* the library (".so") that is not NCCL's default libnccl-net.so, else the
   * first other name ("diag libnccl-net-diag.so": the name and its file) */
  char first[128] = "";
  for (int k = 0; k < 4; k++) {
    while (*p == ' ') p++;
    size_t n = text_token(p, "()':;,", name, cap);
    if (!n) return false;
    p += n;
    while (*p && strchr(",':;)", *p)) p++;
    size_t len = strlen(name);
    while (len && name[len - 1] == '.') name[--len] = 0;
    if (!len || !strcmp(name, "Using") || !strcmp(name, "using")) break;
    if (!strcmp(name, "libnccl-net.so")) continue;
    if (len > 3 && !strcmp(name + len - 3, ".so")) return true;
    if (!first[0]) snprintf(first, sizeof(first), "%s", name);
  }
  if (first[0]) snprintf(name, cap, "%s", first);
  return first[0] != 0;
}

bool netplug_match(const struct rec *r) {
  char name[128];
  return is_failed_any(r->text) || plugin_missing_name(r->text, name, sizeof(name));
}

static void netplug_fix(struct finding *f, const struct corr_host *h, const char *name) {
  bool is_diag = strstr(name, "diag") != NULL;
  bool is_new = h->version[0] && !rules_version_before(h->version, 2, 21);
  char path[160];
  snprintf(path, sizeof(path), "%s", is_diag ? "libnccl-net-diag.so" : name);
  finding_fix(
    f,
    "install %s on %s (every node needs it), or put the folder that holds %s on LD_LIBRARY_PATH of the job%s; ldconfig -p | grep nccl-net shows what the loader finds",
    is_diag ? "the libnccl-net-diag package" : "the plugin", h->name, path,
    is_new ? ", or give its absolute path: NCCL_NET_PLUGIN=/path/to/lib (NCCL 2.21+)"
    : h->version[0]
      ? " (this NCCL is older than 2.21: NCCL_NET_PLUGIN takes a name x for libnccl-net-x.so, not a path)"
      : "");
}

static void netplug_host(const struct explain_ctx *cx, const struct hits *h,
                         const struct corr_host *ch) {
  char name[128] = "", one[128];
  const struct rec *miss = NULL, *fail = NULL;
  for (size_t i = 0; i < h->n; i++) {
    const struct rec *r = h->v[i];
    if (strcmp(r->host, ch->name)) continue;
    if (is_failed_any(r->text)) fail = fail ? fail : r;
    else if (!miss && plugin_missing_name(r->text, one, sizeof(one)))
      miss = r, snprintf(name, sizeof(name), "%s", one);
  }
  if (!miss && !fail) return;
  struct finding *f =
    finding_new(cx->out, "net-plugin-missing", miss ? (fail ? CONF_HIGH : CONF_MEDIUM) : CONF_LOW);
  if (!f) return;
  finding_evidence(f, miss), finding_evidence(f, fail), finding_evidence(f, ch->network_rec);
  const char *host = ch->name[0] ? ch->name : "a host";
  if (miss && fail) {
    finding_cause(
      f,
      "the net plugin %s was not found on %s and NCCL could start no network after it (Failed to initialize any NET plugin): the plugin is not installed there or not on the loader's path",
      name, host);
    netplug_fix(f, ch, name);
  } else if (miss) {
    finding_cause(
      f,
      "the net plugin %s was not found on %s, and the job went on with NCCL's own %s transport%s",
      name, host, ch->network[0] ? ch->network : "internal",
      !strcmp(ch->network, "Socket")
        ? " (TCP sockets, far slower than RDMA): it ran without the plugin"
        : ": it ran without the plugin");
    netplug_fix(f, ch, name);
  } else {
    finding_cause(
      f,
      "no confident cause: NCCL on %s could start no network transport (Failed to initialize any NET plugin); the log names no plugin that failed to load",
      host);
    finding_fix(
      f,
      "check NCCL_NET and NCCL_NET_PLUGIN on %s (a plugin or transport named there that does not exist), whether NET/IB found a device and NET/Socket an interface in its NCCL_DEBUG=INFO log, and run nccl-net-diag doctor there",
      host);
  }
}

void netplug_build(const struct explain_ctx *cx, const struct hits *h) {
  for (int i = 0; i < cx->corr->nhosts; i++) netplug_host(cx, h, &cx->corr->hosts[i]);
  static const struct corr_host nohost = {0};
  for (size_t i = 0; i < h->n; i++)
    if (!h->v[i]->host[0]) {
      netplug_host(cx, h, &nohost);
      break;
    }
}

/* --- aws-ofi-nccl ------------------------------------------------------------ */

bool ofi_match(const struct rec *r) {
  const char *t = r->text;
  if (!strstr(t, "NET/OFI") && !strstr(t, "OFI ") && !strstr(t, "libfabric")) return false;
  if (r->level == REC_INFO || r->level == REC_TRACE) return false; /* the plugin's own narration */
  return r->level == REC_WARN || strstr(t, "WARN") || strstr(t, "failed") || strstr(t, "rror");
}

void ofi_build(const struct explain_ctx *cx, const struct hits *h) {
  const struct rec *first = h->v[0];
  bool no_provider = false, no_mem = false, cq_err = false;
  for (size_t i = 0; i < h->n; i++) {
    const char *t = h->v[i]->text;
    no_provider |= strstr(t, "fi_getinfo") || strstr(t, "optimal provider") ||
                   strstr(t, "Unable to find a protocol") || strstr(t, "No data available") ||
                   strstr(t, "provider");
    no_mem |= strstr(t, "Cannot allocate memory") || strstr(t, "RC: -12") != NULL;
    cq_err |=
      strstr(t, "completed with error") || strstr(t, "cq_readerr") || strstr(t, "completion error");
  }
  struct finding *f = finding_new(cx->out, "ofi", no_provider || no_mem ? CONF_MEDIUM : CONF_LOW);
  if (!f) return;
  for (size_t i = 0; i < h->n; i++) finding_evidence(f, h->v[i]);
  const char *host = first->host[0] ? first->host : "the host";
  if (no_mem) {
    finding_cause(
      f,
      "aws-ofi-nccl (NET/OFI) could not register memory with libfabric on %s (Cannot allocate memory): usually the locked-memory limit of the process",
      host);
    finding_fix(
      f,
      "run the job with an unlimited locked-memory limit (docker run --ulimit memlock=-1:-1; ulimit -l unlimited), and check that the EFA/RDMA devices are passed to the container");
  } else if (no_provider) {
    finding_cause(
      f,
      "aws-ofi-nccl (NET/OFI) found no usable libfabric provider on %s: the EFA (or other RDMA) device is not visible to the process, FI_PROVIDER names a provider that is not there, or the libfabric found first is not the one built for it",
      host);
    finding_fix(
      f,
      "on %s run fi_info -p efa (it must list the devices); pass /dev/infiniband to the container (the EFA device plugin on Kubernetes), put the libfabric that has the provider first on LD_LIBRARY_PATH (/opt/amazon/efa/lib), and unset FI_PROVIDER or set it to a provider fi_info lists",
      host);
  } else {
    finding_cause(
      f, "no confident cause: aws-ofi-nccl (NET/OFI) reported \"%.300s\" on %s%s", first->text,
      host,
      cq_err
        ? "; an operation completing with error is most often a peer that died or a path that dropped"
        : "");
    finding_fix(
      f,
      "explain the logs of every rank together (the first to fail names the cause), rerun with FI_LOG_LEVEL=warn and NCCL_DEBUG_SUBSYS=INIT,NET, and check fi_info -p efa and the EFA counters on %s",
      host);
    finding_export(f, "FI_LOG_LEVEL=warn");
  }
}

/* --- NCCL before 2.21 on RoCE, GID index 0 ------------------------------------- */

bool oldgid_match(const struct rec *r) {
  struct wcerr w;
  return wc_match(r) && wcerr_parse(r->text, &w) && w.status == 12;
}

void oldgid_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *f = NULL;
  for (int i = 0; i < cx->out->n; i++)
    if (!strcmp(cx->out->v[i]->rule, "gid-index")) return; /* the GID the log shows names it */
  for (int i = 0; i < cx->corr->nhosts; i++) {
    const struct corr_host *ch = &cx->corr->hosts[i];
    if (!ch->is_roce || !ch->version[0] || !rules_version_before(ch->version, 2, 21) ||
        corr_env(ch, "NCCL_IB_GID_INDEX"))
      continue;
    const struct rec *first = NULL;
    for (size_t k = 0; k < h->n && !first; k++)
      if (!strcmp(h->v[k]->host, ch->name)) first = h->v[k];
    if (!first) continue;
    if (!f) {
      if (!(f = finding_new(cx->out, "gid-default", CONF_MEDIUM))) return;
      finding_cause(
        f,
        "RDMA writes on %s were never acknowledged (completion status 12, retry exceeded) with NCCL %s on RoCE and no NCCL_IB_GID_INDEX setting in the log: NCCL before 2.21 uses GID index 0 unless told otherwise, which on RoCE is the link-local or RoCE v1 entry that does not route between hosts (inferred from the setting's absence; the log does not print the GID)",
        ch->name, ch->version);
      finding_fix(
        f,
        "set NCCL_IB_GID_INDEX on every node to the RoCE v2 entry with an IPv4 address that show_gids lists (3 on a standard mlx5 table), or upgrade to NCCL 2.21+, which picks it itself");
      finding_export(f, "NCCL_IB_GID_INDEX=3");
      finding_evidence(f, ch->version_rec);
      finding_evidence(f, ch->ib_rec);
    }
    finding_evidence(f, first);
  }
}
