/* SPDX-License-Identifier: Apache-2.0 */
/* GID index: a link-local GID in use (chosen by NCCL's default or forced
 * with NCCL_IB_GID_INDEX), or a forced index that is link-local or RoCE v1
 * on a standard mlx5 RoCE table (0 fe80 v1, 1 fe80 v2, 2 IPv4 v1, 3 IPv4 v2). */
#include <string.h>

#include "tools/explain/rules.h"

/* The local GID a line shows: a per-QP INFO line "GID 3 (hex/hex)", a
 * failed modify "local GID fe80::...", a completion "localGid fe80::...". */
static bool local_gid(const struct rec *r, struct log_gid *g, int *index) {
  const char *t = r->text, *p;
  long v;
  *index = -1;
  if (!strncmp(t, "NET/IB: ", 8) && text_after(t, " mtu ") && (p = text_after(t, " GID ")) &&
      text_long(p, &v)) {
    *index = (int)v;
    const char *open = strchr(p, '(');
    return open && log_gid_parse_nccl(open, g);
  }
  struct mqp m;
  if (mqp_parse(t, &m) && m.has_lgid) {
    *index = m.gid_index, *g = m.lgid;
    return true;
  }
  return (p = text_after(t, "localGid ")) && log_gid_parse(p, g);
}

static bool is_gid_env(const struct rec *r) {
  return !strncmp(r->text, "NCCL_IB_GID_INDEX set ", 22);
}

bool gid_match(const struct rec *r) {
  if (r->is_diag) return false;
  if (is_gid_env(r)) return true;
  struct log_gid g;
  int index;
  return local_gid(r, &g, &index) && log_gid_is_link_local(&g);
}

/* A GID index of the version's own choice before 2.21 was 0. */
static bool version_before(const char *version, int major, int minor) {
  return rules_version_before(version, major, minor);
}

/* NCCL_IB_GID_INDEX=-1 (choose automatically) exists from 2.21 on. */
static bool accepts_auto(const struct corr_host *h) {
  return h->version[0] && !version_before(h->version, 2, 21);
}

enum gid_kind { GK_FORCED, GK_OLD_DEFAULT, GK_AUTO, GK_SUSPECT, GK_COUNT };

static enum gid_kind kind_of(const struct corr_host *h, const char *forced) {
  if (forced && strcmp(forced, "-1")) return GK_FORCED;
  return version_before(h->version, 2, 21) ? GK_OLD_DEFAULT : GK_AUTO;
}

static struct finding *link_local_in_use(const struct explain_ctx *cx, enum gid_kind k,
                                         const struct corr_host *h, const struct rec *r,
                                         const char *forced) {
  struct log_gid g;
  int index;
  char gt[64] = "", dev[32] = "its RoCE port";
  local_gid(r, &g, &index);
  log_gid_text(&g, gt, sizeof(gt));
  const struct corr_port *p = NULL;
  if (corr_find_gid(cx->corr, &g, &p) && p->dev[0]) snprintf(dev, sizeof(dev), "%s", p->dev);
  struct finding *f = finding_new(cx->out, "gid-index", k == GK_AUTO ? CONF_MEDIUM : CONF_HIGH);
  if (!f) return NULL;
  if (k == GK_FORCED) {
    finding_cause(
      f,
      "NCCL_IB_GID_INDEX=%s on %s selects the link-local GID %s of %s: a link-local GID never routes between hosts",
      forced, h->name, gt, dev);
  } else if (k == GK_OLD_DEFAULT) {
    finding_cause(
      f,
      "NCCL %s on %s uses GID index 0 unless told otherwise, and GID 0 of %s is the link-local %s, which never routes between hosts",
      h->version, h->name, dev, gt);
    finding_fix(
      f,
      "set NCCL_IB_GID_INDEX on every node to the IPv4-mapped RoCE v2 entry that show_gids lists (index 3 on a standard mlx5 table), or use NCCL 2.21 or later, which chooses it itself");
  } else {
    finding_cause(
      f,
      "the automatic GID choice on %s ended on the link-local GID %s of %s: the port has no IPv4-mapped RoCE v2 GID (no IPv4 address on its netdev, or an IPv6-only port while NCCL_IB_ADDR_FAMILY is AF_INET)",
      h->name, gt, dev);
    finding_fix(
      f,
      "give the netdev of %s an IPv4 address, or for an IPv6-only port set NCCL_IB_ADDR_FAMILY=AF_INET6; check the GID table with show_gids or nccl-net-diag doctor on %s",
      dev, h->name);
  }
  if (!f->fix[0] && accepts_auto(h)) {
    finding_fix(
      f,
      "let NCCL choose the IPv4-mapped RoCE v2 GID (NCCL_IB_GID_INDEX=-1, or unset it), or set the index show_gids lists as RoCE v2 with an IPv4 address, on every node");
    finding_export(f, "NCCL_IB_GID_INDEX=-1");
  } else if (!f->fix[0]) {
    finding_fix(
      f,
      "set NCCL_IB_GID_INDEX on every node to the index show_gids lists as RoCE v2 with an IPv4 address (NCCL before 2.21 does not accept -1; 2.21+ chooses it itself)");
  }
  return f;
}

/* A forced index with no GID in the log: only the standard table's meaning. */
static struct finding *forced_suspect(const struct explain_ctx *cx, const struct corr_host *h) {
  const char *forced = corr_env(h, "NCCL_IB_GID_INDEX");
  long v;
  if (!forced || !h->is_roce || !text_long(forced, &v) || v < 0 || v > 2) return NULL;
  struct finding *f = finding_new(cx->out, "gid-index", CONF_MEDIUM);
  if (!f) return NULL;
  finding_cause(
    f,
    "NCCL_IB_GID_INDEX=%ld is forced on %s, a RoCE host; on a standard mlx5 GID table index %ld is %s, which does not route between subnets",
    v, h->name, v, v == 2 ? "the RoCE v1 entry of the IPv4 address" : "a link-local entry");
  finding_fix(
    f,
    "check the table with show_gids on %s and force only the RoCE v2 entry with an IPv4 address%s",
    h->name,
    accepts_auto(h) ? ", or let NCCL choose (NCCL_IB_GID_INDEX=-1)"
                    : " (this NCCL is older than 2.21 or unknown, so -1 is not accepted)");
  if (accepts_auto(h)) finding_export(f, "NCCL_IB_GID_INDEX=-1");
  return f;
}

/* One finding per kind (and forced value): a 16-node job reads one. */
void gid_build(const struct explain_ctx *cx, const struct hits *hits) {
  struct finding *groups[GK_COUNT] = {0};
  char keys[GK_COUNT][40] = {{0}};
  for (int i = 0; i < cx->corr->nhosts; i++) {
    const struct corr_host *h = &cx->corr->hosts[i];
    const char *forced = corr_env(h, "NCCL_IB_GID_INDEX");
    const struct rec *first = NULL, *env = NULL;
    for (size_t k = 0; k < hits->n; k++) {
      const struct rec *r = hits->v[k];
      if (strcmp(r->host, h->name)) continue;
      if (is_gid_env(r)) env = env ? env : r;
      else first = first ? first : r;
    }
    if (!first && !env) continue;
    enum gid_kind k = first ? kind_of(h, forced) : GK_SUSPECT;
    char key[40];
    snprintf(key, sizeof(key), "%s/%s", forced ? forced : "",
             k == GK_OLD_DEFAULT ? h->version : "");
    if (groups[k] && strcmp(keys[k], key)) continue; /* a second value: rare, first one named */
    if (!groups[k]) {
      groups[k] = first ? link_local_in_use(cx, k, h, first, forced) : forced_suspect(cx, h);
      if (!groups[k]) continue;
      snprintf(keys[k], sizeof(keys[k]), "%s", key);
    }
    finding_evidence(groups[k], env);
    for (size_t n = 0; n < hits->n; n++)
      if (!strcmp(hits->v[n]->host, h->name) && !is_gid_env(hits->v[n]))
        finding_evidence(groups[k], hits->v[n]);
  }
  for (int k = 0; k < GK_COUNT; k++) {
    struct finding *f = groups[k];
    if (!f || f->nhosts < 2) continue;
    size_t n = strlen(f->cause);
    snprintf(f->cause + n, sizeof(f->cause) - n, " (the same on %d more host%s)",
             f->nhosts - 1 + f->nhosts_more, f->nhosts > 2 ? "s" : "");
  }
}
