/* SPDX-License-Identifier: Apache-2.0 */
/* The rule table and the engine that runs it. */
#include "tools/explain/rules.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const struct rule explain_rules[] = {
  /* what the plugin itself already diagnosed: a port that went down first
   * (the stalls and failures after it are often its consequence: a rank
   * whose connection failed stops posting, and its peers then wait on it),
   * then a hang's wait-for graph */
  {"port-flap",
   "an RDMA port that went down while the job ran: its own process's lines and the connection "
   "failures it caused on every rank, as one finding",
   flap_match, flap_build, "any NCCL (this plugin's own lines)"},
  {"wait-for", "the plugin's stall lines of many ranks: whom each waits on, followed to the root",
   waitfor_match, waitfor_build, "any NCCL (this plugin's own lines)"},
  {"slow-link", "the plugin's slow-link lines: a path well below its siblings, with its counters",
   slow_match, slow_build, "any NCCL (this plugin's own lines)"},
  {"port-failover",
   "a port that failed while the job ran, and the connections port fail-over moved off it (or "
   "could not)",
   failover_match, failover_build, "NCCL 2.29-2.30; any NCCL (this plugin's own lines)"},
  {"plugin-diagnosis", "a NET/diag WARN of this plugin (it names cause and fix itself)", diag_match,
   diag_build, "any NCCL (this plugin's own lines)"},
  {"repaired-pair",
   "a connection this plugin kept on RDMA over another GID pair (or, with NCCL_DIAG_REPAIR=warn, "
   "fell back although one reaches): a setting still wrong on a host",
   repair_match, repair_build, "any NCCL (this plugin's own lines)"},
  /* hosts that differ from the rest: often the root of the errors below */
  {"version-skew", "different \"NCCL version\" lines across hosts", NULL, version_build,
   "NCCL 2.4-2.30"},
  {"plugin-skew", "different NET/Plugin outcomes across hosts", NULL, plugin_build,
   "NCCL 2.12-2.30"},
  {"net-plugin-missing",
   "a net plugin asked for and not found (Failed to initialize any NET plugin, or the job ran on without it)",
   netplug_match, netplug_build, "NCCL 2.4-2.30; Failed to initialize any NET plugin 2.27+"},
  {"settings-skew", "NCCL settings that must agree, set differently across hosts", NULL,
   settings_build, "NCCL 2.12-2.30"},
  /* the host or container around NCCL */
  {"shm",
   "/dev/shm too small or not shared (shared memory segment errors, No space left on device)",
   shm_match, shm_build, "NCCL 2.4-2.30"},
  {"memlock", "memory registration failing with ENOMEM (the locked-memory limit)", memlock_match,
   memlock_build, "NCCL 2.4-2.30"},
  {"invalid-rank", "Invalid rank requested r/n (world size smaller than the ranks launched)",
   rank_match, rank_build, "NCCL 2.4-2.30"},
  {"cuda",
   "GPU-side failures read as network ones: Duplicate GPU, CUDA 802 (fabric manager), NVLS set-up, out of memory, invalid device ordinal, old driver",
   cuda_match, cuda_build, "NCCL 2.4-2.30"},
  {"transport-mismatch", "wrong type 4 != 3: one node on IB, the other on sockets", wrongtype_match,
   wrongtype_build, "NCCL 2.16-2.30"},
  {"resources", "file descriptors exhausted, EAGAIN on accept", resource_match, resource_build,
   "NCCL 2.12-2.30"},
  {"socket-create", "Socket creation failed (file descriptors, address family, a security profile)",
   sockcreate_match, sockcreate_build, "NCCL 2.4-2.30"},
  {"ifname", "NCCL_SOCKET_IFNAME naming no interface on a host (no socket interface found)",
   ifname_match, ifname_build, "NCCL 2.4-2.30"},
  {"addr-family", "connecting to an address of family N (neither AF_INET nor AF_INET6)",
   family_match, family_build, "NCCL 2.8-2.30"},
  {"bootstrap-iface", "bootstrap on loopback, link-local, docker, veth or link-local-only ib*",
   NULL, bootif_build, "NCCL 2.4-2.30"},
  {"ofi", "aws-ofi-nccl (NET/OFI) and libfabric errors", ofi_match, ofi_build,
   "aws-ofi-nccl, any NCCL"},
  {"ib-fallback", "NET/IB found no device and NCCL fell back to sockets", ibfallback_match,
   ibfallback_build, "NCCL 2.4-2.30"},
  {"gid-index", "a link-local or RoCE v1 GID chosen or forced", gid_match, gid_build,
   "NCCL 2.12-2.30"},
  {"gid-default", "completion error 12 on RoCE before NCCL 2.21 with no NCCL_IB_GID_INDEX set",
   oldgid_match, oldgid_build, "NCCL 2.4-2.20"},
  {"rtr", "ibv_modify_qp failing (ETIMEDOUT, ENETUNREACH, ENODEV, EINVAL, ENODATA)", rtr_match,
   rtr_build, "NCCL 2.12-2.30"},
  {"mtu-mismatch", "ports of different MTUs on the two sides", NULL, mtu_build, "NCCL 2.21-2.30"},
  {"async-event", "port errors and fatal async events", async_match, async_build, "NCCL 2.4-2.30"},
  {"completion", "completions with error (status 12, 5, 4, 10, 13, ...)", wc_match, wc_build,
   "NCCL 2.4-2.30"},
  {"device-set", "different RDMA device sets across hosts", NULL, devset_build, "NCCL 2.4-2.30"},
  {"network-skew", "different \"Using network\" lines across hosts with no error that says why",
   NULL, network_build, "NCCL 2.4-2.30"},
  {"gdr-disabled", "GPU Direct RDMA disabled on every HCA (no peer memory)", gdr_match, gdr_build,
   "NCCL 2.12-2.30"},
  {"truncated", "message truncated: receiving N bytes instead of M", truncated_match,
   truncated_build, "NCCL 2.4-2.30"},
  {"connect", "connect refused, timed out, unreachable or aborted", connect_match, connect_build,
   "NCCL 2.4-2.30"},
  {"closed-by-peer", "connection closed by the remote peer (the peer failed first)", closed_match,
   closed_build, "NCCL 2.4-2.30"},
  {"ras", "NCCL's RAS report (ncclras): dead processes, ranks with no data, errors, ranks behind",
   ras_match, ras_build, "NCCL 2.24-2.30 (ncclras)"},
  {"flight-recorder",
   "PyTorch's flight recorder analyzer: a rank that never joined, a collective that differs",
   frtrace_match, frtrace_build, "any NCCL (PyTorch 2.5+ fr_trace)"},
  {"rank-behind",
   "PyTorch's dump signal lines: a rank whose last enqueued collective is behind the others'",
   behind_match, behind_build, "any NCCL (PyTorch 2.4+)"},
  {"watchdog-timeout", "a PyTorch watchdog timeout with no NCCL error (a hang)", watchdog_match,
   watchdog_build, "any NCCL (PyTorch's message)"},
  {"nccl-tests", "nccl-tests results with wrong values (Out of bounds values FAILED, #wrong > 0)",
   nccltests_match, nccltests_build, "nccl-tests 2.0-2.17"},
  {"unexplained-warn", "NCCL WARN lines and NCCL errors no rule explains", unknown_match,
   unknown_build, "NCCL 2.4-2.30"},
  /* the launcher's view, after NCCL's own: which worker failed first, and how */
  {"launcher",
   "the launcher's report of a failed worker: torchrun (exitcode, signal), Slurm (OOM kill, time limit, failed task), Open MPI (exited on signal), Ray (actor died), a crash in libnccl",
   launch_match, launch_build, "torchrun 1.9+, Slurm, Open MPI 4-5, Ray 2"},
};

const size_t explain_nrules = sizeof(explain_rules) / sizeof(explain_rules[0]);

const struct rule *explain_rule(const char *id) {
  for (size_t i = 0; i < explain_nrules; i++)
    if (!strcmp(explain_rules[i].id, id)) return &explain_rules[i];
  return NULL;
}

static int hits_add(struct hits *h, const struct rec *r) {
  if (h->n == h->cap) {
    size_t cap = h->cap ? 2 * h->cap : 16;
    const struct rec **v = realloc(h->v, cap * sizeof(*v));
    if (!v) return ENOMEM;
    h->v = v, h->cap = cap;
  }
  h->v[h->n++] = r;
  return 0;
}

bool explain_rec_known(const struct rec *r) {
  if (r->has_prefix || r->level != REC_TEXT) return true;
  for (size_t k = 0; k < explain_nrules; k++)
    if (explain_rules[k].match && explain_rules[k].match(r)) return true;
  return nccltests_relevant(r->text) || frtrace_relevant(r->text) || ras_relevant(r->text);
}

int explain_analyse(const struct logset *ls, struct corr *c, struct findings *fs) {
  memset(fs, 0, sizeof(*fs));
  int err = corr_build(ls, c);
  fs->cover_of = calloc(ls->nrecs + 1, sizeof(*fs->cover_of));
  fs->ncover_of = fs->cover_of ? ls->nrecs : 0;
  if (!fs->cover_of) err = ENOMEM;
  struct hits *hits = calloc(explain_nrules, sizeof(*hits));
  if (!hits) err = ENOMEM;
  for (size_t i = 0; !err && i < ls->nrecs; i++)
    for (size_t k = 0; !err && k < explain_nrules; k++)
      if (explain_rules[k].match && explain_rules[k].match(&ls->recs[i]))
        err = hits_add(&hits[k], &ls->recs[i]);
  struct explain_ctx cx = {ls, c, fs};
  for (size_t k = 0; !err && k < explain_nrules; k++) {
    if (explain_rules[k].match && !hits[k].n) continue;
    int before = fs->n;
    explain_rules[k].build(&cx, &hits[k]);
    for (int i = before; i < fs->n; i++) fs->v[i]->order = (int)k;
  }
  for (int i = 0; i < fs->n; i++) { /* rules also append to a cause directly */
    finding_strip_controls(fs->v[i]->cause);
    finding_strip_controls(fs->v[i]->fix);
  }
  for (size_t k = 0; hits && k < explain_nrules; k++) free(hits[k].v);
  free(hits);
  if (!err) findings_sort(fs);
  return err;
}
