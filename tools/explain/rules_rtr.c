/* SPDX-License-Identifier: Apache-2.0 */
/* ibv_modify_qp failures. What the Linux kernel (6.1, measured with
 * soft-RoCE) answers at INIT->RTR on RoCE v2: it resolves the remote GID's
 * MAC with a route lookup bound to the local GID's netdev; a lookup that
 * finds no route assumes the peer is on-link and sends ARP, so an
 * unreachable or foreign-subnet GID gives ETIMEDOUT after about 1 s.
 * ENETUNREACH came only when that netdev was down, ENODATA when the local
 * GID entry was removed, EINVAL for an all-zero remote GID. The rule says
 * that, and compares the two GIDs' subnets to tell a cross-rail pairing
 * (this host has another port on the remote subnet) from a cross-subnet
 * one and from a link-local GID. */
#include <errno.h>
#include <string.h>

#include "tools/explain/rules.h"

bool mqp_parse(const char *text, struct mqp *m) {
  const char *p = text_after(text, "Call to ibv_modify_qp failed with ");
  if (!p) return false;
  memset(m, 0, sizeof(*m));
  m->port = -1, m->gid_index = -1;
  long v;
  if (text_long(p, &v)) m->err = (int)v; /* 2.24+: "110 Connection timed out, ..." */
  else if (!strncmp(p, "error ", 6)) {
    m->err = text_errno(p + 6);
    const char *e = text_after(p, " errno ");
    if (e && text_long(e, &v)) m->err = (int)v;
  }
  m->is_retry = strstr(p, ", retrying ") != NULL;
  const char *d = text_after(p, "on dev ");
  if (d) {
    text_token(d, ",", m->dev, sizeof(m->dev));
    char *colon = strchr(m->dev, ':');
    if (colon && text_long(colon + 1, &v)) m->port = (int)v;
    if (colon) *colon = 0;
  }
  text_token(text_after(p, "curr state "), ",", m->cur, sizeof(m->cur));
  text_token(text_after(p, "next state "), ",", m->next, sizeof(m->next));
  if ((d = text_after(p, "local GID index ")) && text_long(d, &v)) m->gid_index = (int)v;
  m->has_lgid = log_gid_after(p, "local GID ", &m->lgid);
  m->has_rgid = log_gid_after(p, "remote GID ", &m->rgid);
  return true;
}

bool rtr_match(const struct rec *r) {
  struct mqp m;
  return !r->is_diag && mqp_parse(r->text, &m);
}

enum rtr_kind { RK_PLAIN, RK_REMOTE_LL, RK_REMOTE_ZERO, RK_SAME, RK_RAIL, RK_SUBNET };

/* What one failure says, in words the finding reuses. */
struct rtr_case {
  struct mqp m;
  enum rtr_kind kind;
  const struct rec *r;
  char where[160];   /* "mlx5_4 port 1 on node-a (GID 3 ::ffff:10.1.4.5, 10.1.4.0/24)" */
  char remote[200];  /* "::ffff:10.0.0.7 (10.0.0.0/24, mlx5_bond_0 on node-b)" */
  char rail_dev[32]; /* this host's port on the remote subnet */
  char rsub[64], lsub[64], rip[64];
  const char *rhost;
  char rdev[32];
  int rgid_index; /* -1: unknown */
};

static void describe(const struct explain_ctx *cx, struct rtr_case *c) {
  char g[64];
  const struct mqp *m = &c->m;
  c->lsub[0] = c->rsub[0] = c->rip[0] = c->rdev[0] = 0;
  char port[16] = "";
  if (m->port >= 0) snprintf(port, sizeof(port), " port %d", m->port);
  int n = snprintf(c->where, sizeof(c->where), "%s%s on %s", m->dev[0] ? m->dev : "its RDMA device",
                   port, c->r->host[0] ? c->r->host : "this host");
  if (m->has_lgid && log_gid_is_zero(&m->lgid))
    snprintf(c->where + n, sizeof(c->where) - (size_t)n, " (GID index %d, an empty entry)",
             m->gid_index);
  else if (m->has_lgid) {
    log_gid_text(&m->lgid, g, sizeof(g));
    log_gid_subnet(&m->lgid, c->lsub, sizeof(c->lsub));
    snprintf(c->where + n, sizeof(c->where) - (size_t)n, " (GID %d %s, %s)", m->gid_index, g,
             c->lsub);
  }
  c->rhost = NULL;
  if (!m->has_rgid) {
    snprintf(c->remote, sizeof(c->remote), "its peer");
    return;
  }
  const struct corr_port *rp = NULL;
  const struct corr_host *rh = corr_find_gid(cx->corr, &m->rgid, &rp);
  log_gid_text(&m->rgid, g, sizeof(g));
  log_gid_subnet(&m->rgid, c->rsub, sizeof(c->rsub));
  log_gid_v4(&m->rgid, c->rip, sizeof(c->rip));
  c->rgid_index = rh ? rp->gid_index : -1;
  if (rh) c->rhost = rh->name, snprintf(c->rdev, sizeof(c->rdev), "%s", rp->dev);
  snprintf(c->remote, sizeof(c->remote), "remote GID %s (%s%s%s%s%s)", g, c->rsub, rh ? ", " : "",
           rh ? rp->dev : "", rh ? " on " : "", rh ? rh->name : "");
}

static void classify(const struct explain_ctx *cx, struct rtr_case *c) {
  const struct mqp *m = &c->m;
  c->kind = RK_PLAIN, c->rail_dev[0] = 0;
  if (!m->has_rgid) return;
  if (log_gid_is_zero(&m->rgid)) c->kind = RK_REMOTE_ZERO;
  else if (log_gid_is_link_local(&m->rgid)) c->kind = RK_REMOTE_LL;
  if (c->kind != RK_PLAIN || !m->has_lgid || log_gid_is_zero(&m->lgid)) return;
  if (log_gid_same_subnet(&m->lgid, &m->rgid)) {
    c->kind = RK_SAME;
    return;
  }
  c->kind = RK_SUBNET;
  const struct corr_host *h = corr_find(cx->corr, c->r->host);
  for (int i = 0; h && i < h->nports; i++) {
    const struct corr_port *p = &h->ports[i];
    if (p->has_gid && strcmp(p->dev, m->dev) && log_gid_same_subnet(&p->gid, &m->rgid)) {
      snprintf(c->rail_dev, sizeof(c->rail_dev), "%s", p->dev);
      c->kind = RK_RAIL;
      return;
    }
  }
}

static const char *transition(const struct mqp *m, char *buf, size_t cap) {
  if (m->cur[0] && m->next[0]) snprintf(buf, cap, "%s->%s", m->cur, m->next);
  else snprintf(buf, cap, "ibv_modify_qp (this NCCL version does not print the transition)");
  return buf;
}

static void confirm_hint(struct finding *f, const struct rtr_case *c) {
  size_t n = strlen(f->fix);
  char ridx[16] = "<GID index>";
  if (!c->rip[0] || !c->m.dev[0]) return;
  if (c->rgid_index >= 0) snprintf(ridx, sizeof(ridx), "%d", c->rgid_index);
  snprintf(
    f->fix + n, sizeof(f->fix) - n,
    "; confirm the path: ib_write_bw -d %s -x %s on %s, then ib_write_bw -d %s -x %d %s on %s",
    c->rdev[0] ? c->rdev : "<its device>", ridx, c->rhost ? c->rhost : c->rip, c->m.dev,
    c->m.gid_index, c->rip, c->r->host[0] ? c->r->host : "this host");
}

/* Versions before 2.24 print no GIDs when a modify fails, but their per-QP
 * lines do: a port of this host and the same device of another host on
 * different subnets is the pair to name. */
static struct finding *pair_from_qp_lines(const struct explain_ctx *cx, const struct rtr_case *c,
                                          const char *tr) {
  const struct corr_host *h = corr_find(cx->corr, c->r->host);
  for (int i = 0; h && i < h->nports; i++) {
    const struct corr_port *p = &h->ports[i];
    if (!p->has_gid || (c->m.dev[0] && strcmp(p->dev, c->m.dev))) continue;
    for (int k = 0; k < cx->corr->nhosts; k++) {
      const struct corr_host *o = &cx->corr->hosts[k];
      for (int j = 0; o != h && j < o->nports; j++) {
        const struct corr_port *q = &o->ports[j];
        if (!q->has_gid || strcmp(q->dev, p->dev) || log_gid_same_subnet(&p->gid, &q->gid))
          continue;
        char ls[64], rs[64];
        log_gid_subnet(&p->gid, ls, sizeof(ls)), log_gid_subnet(&q->gid, rs, sizeof(rs));
        struct finding *f = finding_new(cx->out, "rtr", CONF_MEDIUM);
        if (!f) return NULL;
        finding_cause(
          f,
          "%s timed out (ETIMEDOUT) on %s; this NCCL version prints no GIDs, but its per-QP lines show %s of %s on %s and %s of %s on %s: different subnets (read as /24 or /64: the log shows no netmask), which the kernel could not resolve from one to the other within about 1 s",
          tr, c->r->host, p->dev, h->name, ls, q->dev, o->name, rs);
        finding_fix(
          f,
          "use RDMA ports of one plane on every node (NCCL_IB_HCA), or route between %s and %s; confirm with ib_write_bw -d %s -x %d on %s and ib_write_bw -d %s -x %d <its address> on %s",
          ls, rs, q->dev, q->gid_index, o->name, p->dev, p->gid_index, h->name);
        finding_evidence(f, p->rec);
        finding_evidence(f, q->rec);
        return f;
      }
    }
  }
  return NULL;
}

static struct finding *timedout(const struct explain_ctx *cx, const struct rtr_case *c) {
  struct finding *f;
  char tr[96];
  transition(&c->m, tr, sizeof(tr));
  switch (c->kind) {
  case RK_RAIL:
    if (!(f = finding_new(cx->out, "rtr", CONF_HIGH))) return NULL;
    finding_cause(
      f,
      "%s timed out (ETIMEDOUT) from %s to %s: %s reaches %s through %s, not through %s, so NCCL paired NICs of different rails that are not connected to each other (subnets read as /24 or /64: the log shows no netmask; ip -br addr on both hosts confirms)",
      tr, c->where, c->remote, c->r->host, c->rsub, c->rail_dev, c->m.dev);
    finding_fix(
      f,
      "keep every connection on its own rail with NCCL_CROSS_NIC=0 on every node; if %s is not meant for GPU traffic (a storage or management plane), exclude it on every node with NCCL_IB_HCA=^%s",
      c->rdev[0] ? c->rdev : c->rail_dev, c->rdev[0] ? c->rdev : c->rail_dev);
    finding_export(f, "NCCL_CROSS_NIC=0");
    return f;
  case RK_SUBNET:
    if (!(f = finding_new(cx->out, "rtr", CONF_MEDIUM))) return NULL;
    finding_cause(
      f,
      "%s timed out (ETIMEDOUT) from %s to %s: the two GIDs sit on different subnets (read as /24 or /64: the log shows no netmask) and the kernel could not resolve the remote one from %s's netdev within about 1 s (no route, or no L2 path that answers ARP)",
      tr, c->where, c->remote, c->m.dev);
    finding_fix(
      f, "use RDMA ports of one plane on every node (NCCL_IB_HCA), or route between %s and %s",
      c->lsub, c->rsub);
    confirm_hint(f, c);
    return f;
  case RK_SAME:
    if (!(f = finding_new(cx->out, "rtr", CONF_LOW))) return NULL;
    finding_cause(
      f,
      "no confident cause: %s timed out (ETIMEDOUT) from %s to %s although both GIDs are on %s (read as /24 or /64: the log shows no netmask): the peer's address did not answer ARP from %s's netdev within about 1 s (its port down, ARP filtered by rp_filter or arp_ignore, or the ports on different L2 segments or VLANs)",
      tr, c->where, c->remote, c->lsub, c->m.dev);
    finding_fix(
      f,
      "on %s: ip neigh show %s and ping the peer's address from the netdev of %s; run show_gids and nccl-net-diag doctor on both hosts",
      c->r->host, c->rip, c->m.dev);
    confirm_hint(f, c);
    return f;
  default:
    if ((f = pair_from_qp_lines(cx, c, tr))) return f;
    if (!(f = finding_new(cx->out, "rtr", CONF_LOW))) return NULL;
    finding_cause(
      f,
      "no confident cause: %s timed out (ETIMEDOUT) on %s; this NCCL version does not print the two GIDs. On RoCE the kernel gives ETIMEDOUT when it cannot resolve the remote GID from the local GID's netdev within about 1 s (another subnet without a path, a peer port down, ARP filtered)",
      tr, c->where);
    finding_fix(
      f,
      "run nccl-net-diag doctor and show_gids on both hosts and compare the subnets of the GIDs NCCL uses; then ib_write_bw -d <dev> -x <GID index> between the two hosts; with NCCL 2.24+ the message names both GIDs");
    return f;
  }
}

static void add_gid_index_fix(struct finding *f, const struct corr_host *h) {
  const char *forced = corr_env(h, "NCCL_IB_GID_INDEX");
  size_t n = strlen(f->fix);
  if (forced)
    snprintf(f->fix + n, sizeof(f->fix) - n, "; %s sets NCCL_IB_GID_INDEX=%s now", h->name, forced);
  n = strlen(f->fix);
  if (h && h->version[0] && rules_version_before(h->version, 2, 21))
    snprintf(f->fix + n, sizeof(f->fix) - n,
             "; NCCL %s does not accept -1 (2.21+ does): set the RoCE v2 index show_gids lists",
             h->version);
  else finding_export(f, "NCCL_IB_GID_INDEX=-1");
}

/* ENODATA, ENODEV, EINVAL: the local side refused the attributes. */
static struct finding *refused(const struct explain_ctx *cx, const struct rtr_case *c) {
  const struct corr_host *h = corr_find(cx->corr, c->r->host);
  const char *forced = corr_env(h, "NCCL_IB_GID_INDEX");
  struct finding *f = NULL;
  char tr[96];
  transition(&c->m, tr, sizeof(tr));
  if (c->m.err == ENODATA) {
    if (!(f = finding_new(cx->out, "rtr", CONF_HIGH))) return NULL;
    finding_cause(
      f,
      "%s failed with ENODATA on %s: GID index %d is empty now: the netdev's IP address behind it was removed after NCCL chose it (or never existed in this namespace)",
      tr, c->where, c->m.gid_index);
    finding_fix(
      f,
      "restore the address on the netdev of %s, or let NCCL choose a GID that exists (NCCL 2.21+: NCCL_IB_GID_INDEX=-1)",
      c->m.dev);
  } else if (c->m.err == ENODEV) {
    if (!(f = finding_new(cx->out, "rtr", forced ? CONF_HIGH : CONF_MEDIUM))) return NULL;
    finding_cause(
      f,
      "%s failed with ENODEV on %s: GID index %d does not exist in this network namespace, the mark of a forced NCCL_IB_GID_INDEX that a container's GID table lacks",
      tr, c->where, c->m.gid_index);
    finding_fix(
      f,
      "let NCCL choose (NCCL 2.21+: NCCL_IB_GID_INDEX=-1) or map the RoCE netdev with its addresses into the container");
  } else if (c->kind == RK_REMOTE_ZERO) {
    if (!(f = finding_new(cx->out, "rtr", CONF_HIGH))) return NULL;
    finding_cause(
      f,
      "%s failed with EINVAL on %s: the peer sent an all-zero GID, so it found no usable GID on its port (an empty or partly mapped GID table, typical of a container)",
      tr, c->where);
    finding_fix(
      f,
      "run show_gids and nccl-net-diag doctor on the peer and give its RoCE netdev an IPv4 address inside the container");
  } else if (!strcmp(c->m.cur, "RESET")) {
    if (!(f = finding_new(cx->out, "rtr", CONF_MEDIUM))) return NULL;
    finding_cause(
      f,
      "%s failed with EINVAL on %s: the port number or the P_Key index is invalid (NCCL_IB_PKEY is an index into the port's P_Key table, not a P_Key value)",
      tr, c->where);
    finding_fix(
      f,
      "unset NCCL_IB_PKEY or set it to the index of the partition key (cat /sys/class/infiniband/%s/ports/%d/pkeys/*)",
      c->m.dev, c->m.port);
    return f;
  } else {
    if (!(f = finding_new(cx->out, "rtr", forced ? CONF_HIGH : CONF_MEDIUM))) return NULL;
    finding_cause(
      f,
      "%s failed with EINVAL on %s: the device refused the address attributes, which means a GID index that is wrong for this port (empty, or not RoCE v2)%s",
      tr, c->where,
      forced ? " forced by NCCL_IB_GID_INDEX"
             : ", or less often an MTU or P_Key the port does not take");
    finding_fix(
      f,
      "check the table with show_gids on %s and let NCCL choose (NCCL 2.21+: NCCL_IB_GID_INDEX=-1)",
      c->r->host);
  }
  add_gid_index_fix(f, h);
  return f;
}

static struct finding *rtr_finding(const struct explain_ctx *cx, const struct rtr_case *c) {
  struct finding *f;
  char lbl[24];
  if (c->kind == RK_REMOTE_LL) {
    if (!(f = finding_new(cx->out, "rtr", CONF_HIGH))) return NULL;
    finding_cause(
      f,
      "ibv_modify_qp failed (%s) from %s because %s is link-local: the peer chose a link-local GID, which never routes between hosts",
      errno_label(c->m.err, lbl, sizeof(lbl)), c->where, c->remote);
    finding_fix(
      f,
      "on the peer%s%s, let NCCL choose the IPv4-mapped RoCE v2 GID (NCCL 2.21+: NCCL_IB_GID_INDEX=-1) or set the index show_gids lists for it",
      c->rhost ? " " : "", c->rhost ? c->rhost : "");
    const struct corr_host *h = corr_find(cx->corr, c->r->host);
    if (!h || !h->version[0] || !rules_version_before(h->version, 2, 21))
      finding_export(f, "NCCL_IB_GID_INDEX=-1");
    return f;
  }
  if (c->m.err == ETIMEDOUT) return timedout(cx, c);
  if (c->m.err == ENODATA || c->m.err == ENODEV || c->m.err == EINVAL) return refused(cx, c);
  if (!(f = finding_new(cx->out, "rtr", CONF_LOW))) return NULL;
  if (c->m.err == ENETUNREACH)
    finding_cause(
      f,
      "no confident cause: RTR ENETUNREACH on %s to %s: no route from the GID's netdev to the peer; the Linux kernel (6.1 measured) answers this only when the netdev that carries the local GID is down (an unresolvable peer gives ETIMEDOUT instead)",
      c->where, c->remote);
  else
    finding_cause(f, "no confident cause: ibv_modify_qp failed with %s (%s) on %s to %s",
                  errno_label(c->m.err, lbl, sizeof(lbl)), errno_words(c->m.err), c->where,
                  c->remote);
  finding_fix(
    f,
    "on %s: find the netdev of %s (ibdev2netdev or rdma link) and check it is up (ip link show), run show_gids and nccl-net-diag doctor",
    c->r->host[0] ? c->r->host : "the failing host", c->m.dev[0] ? c->m.dev : "the device");
  confirm_hint(f, c);
  return f;
}

/* "(the same on 7 more hosts)": the failing hosts beyond the one named. */
static void same_on_more(struct finding *f) {
  int n = finding_count_hosts(f);
  size_t len = strlen(f->cause);
  if (n > 1)
    snprintf(f->cause + len, sizeof(f->cause) - len, " (the same on %d more host%s)", n - 1,
             n > 2 ? "s" : "");
}

void rtr_build(const struct explain_ctx *cx, const struct hits *h) {
  bool has_final = false;
  struct mqp m;
  for (size_t i = 0; i < h->n; i++) has_final |= mqp_parse(h->v[i]->text, &m) && !m.is_retry;
  struct finding *groups[16];
  char keys[16][48];
  int ngroups = 0;
  for (size_t i = 0; i < h->n; i++) {
    struct rtr_case c = {.r = h->v[i]};
    mqp_parse(c.r->text, &c.m);
    if (c.m.is_retry && has_final) continue;
    if (c.m.has_lgid && log_gid_is_link_local(&c.m.lgid)) continue; /* the gid-index rule's */
    classify(cx, &c);
    char key[48];
    snprintf(key, sizeof(key), "%d/%s/%s/%d", c.m.err, c.m.cur, c.m.next, (int)c.kind);
    int g = 0;
    while (g < ngroups && strcmp(keys[g], key)) g++;
    if (g == ngroups && ngroups < 16) {
      describe(cx, &c);
      if (!(groups[g] = rtr_finding(cx, &c))) return;
      snprintf(keys[ngroups++], sizeof(keys[0]), "%s", key);
      finding_evidence(groups[g], c.r);
      if (c.rhost) finding_host(groups[g], c.rhost);
    } else if (g < ngroups) finding_evidence(groups[g], c.r);
  }
  for (int g = 0; g < ngroups; g++) same_on_more(groups[g]);
}
