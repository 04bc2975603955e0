/* SPDX-License-Identifier: Apache-2.0 */
/* Silent fallbacks and device sets: NCCL's core logs these at INFO only,
 * so a job runs, slower, and nobody is told. GPU Direct RDMA off on every
 * HCA (no peer memory); NET/IB finding no device and the Socket transport
 * taking over while RDMA was expected; hosts that list different NICs. */
#include <stdlib.h>
#include <string.h>

#include "tools/explain/rules.h"

/* "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'" (not the per-GPU
 * "(distance 5 > 4)" topology line, and not the Socket transport's). */
bool gdr_match(const struct rec *r) {
  const char *t = r->text;
  return !strncmp(t, "NET/IB : GPU Direct RDMA ", 25) && strstr(t, " for HCA ") &&
         !strstr(t, "(distance");
}

void gdr_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *f = NULL;
  char ok[256] = "";
  for (int i = 0; i < cx->corr->nhosts; i++) {
    const struct corr_host *ch = &cx->corr->hosts[i];
    long off = 0, on = 0;
    for (size_t k = 0; k < h->n; k++) {
      if (strcmp(h->v[k]->host, ch->name)) continue;
      if (strstr(h->v[k]->text, "Disabled")) off++;
      else on++;
    }
    if (on && strlen(ok) < 200)
      snprintf(ok + strlen(ok), sizeof(ok) - strlen(ok), "%s%s", ok[0] ? ", " : "", ch->name);
    if (!off || on) continue;
    if (!f && !(f = finding_new(cx->out, "gdr-disabled", CONF_HIGH))) return;
    for (size_t k = 0; k < h->n; k++)
      if (!strcmp(h->v[k]->host, ch->name)) finding_evidence(f, h->v[k]);
  }
  if (!f) return;
  char hosts[512] = "";
  for (int i = 0; i < f->nhosts; i++)
    snprintf(hosts + strlen(hosts), sizeof(hosts) - strlen(hosts), "%s%s", i ? ", " : "",
             f->hosts[i]);
  finding_cause(
    f,
    "GPU Direct RDMA is disabled on every HCA of %s%s: no peer-memory module (nvidia_peermem) is loaded and DMA-BUF is not available, so every transfer is staged through host memory%s%s",
    hosts, f->nhosts_more ? " and more" : "", ok[0] ? " (it is enabled on " : "", ok[0] ? ok : "");
  if (ok[0]) snprintf(f->cause + strlen(f->cause), sizeof(f->cause) - strlen(f->cause), ")");
  finding_fix(
    f,
    "load the peer-memory module on those hosts as root: modprobe nvidia_peermem (nv_peer_mem on old MLNX_OFED stacks), or use DMA-BUF (Linux 5.12+ with NCCL 2.13+ and an open GPU kernel module)");
}

bool ibfallback_match(const struct rec *r) {
  const char *t = r->text;
  return strstr(t, "NET/IB : No device found") || strstr(t, "NET/IB : Unable to open device") ||
         strstr(t, "Failed to open libibverbs");
}

enum fb_kind { FB_NONE = -1, FB_NO_DEVFILES, FB_NO_VERBS, FB_HCA_FILTER, FB_PORTS, FB_COUNT };

static bool uses_ib(const struct corr_host *h) { return h->ib_rec || !strcmp(h->network, "IB"); }

static const struct rec *host_hit(const struct hits *h, const char *host, const char *needle) {
  for (size_t k = 0; k < h->n; k++)
    if (!strcmp(h->v[k]->host, host) && strstr(h->v[k]->text, needle)) return h->v[k];
  return NULL;
}

static int classify(const struct corr *c, const struct corr_host *ch, const struct hits *h) {
  const char *off = corr_env(ch, "NCCL_IB_DISABLE");
  if ((off && !strcmp(off, "1")) || uses_ib(ch)) return FB_NONE;
  bool other_ib = false;
  for (int i = 0; i < c->nhosts; i++) other_ib |= uses_ib(&c->hosts[i]);
  if (host_hit(h, ch->name, "Unable to open device")) return FB_NO_DEVFILES;
  if (host_hit(h, ch->name, "libibverbs") && (other_ib || corr_env(ch, "NCCL_IB_HCA")))
    return FB_NO_VERBS;
  if (!ch->ib_none_rec) return FB_NONE;
  if (corr_env(ch, "NCCL_IB_HCA")) return FB_HCA_FILTER;
  return other_ib ? FB_PORTS : FB_NONE;
}

static void fallback_text(struct finding *f, enum fb_kind k, const struct corr_host *ch,
                          const char *others) {
  const char *hca = corr_env(ch, "NCCL_IB_HCA");
  switch (k) {
  case FB_NO_DEVFILES:
    finding_cause(
      f,
      "NCCL on %s could not open its RDMA devices (ibv_open_device failed) and fell back to TCP sockets: the container has no /dev/infiniband/uverbs* device files",
      ch->name);
    finding_fix(
      f,
      "pass the RDMA devices into the container (docker run --device=/dev/infiniband, or --privileged; on Kubernetes an RDMA device plugin) and lift the locked-memory limit (--ulimit memlock=-1)");
    break;
  case FB_NO_VERBS:
    finding_cause(
      f,
      "libibverbs is missing on %s, so NCCL's IB transport could not start and the job runs over TCP sockets%s%s",
      ch->name, others[0] ? " while RDMA works on " : "", others);
    finding_fix(
      f,
      "install rdma-core's verbs library and providers in the image (Debian/Ubuntu: libibverbs1 ibverbs-providers; RHEL: libibverbs)");
    break;
  case FB_HCA_FILTER:
    finding_cause(
      f,
      "NCCL_IB_HCA=%s on %s matches no active RDMA port, so NCCL found no IB device and fell back to TCP sockets",
      hca ? hca : "", ch->name);
    finding_fix(
      f,
      "list the ports with ibstat or nccl-net-diag doctor on %s and set NCCL_IB_HCA to ports that exist and are ACTIVE (a leading '=' matches exact names, '^' excludes)",
      ch->name);
    break;
  default:
    finding_cause(
      f,
      "%s found no usable RDMA port (NET/IB : No device found) and runs over TCP sockets while %s use RDMA: a port that is not ACTIVE (cable, no subnet manager) or a driver that is not loaded",
      ch->name, others[0] ? others : "the other hosts");
    finding_fix(
      f,
      "on %s check ibstat (State: Active) and nccl-net-diag doctor; set NCCL_NET=IB on every node to make such a fallback an error instead of a slowdown",
      ch->name);
  }
}

/* NCCL warns that libibverbs is missing on every host without RDMA: with
 * no sign of an RDMA device anywhere in the logs that is harmless, and a
 * hang or error elsewhere has another cause. A WARN still gets a finding. */
static void verbs_missing_alone(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *f = NULL;
  for (size_t n = 0; n < h->n; n++) {
    if (!strstr(h->v[n]->text, "libibverbs") || h->v[n]->level != REC_WARN) continue;
    if (!f && !(f = finding_new(cx->out, "ib-fallback", CONF_LOW))) return;
    finding_evidence(f, h->v[n]);
  }
  if (!f) return;
  finding_cause(
    f,
    "no confident cause: NCCL could not load libibverbs, so it uses TCP sockets; that is harmless on hosts without an RDMA NIC (nothing in these logs shows one), and any hang or error of the job has another cause");
  finding_fix(
    f,
    "if the hosts have InfiniBand or RoCE NICs, install rdma-core's verbs library and providers in the image (libibverbs1 ibverbs-providers); otherwise ignore this warning and look for the first rank that failed");
}

void ibfallback_build(const struct explain_ctx *cx, const struct hits *h) {
  const struct corr *c = cx->corr;
  struct finding *groups[FB_COUNT] = {0};
  char others[256] = "";
  for (int i = 0; i < c->nhosts && strlen(others) < 200; i++)
    if (uses_ib(&c->hosts[i]))
      snprintf(others + strlen(others), sizeof(others) - strlen(others), "%s%s",
               others[0] ? ", " : "", c->hosts[i].name);
  for (int i = 0; i < c->nhosts; i++) {
    const struct corr_host *ch = &c->hosts[i];
    int k = classify(c, ch, h);
    if (k < 0) continue;
    if (!groups[k]) {
      enum confidence conf = k == FB_PORTS ? CONF_MEDIUM : CONF_HIGH;
      if (!(groups[k] = finding_new(cx->out, "ib-fallback", conf))) return;
      fallback_text(groups[k], (enum fb_kind)k, ch, others);
    }
    for (size_t n = 0; n < h->n; n++)
      if (!strcmp(h->v[n]->host, ch->name)) finding_evidence(groups[k], h->v[n]);
    finding_evidence(groups[k], ch->network_rec ? ch->network_rec : ch->sock_rec);
  }
  if (!groups[FB_NO_VERBS]) verbs_missing_alone(cx, h);
}

/* --- device sets --------------------------------------------------------- */

/* Devices of `of` that `in` lacks, as "a, b". */
static void missing(const char *of, const char *in, char *buf, size_t cap) {
  char tok[64];
  buf[0] = 0;
  for (const char *p = of; *p;) {
    size_t n = text_token(p, "", tok, sizeof(tok));
    if (!n) break;
    bool found = false;
    for (const char *q = in; !found && (q = strstr(q, tok)); q++)
      found = (q == in || q[-1] == ' ') && (q[n] == ' ' || !q[n]);
    if (!found && strlen(buf) + n + 3 < cap)
      snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? ", " : "", tok);
    p += n;
    while (*p == ' ') p++;
  }
}

void devset_build(const struct explain_ctx *cx, const struct hits *h) {
  (void)h;
  const struct corr *c = cx->corr;
  const char **values = calloc((size_t)c->nhosts + 1, sizeof(*values));
  bool *is_odd = calloc((size_t)c->nhosts + 1, sizeof(*is_odd));
  char split[1024], text[1024] = "", lack[256], extra[256];
  struct finding *f = NULL;
  int major = -1;
  for (int i = 0; values && i < c->nhosts; i++)
    values[i] = c->hosts[i].nib ? c->hosts[i].ib_list : NULL;
  if (!values || !is_odd || corr_split(c, values, is_odd, split, sizeof(split)) < 2) goto out;
  if (!(f = finding_new(cx->out, "device-set", CONF_MEDIUM))) goto out;
  bool has_odd = false; /* else no strict majority: name every set */
  for (int i = 0; i < c->nhosts; i++) has_odd |= is_odd[i];
  for (int i = 0; has_odd && i < c->nhosts && major < 0; i++)
    if (values[i] && !is_odd[i]) major = i;
  for (int i = 0; i < c->nhosts && major >= 0; i++) {
    if (!is_odd[i] || strlen(text) > 700) continue;
    missing(values[major], values[i], lack, sizeof(lack));
    missing(values[i], values[major], extra, sizeof(extra));
    snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s%s lists %d RDMA devices%s%s%s%s",
             text[0] ? "; " : "", c->hosts[i].name, c->hosts[i].nib, lack[0] ? ", without " : "",
             lack, extra[0] ? ", with " : "", extra);
  }
  if (major >= 0)
    finding_cause(
      f,
      "the hosts give NCCL different RDMA devices: %s, where %s and the others like it list %d (%s): a port that is down or missing, or NCCL_IB_HCA set differently",
      text, c->hosts[major].name, c->hosts[major].nib, values[major]);
  else
    finding_cause(
      f,
      "the hosts give NCCL different RDMA devices (%s): a port that is down or missing, or NCCL_IB_HCA set differently",
      split);
  finding_fix(
    f,
    "compare ibstat on those hosts and bring the missing ports up, or set the same NCCL_IB_HCA on every node; NCCL pairs NIC i of one host with NIC i of another, so the lists must match");
  for (int i = 0; i < c->nhosts; i++)
    if (values[i] && (major < 0 || is_odd[i] || i == major))
      finding_evidence(f, c->hosts[i].ib_rec);
out:
  free(values), free(is_odd);
}
