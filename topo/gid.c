/* SPDX-License-Identifier: Apache-2.0 */
#include "topo/gid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/knobs.h"
#include "common/strutil.h"

int gid_parse(const char *text, uint8_t raw[16]) {
  return inet_pton(AF_INET6, text, raw) == 1 ? 0 : EINVAL;
}

void gid_str(const uint8_t raw[16], char *buf, size_t cap) {
  char tmp[INET6_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET6, raw, tmp, sizeof(tmp));
  snprintf(buf, cap, "%s", tmp);
}

enum gid_type gid_type_parse(const char *text) {
  if (!strncmp(text, "IB/RoCE v1", 10) || !strncmp(text, "RoCE v1", 7)) return GID_TYPE_V1;
  if (!strncmp(text, "RoCE v2", 7)) return GID_TYPE_V2;
  return GID_TYPE_UNKNOWN;
}

bool gid_is_zero(const uint8_t raw[16]) {
  static const uint8_t zero[16];
  return !memcmp(raw, zero, 16);
}

bool gid_is_link_local(const uint8_t raw[16]) {
  static const uint8_t ll[8] = {0xfe, 0x80};
  return !memcmp(raw, ll, 8);
}

int gid_family(const uint8_t raw[16]) {
  static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
  static const uint8_t mcast[12] = {0xff, 0x0e, [10] = 0xff, [11] = 0xff};
  return !memcmp(raw, mapped, 12) || !memcmp(raw, mcast, 12) ? AF_INET : AF_INET6;
}

void gid_to_ipaddr(const uint8_t raw[16], struct ipaddr *a) {
  memset(a, 0, sizeof(*a));
  a->prefix = -1;
  a->family = gid_family(raw);
  if (a->family == AF_INET) memcpy(a->bytes, raw + 12, 4);
  else memcpy(a->bytes, raw, 16);
}

bool gid_in_range(const uint8_t raw[16], const struct ipaddr *range) {
  struct ipaddr a;
  gid_to_ipaddr(raw, &a);
  if (a.family != range->family) return false;
  int bits = range->prefix < 0 ? (a.family == AF_INET ? 32 : 128) : range->prefix;
  return ipaddr_prefix_equal(a.bytes, range->bytes, bits);
}

static const char *family_name(int f) { return f == AF_INET ? "AF_INET" : "AF_INET6"; }

/* out->rejects has room for one verdict per entry of the table (n): no entry
 * is rejected twice. */
static void add_reject(struct gid_pick *out, int n, int index, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
static void add_reject(struct gid_pick *out, int n, int index, const char *fmt, ...) {
  if (out->nreject == n || !out->rejects) return;
  struct topo_gid_reject *r = &out->rejects[out->nreject++];
  r->index = index;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->why, sizeof(r->why), fmt, ap);
  va_end(ap);
}

/* Why an entry cannot be chosen automatically (NULL-free: writes why and
 * returns 0), or its score (> 0). hint gets the knob that would admit it. */
static int judge(const struct topo_gid *g, const struct gid_prefs *p, char *why, size_t cap,
                 char *hint, size_t hcap) {
  char r[64];
  int fam = gid_family(g->raw);
  hint[0] = 0;
  if (gid_is_link_local(g->raw)) {
    snprintf(why, cap, "link-local (fe80::/64): never routed between hosts on different subnets");
    return 0;
  }
  if (fam != p->family) {
    snprintf(why, cap, "%s GID; NCCL_IB_ADDR_FAMILY is %s", fam == AF_INET ? "IPv4" : "IPv6",
             family_name(p->family));
    snprintf(hint, hcap, "NCCL_IB_ADDR_FAMILY=%s", family_name(fam));
    return 0;
  }
  if (p->has_range && !gid_in_range(g->raw, &p->range)) {
    ipaddr_cidr(&p->range, r, sizeof(r));
    snprintf(why, cap, "outside NCCL_IB_ADDR_RANGE=%s", r);
    return 0;
  }
  if (g->type == GID_TYPE_UNKNOWN) {
    snprintf(why, cap,
             "RoCE version unreadable (gid_attrs/types/%d: %s): this network namespace does not "
             "map the entry; NCCL skips it too",
             g->index, g->type_errno ? strerror(g->type_errno) : "unrecognised text");
    return 0;
  }
  int ver = g->type == GID_TYPE_V2 ? 2 : 1;
  if (ver != p->roce_version) {
    snprintf(why, cap, "RoCE v%d; NCCL_IB_ROCE_VERSION_NUM is %d", ver, p->roce_version);
    snprintf(hint, hcap, "NCCL_IB_ROCE_VERSION_NUM=%d", ver);
    return 0;
  }
  if (g->netdev_up == 0) {
    snprintf(why, cap, "its netdev %s is down", g->netdev[0] ? g->netdev : "(unknown)");
    return 0;
  }
  return 1 + (g->prefix >= 0 ? 4 : 0) + (g->is_port_netdev ? 2 : 0);
}

static int pick_auto(const struct topo_gid *tbl, int n, const struct gid_prefs *p,
                     struct gid_pick *out) {
  int best = -1, best_score = 0;
  for (int i = 0; i < n; i++) {
    char why[200], hint[64];
    int s = judge(&tbl[i], p, why, sizeof(why), hint, sizeof(hint));
    if (!s) {
      add_reject(out, n, tbl[i].index, "%s", why);
      if (hint[0] && !out->hint[0]) scopy(out->hint, sizeof(out->hint), hint);
      continue;
    }
    if (s > best_score) {
      if (best >= 0)
        add_reject(out, n, tbl[best].index, "score %d, below index %d's %d", best_score,
                   tbl[i].index, s);
      best = i, best_score = s;
    } else {
      add_reject(out, n, tbl[i].index, "score %d, not above index %d's %d", s, tbl[best].index,
                 best_score);
    }
  }
  out->score = best_score;
  return best < 0 ? -1 : tbl[best].index;
}

static const struct topo_gid *find(const struct topo_gid *tbl, int n, int index) {
  for (int i = 0; i < n; i++)
    if (tbl[i].index == index) return &tbl[i];
  return NULL;
}

static void refusal(const struct topo_gid *tbl, int n, const struct gid_prefs *p,
                    struct gid_pick *out) {
  size_t o = (size_t)snprintf(out->note, sizeof(out->note), "no usable GID");
  if (n == 0) {
    snprintf(out->note + o, sizeof(out->note) - o,
             ": the GID table is empty (no address on the netdev, or a pod without its GIDs)");
    return;
  }
  bool are_all_link_local = true;
  for (int i = 0; i < n; i++) are_all_link_local &= gid_is_link_local(tbl[i].raw);
  if (are_all_link_local)
    snprintf(out->note + o, sizeof(out->note) - o,
             ": only link-local GIDs; give the netdev an %s address (RoCE v2 GIDs are made from "
             "the netdev's addresses)",
             p->family == AF_INET ? "IPv4" : "IPv6");
  else if (!strncmp(out->hint, "NCCL_IB_ADDR_FAMILY=", 20))
    snprintf(out->note + o, sizeof(out->note) - o,
             ": its routable GIDs are %s and NCCL_IB_ADDR_FAMILY is %s; set %s to use this port",
             p->family == AF_INET ? "IPv6" : "IPv4", family_name(p->family), out->hint);
  else if (!strncmp(out->hint, "NCCL_IB_ROCE_VERSION_NUM=", 25))
    snprintf(out->note + o, sizeof(out->note) - o,
             ": its routable GIDs are RoCE v%d and NCCL_IB_ROCE_VERSION_NUM is %d; set %s to use "
             "this port",
             p->roce_version == 2 ? 1 : 2, p->roce_version, out->hint);
  else if (out->hint[0])
    snprintf(out->note + o, sizeof(out->note) - o, ": set %s to use this port", out->hint);
  else snprintf(out->note + o, sizeof(out->note) - o, " (every entry's reason is listed)");
}

/* What a forced index that cannot carry a pair leads to: RTR failing, or,
 * with NCCL_DIAG_REPAIR=auto, each pair repaired onto the index the
 * automatic choice takes (when the peer allows it), which is still a
 * setting to fix. */
static void consequence(const struct gid_pick *out, const char *rtr, char *buf, size_t cap) {
  if (out->auto_index >= 0 && knob_enum(K_DIAG_REPAIR) == REPAIR_AUTO)
    snprintf(buf, cap,
             "%s with NCCL's own transport; this plugin repairs each pair to GID index %d "
             "(NCCL_DIAG_REPAIR=auto, where the peer allows it), but the setting should still "
             "be fixed",
             rtr, out->auto_index);
  else snprintf(buf, cap, "%s", rtr);
}

/* Checks a forced index; returns the severity and writes the problem. */
static int check_forced(const struct topo_gid *tbl, int n, int tbl_len, const struct gid_prefs *p,
                        struct gid_pick *out) {
  int idx = p->forced_index;
  char autotxt[64] = "no GID qualifies", then[300];
  if (out->auto_index >= 0) snprintf(autotxt, sizeof(autotxt), "it picks %d", out->auto_index);
  const struct topo_gid *g = find(tbl, n, idx);
  const char *fix = "unset NCCL_IB_GID_INDEX to choose automatically";
  if (idx >= tbl_len) {
    consequence(out, "RTR fails with EINVAL", then, sizeof(then));
    snprintf(out->note, sizeof(out->note),
             "NCCL_IB_GID_INDEX=%d is past the end of the GID table (%d entries): %s; %s (%s)", idx,
             tbl_len, then, fix, autotxt);
    return 2;
  }
  if (!g) {
    consequence(out, "RTR fails (EINVAL or ENODEV)", then, sizeof(then));
    snprintf(out->note, sizeof(out->note),
             "NCCL_IB_GID_INDEX=%d points at an empty GID entry: %s; %s (%s)", idx, then, fix,
             autotxt);
    return 2;
  }
  char gs[64], why[200], hint[64];
  gid_str(g->raw, gs, sizeof(gs));
  if (gid_is_link_local(g->raw)) {
    consequence(out, "QPs to hosts on other subnets time out", then, sizeof(then));
    snprintf(out->note, sizeof(out->note),
             "NCCL_IB_GID_INDEX=%d points at link-local GID %s: it is not routed, so %s; %s (%s)",
             idx, gs, then, fix, autotxt);
    return 2;
  }
  if (judge(g, p, why, sizeof(why), hint, sizeof(hint))) return 0;
  snprintf(out->note, sizeof(out->note),
           "NCCL_IB_GID_INDEX=%d points at GID %s, which the automatic choice rejects: %s; peers "
           "that choose automatically will not match it; %s (%s)",
           idx, gs, why, fix, autotxt);
  return 1;
}

/* Clears a pick, keeping the caller's room for rejected entries. */
static void pick_reset(struct gid_pick *out) {
  struct topo_gid_reject *rej = out->rejects;
  memset(out, 0, sizeof(*out));
  out->rejects = rej;
}

int gid_pick_roce(const struct topo_gid *tbl, int n, int tbl_len, const struct gid_prefs *p,
                  struct gid_pick *out) {
  pick_reset(out);
  out->auto_index = pick_auto(tbl, n, p, out);
  out->nccl_index = gid_nccl_auto(tbl, n, tbl_len, p);
  out->index = out->auto_index;
  if (p->forced_index >= 0) {
    out->is_forced = true;
    out->index = p->forced_index;
    out->severity = check_forced(tbl, n, tbl_len, p, out);
    return out->index;
  }
  if (out->index < 0) refusal(tbl, n, p, out);
  return out->index;
}

/* Bytes 4-5 of an IB GID hold the FLID that IB routers use. */
static bool has_flid(const uint8_t raw[16]) { return raw[4] || raw[5]; }

int gid_pick_ib(const struct topo_gid *tbl, int n, int forced, struct gid_pick *out) {
  pick_reset(out);
  const struct topo_gid *g0 = find(tbl, n, 0), *g1 = find(tbl, n, 1);
  out->index = g1 && has_flid(g1->raw) ? 1 : g0 ? 0 : -1;
  out->auto_index = out->nccl_index = out->index < 0 ? 0 : out->index;
  if (out->index < 0) {
    snprintf(out->note, sizeof(out->note),
             "GID 0 is empty: the port has no GID yet (is a subnet manager running?)");
    return -1;
  }
  for (int i = 0; i < n; i++)
    if (tbl[i].index != out->index)
      add_reject(out, n, tbl[i].index, "InfiniBand uses GID %d%s", out->index,
                 out->index ? " (routable FLID)" : "");
  if (forced >= 0) {
    out->severity = 0;
    snprintf(out->note, sizeof(out->note),
             "NCCL_IB_GID_INDEX=%d is ignored on InfiniBand ports, as NCCL does", forced);
  }
  return out->index;
}

/* NCCL's scan, in our words: start at 0; a candidate of the requested family
 * replaces a best of the other family outright; otherwise a valid candidate
 * in range replaces the best when their RoCE versions differ (or the best is
 * not valid) and the candidate has the requested version. An unreadable
 * version reads as "none". */
int gid_nccl_auto(const struct topo_gid *tbl, int n, int tbl_len, const struct gid_prefs *p) {
  static const struct topo_gid empty;
  int best = 0;
  for (int c = 1; c < tbl_len; c++) {
    const struct topo_gid *b = find(tbl, n, best), *g = find(tbl, n, c);
    if (!b) b = &empty;
    if (!g) g = &empty;
    bool is_in_range = !p->has_range || gid_in_range(g->raw, &p->range);
    int fam = gid_family(g->raw);
    if (gid_family(b->raw) != fam) {
      if (fam == p->family && is_in_range) best = c;
      continue;
    }
    bool is_valid = !gid_is_zero(g->raw) && !gid_is_link_local(g->raw);
    if (fam != p->family || !is_valid || !is_in_range) continue;
    int vb = b->type == GID_TYPE_V2 ? 2 : b->type == GID_TYPE_V1 ? 1 : 0;
    int vc = g->type == GID_TYPE_V2 ? 2 : g->type == GID_TYPE_V1 ? 1 : -1;
    bool is_best_valid = !gid_is_zero(b->raw) && !gid_is_link_local(b->raw);
    if ((vb != vc || !is_best_valid) && vc == p->roce_version) best = c;
  }
  return best;
}
