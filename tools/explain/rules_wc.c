/* SPDX-License-Identifier: Apache-2.0 */
/* Completions with error, by status (common/wcstatus.h has what each one
 * means), pointed at the peer when the peer's log shows what happened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/wcstatus.h"
#include "tools/explain/rules.h"

/* 2.4-2.9: "Got completion with error 12, opcode 0, len 0, vendor err 129";
 * 2.12-2.19: "with error 12, opcode 0, len 0, vendor err 129 (Send) localGid X remoteGid Y";
 * 2.20-2.28.3: "with status=12 opcode=0 len=0 vendor err 129 (Send) localGid X remoteGidsY";
 * 2.28.9+: "with status=IBV_WC_RETRY_EXC_ERR(12) opcode=... vendor_err=129 ... hca mlx5_0". */
bool wcerr_parse(const char *text, struct wcerr *w) {
  const char *p = text_after(text, "Got completion from peer ");
  bool has_peer = p != NULL;
  if (!p) p = text_after(text, "Got completion"); /* 2.4-2.9 name no peer */
  if (!p) return false;
  memset(w, 0, sizeof(*w));
  w->status = -1;
  if (has_peer) text_token(p, ",", w->peer, sizeof(w->peer));
  else snprintf(w->peer, sizeof(w->peer), "(not named in this NCCL version's message)");
  long v;
  const char *s = text_after(p, " with error ");
  if (!s) s = text_after(p, " with status=");
  if (!s) return false;
  if (text_long(s, &v)) w->status = (int)v;
  else {
    char name[48];
    text_token(s, "(", name, sizeof(name));
    w->status = wc_status_from_name(name);
    const char *open = text_after(s, "(");
    if (open && text_long(open, &v)) w->status = (int)v;
  }
  const char *e = text_after(p, "vendor err ");
  if (!e) e = text_after(p, "vendor_err=");
  if (!e || !text_long(e, &w->vendor)) w->vendor = -1;
  w->has_lgid = log_gid_parse(text_after(p, "localGid "), &w->lgid);
  const char *rg = text_after(p, "remoteGid");
  if (rg && *rg == 's') rg++;
  while (rg && *rg == ' ') rg++;
  w->has_rgid = rg && log_gid_parse(rg, &w->rgid);
  text_token(text_after(p, " hca "), ",", w->hca, sizeof(w->hca));
  return w->status >= 0;
}

bool wc_match(const struct rec *r) {
  struct wcerr w;
  return !r->is_diag && r->level != REC_TRACE && wcerr_parse(r->text, &w) && w.status != 0;
}

/* The host behind the completion's peer address or remote GID. */
static const struct corr_host *peer_host(const struct corr *c, const struct wcerr *w) {
  char ip[64];
  text_ip_of(w->peer, ip, sizeof(ip));
  const struct corr_host *h = corr_find_addr(c, ip);
  if (!h && w->has_rgid) h = corr_find_gid(c, &w->rgid, NULL);
  return h;
}

/* Both GIDs are this host's own ports (its per-QP lines show them): the
 * pair is two NICs of one node, which the plugin names the same way. */
static bool is_same_host(const struct corr *c, const struct wcerr *w, const struct rec *r) {
  if (!w->has_lgid || !w->has_rgid || !r->host[0]) return false;
  const struct corr_port *lp = NULL, *rp = NULL;
  const struct corr_host *lh = corr_find_gid(c, &w->lgid, &lp);
  const struct corr_host *rh = corr_find_gid(c, &w->rgid, &rp);
  return lh && lh == rh && !strcmp(lh->name, r->host) && lp != rp;
}

static void same_host_pair(const struct explain_ctx *cx, const struct wcerr *w, const struct rec *r,
                           struct finding **out) {
  const struct corr_port *lp = NULL, *rp = NULL;
  corr_find_gid(cx->corr, &w->lgid, &lp);
  corr_find_gid(cx->corr, &w->rgid, &rp);
  struct finding *f = finding_new(cx->out, "completion", CONF_MEDIUM);
  if (!(*out = f)) return;
  char lg[64], rg[64];
  log_gid_text(&w->lgid, lg, sizeof(lg)), log_gid_text(&w->rgid, rg, sizeof(rg));
  finding_cause(
    f,
    "RDMA writes between two NICs of the same host %s (%s, GID %s, and %s, GID %s) were never acknowledged (IBV_WC_RETRY_EXC_ERR, 12): NCCL sent traffic between GPUs of one node over the network, and the kernel of %s must resolve its own other port's address as a neighbour, which arp_ignore, arp_announce or rp_filter on those netdevs often prevent",
    r->host, lp->dev, lg, rp->dev, rg, r->host);
  finding_fix(
    f,
    "set NCCL_NET_DISABLE_INTRA=1 (NCCL 2.12+) to keep traffic between GPUs of one node off the network; to keep it there, check arp_ignore, arp_announce and rp_filter of both netdevs and 'ip neigh' on %s",
    r->host);
  finding_export(f, "NCCL_NET_DISABLE_INTRA=1");
}

/* Status 12: what the GIDs and the peer's own log add. */
static void retry_exceeded(const struct explain_ctx *cx, const struct wcerr *w, const struct rec *r,
                           struct finding **out) {
  const struct wc_status_info *in = wc_status_info(12);
  const struct corr_host *ph = peer_host(cx->corr, w);
  struct finding *f;
  if ((w->has_lgid && log_gid_is_link_local(&w->lgid)) ||
      (w->has_rgid && log_gid_is_link_local(&w->rgid))) {
    if (!(f = finding_new(cx->out, "completion", CONF_MEDIUM))) return;
    finding_cause(
      f,
      "RDMA writes from %s%s%s to peer %s were never acknowledged (IBV_WC_RETRY_EXC_ERR, 12) because the queue pair runs between link-local GIDs, which do not route between hosts",
      w->hca[0] ? w->hca : "its HCA", r->host[0] ? " on " : "", r->host, w->peer);
    finding_fix(
      f,
      "set NCCL_IB_GID_INDEX to the IPv4-mapped RoCE v2 GID on every node (NCCL 2.21+ chooses it with NCCL_IB_GID_INDEX=-1; see the GID finding)");
  } else if (is_same_host(cx->corr, w, r)) {
    same_host_pair(cx, w, r, &f);
    if (!f) return;
  } else if (ph && ph->first_warn && !strstr(ph->first_warn->text, "Got completion")) {
    if (!(f = finding_new(cx->out, "completion", CONF_MEDIUM))) return;
    finding_cause(
      f,
      "RDMA writes to %s (%s) were never acknowledged (IBV_WC_RETRY_EXC_ERR, 12) because %s failed first: \"%.300s\"",
      ph->name, w->peer, ph->name, ph->first_warn->text);
    finding_fix(
      f,
      "fix %s's own error (quoted); the retry-exceeded completions on its peers are its consequence",
      ph->name);
    finding_evidence(f, ph->first_warn);
  } else {
    if (!(f = finding_new(cx->out, "completion", CONF_LOW))) return;
    finding_cause(
      f,
      "no confident cause: RDMA writes from %s%s%s to peer %s were never acknowledged (IBV_WC_RETRY_EXC_ERR, 12, vendor error 0x%lx): %s%s",
      w->hca[0] ? w->hca : "its HCA", r->host[0] ? " on " : "", r->host, w->peer,
      w->vendor < 0 ? 0 : w->vendor, in->cause,
      ph ? "; the peer's log shows no error before this"
         : "; the peer's log is not among these files");
    const struct corr_host *me = corr_find(cx->corr, r->host);
    bool is_ib = me && me->nib && !me->is_roce;
    finding_fix(
      f, "%s%s%s", in->fix,
      ph ? "" : "; collect the peer's log (NCCL_DEBUG=INFO) and explain it with this one",
      is_ib
        ? ""
        : "; on RoCE, when it fails at once, check the GID: NCCL before 2.21 uses GID index 0 unless NCCL_IB_GID_INDEX names the RoCE v2 entry show_gids lists (often 3), and GIDs on subnets without a route between them fail the same way (compare them with ip -br addr: the log shows no netmask)");
  }
  if (ph) finding_host(f, ph->name);
  *out = f;
}

static struct finding *status_finding(const struct explain_ctx *cx, const struct wcerr *w,
                                      const struct rec *r) {
  const struct wc_status_info *in = wc_status_info(w->status);
  struct finding *f = NULL;
  char skew[512];
  if (w->status == 12) {
    retry_exceeded(cx, w, r, &f);
    return f;
  }
  if (!in) {
    if (!(f = finding_new(cx->out, "completion", CONF_LOW))) return NULL;
    finding_cause(f, "no confident cause: a completion with the unknown status %d from peer %s",
                  w->status, w->peer);
    finding_fix(f, "check dmesg and the HCA on %s; run nccl-net-diag doctor", r->host);
    return f;
  }
  bool is_skew = (w->status == 10 || w->status == 13 || w->status == 1) &&
                 rules_version_split(cx->corr, skew, sizeof(skew));
  char note[160];
  snprintf(note, sizeof(note), "it shows as %s completions (status %d) on the RDMA connections",
           in ? in->name + 7 : "error", w->status);
  if (is_skew && rules_consequence(cx, "version-skew", r, note)) return NULL;
  enum confidence conf = is_skew ? CONF_HIGH : in->is_secondary ? CONF_LOW : CONF_MEDIUM;
  if (!(f = finding_new(cx->out, "completion", conf))) return NULL;
  if (is_skew) {
    finding_cause(
      f,
      "%s (%s, %d) from peer %s: the hosts run different NCCL versions (%s), which do not agree on the RDMA protocol",
      in->name + 7, in->what, w->status, w->peer, skew);
    rules_add_version_evidence(cx->corr, f);
  } else if (in->is_secondary) {
    finding_cause(
      f,
      "no confident cause: %s (%s, %d) on %s: %s; no earlier completion error is in these logs%s",
      in->name + 7, in->what, w->status, r->host, in->cause,
      cx->out->n > 1 ? " (see the findings above)" : "");
    finding_fix(f, "%s; collect the peer's log (NCCL_DEBUG=INFO) if it is not among these files",
                in->fix);
    return f;
  } else
    finding_cause(f, "%s (%s, %d) from peer %s on %s: %s", in->name + 7, in->what, w->status,
                  w->peer, r->host, in->cause);
  finding_fix(f, "%s", in->fix);
  if (w->status == 4) finding_export(f, "NCCL_NET_GDR_LEVEL=LOC");
  return f;
}

/* Flushed requests (status 5) are the consequence of the first error: they
 * join the finding of another status when there is one. */
void wc_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *groups[32];
  int statuses[32], ngroups = 0;
  bool has_other = false;
  struct wcerr w;
  for (size_t i = 0; i < h->n; i++) has_other |= wcerr_parse(h->v[i]->text, &w) && w.status != 5;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < h->n; i++) {
      if (!wcerr_parse(h->v[i]->text, &w) || (w.status == 5 && has_other) != (pass == 1)) continue;
      const struct corr_host *peer = peer_host(cx->corr, &w);
      if (async_port_consequence(cx, h->v[i], peer ? peer->name : NULL)) continue;
      int g = 0;
      while (g < ngroups && statuses[g] != w.status && pass == 0) g++;
      if (g == ngroups && ngroups < 32) {
        groups[g] = status_finding(cx, &w, h->v[i]); /* NULL: joined an earlier finding */
        statuses[ngroups++] = w.status;
      }
      if (g >= ngroups) continue;
      if (!groups[g]) {
        rules_consequence(cx, "version-skew", h->v[i], NULL);
        continue;
      }
      finding_evidence(groups[g], h->v[i]);
      const struct corr_host *ph = peer_host(cx->corr, &w);
      if (ph) finding_host(groups[g], ph->name);
    }
}

/* --- MTU ----------------------------------------------------------------- */

/* "1024" or "1024,4096": the MTUs a host's queue pairs used. */
static void host_mtus(const struct corr_host *h, char *buf, size_t cap, const struct rec **ev) {
  int seen[8], n = 0;
  buf[0] = 0, *ev = NULL;
  for (int i = 0; i < h->nports && n < 8; i++) {
    int m = h->ports[i].mtu, k = 0;
    if (!m) continue;
    while (k < n && seen[k] != m) k++;
    if (k == n) seen[n++] = m, *ev = *ev ? *ev : h->ports[i].rec;
  }
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (seen[j] < seen[i]) {
        int t = seen[i];
        seen[i] = seen[j], seen[j] = t;
      }
  for (int i = 0; i < n; i++) {
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, "%s%d", i ? "," : "", seen[i]);
  }
}

static bool has_symptom(const struct logset *ls) {
  for (size_t i = 0; i < ls->nrecs; i++) {
    const char *t = ls->recs[i].text;
    if (ls->recs[i].level == REC_WARN &&
        (strstr(t, "local access violation") || strstr(t, "Got completion from peer")))
      return true;
  }
  return false;
}

void mtu_build(const struct explain_ctx *cx, const struct hits *h) {
  (void)h;
  const struct corr *c = cx->corr;
  if (c->nhosts < 2) return;
  char(*vals)[64] = calloc((size_t)c->nhosts, sizeof(*vals));
  const char **values = calloc((size_t)c->nhosts, sizeof(*values));
  const struct rec **ev = calloc((size_t)c->nhosts, sizeof(*ev));
  bool *is_odd = calloc((size_t)c->nhosts, sizeof(*is_odd));
  char split[1024];
  if (vals && values && ev && is_odd) {
    for (int i = 0; i < c->nhosts; i++) {
      host_mtus(&c->hosts[i], vals[i], sizeof(vals[i]), &ev[i]);
      values[i] = vals[i][0] ? vals[i] : NULL;
    }
    struct finding *f;
    if (corr_split(c, values, is_odd, split, sizeof(split)) > 1 &&
        (f = finding_new(cx->out, "mtu-mismatch", has_symptom(cx->ls) ? CONF_HIGH : CONF_MEDIUM))) {
      finding_cause(
        f,
        "the RDMA ports' MTUs differ between hosts (bytes: %s): NCCL 2.20 and later take the path MTU from one side only, so queue pairs between ports of different MTUs fail with work-queue or completion errors",
        split);
      finding_fix(
        f,
        "give every RDMA port the same MTU: for RoCE the netdev MTU on every node and switch port (ip link set dev <netdev> mtu 9000; RoCE then uses 4096), for InfiniBand the partition MTU in the subnet manager");
      for (int i = 0; i < c->nhosts; i++) finding_evidence(f, ev[i]);
    }
  }
  free(vals), free(values), free(ev), free(is_odd);
}
