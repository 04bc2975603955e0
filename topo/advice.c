/* SPDX-License-Identifier: Apache-2.0 */
/* Recommended settings, each only when needed and with its reason:
 *  NCCL_IB_HCA        when ports were set apart or the current value is wrong:
 *                     the exact list of chosen devices (so that NCCL's
 *                     built-in IB transport and every node agree);
 *  NCCL_SOCKET_IFNAME topo/sockadvice.c: the main interface, exact, when
 *                     NCCL's own choice would differ or depend on interface
 *                     order, or the current value matches nothing;
 *  NCCL_IB_GID_INDEX  when the forced index is wrong, or NCCL's built-in
 *                     automatic choice would differ from ours;
 *  NCCL_IB_ADDR_FAMILY / NCCL_IB_ROCE_VERSION_NUM when that alone would make
 *                     the refused ports usable;
 *  NCCL_IB_DISABLE=1  when RDMA ports are up but none is usable, so that
 *                     NCCL's built-in transport does not try them. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/strutil.h"
#include "topo/filter.h"
#include "topo/internal.h"

static struct topo_setting *setting_add(struct topo_choice *c, const char *name, const char *cur,
                                        int keep) {
  if (c->nsetting == TOPO_MAX_SETTINGS) return NULL;
  struct topo_setting *r = &c->settings[c->nsetting++];
  memset(r, 0, sizeof(*r));
  scopy(r->name, sizeof(r->name), name);
  scopy(r->status, sizeof(r->status), keep ? "keep" : cur && *cur ? "change" : "add");
  return r;
}

static void setting_why(struct topo_setting *r, const char *fmt, ...)
  __attribute__((format(printf, 2, 3)));
static void setting_why(struct topo_setting *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->why, sizeof(r->why), fmt, ap);
  va_end(ap);
}

/* The automatic choice, what the passes choose without NCCL_IB_HCA: the
 * NCCL_IB_HCA advice compares with it. */
struct auto_choice {
  enum topo_verdict verdicts[TOPO_MAX_PORTS];
  int ndev;
  int dev_ports[TOPO_MAX_DEVS]; /* in NCCL order */
};

/* A port's automatic verdict follows from its own: the filter is an input
 * of no other pass (the GID pick and the plane rules judge the ports it
 * leaves out too), and only a port the filter names exactly is kept off
 * its plane. */
static enum topo_verdict auto_verdict(const struct topo_port_choice *pc) {
  if (pc->verdict != TV_CHOSEN && pc->verdict != TV_FILTER && pc->verdict != TV_LIMIT)
    return pc->verdict;
  if (pc->gid.index < 0) return TV_GID;
  return pc->is_off_plane ? TV_PLANE : TV_CHOSEN;
}

static void auto_choose(const struct topo_host *h, const struct topo_choice *c,
                        struct auto_choice *a) {
  int ports[TOPO_MAX_PORTS], n = 0;
  for (int p = 0; p < h->nport; p++)
    if ((a->verdicts[p] = auto_verdict(&c->pc[p])) == TV_CHOSEN) ports[n++] = p;
  hca_sort_ports(h, ports, n);
  a->ndev = 0;
  for (int i = 0; i < n; i++) {
    if (a->ndev == TOPO_MAX_DEVS) a->verdicts[ports[i]] = TV_LIMIT;
    else a->dev_ports[a->ndev++] = ports[i];
  }
}

/* Whether an NCCL_IB_HCA text selects exactly the automatic devices. */
static bool selects_auto(const struct topo_host *h, const struct auto_choice *a, const char *text) {
  struct filter f;
  char why[128];
  if (!text || filter_parse(text, &f, why, sizeof(why))) return false;
  for (int p = 0; p < h->nport; p++) {
    /* Ports set apart count: the text must leave them out. */
    enum topo_verdict v = a->verdicts[p];
    if (v != TV_CHOSEN && v != TV_PLANE) continue;
    if (filter_select(&f, h->hcas[h->ports[p].hca].name, h->ports[p].num) != (v == TV_CHOSEN))
      return false;
  }
  return true;
}

/* "=mlx5_2,mlx5_3" with ":port" for devices not chosen on every port. */
static void hca_value(const struct topo_host *h, const struct auto_choice *a, char *buf,
                      size_t cap) {
  size_t o = (size_t)snprintf(buf, cap, "=");
  for (int d = 0; d < a->ndev && o < cap; d++) {
    const struct topo_port *pt = &h->ports[a->dev_ports[d]];
    const struct topo_hca *hca = &h->hcas[pt->hca];
    bool is_all = true;
    for (int p = hca->first_port; p < hca->first_port + hca->nports; p++)
      is_all &= a->verdicts[p] == TV_CHOSEN || a->verdicts[p] == TV_STATE;
    if (is_all && d && h->ports[a->dev_ports[d - 1]].hca == pt->hca) continue;
    o = strbuf_cat(buf, cap, o, "%s%s", d ? "," : "", hca->name);
    if (!is_all) o = strbuf_cat(buf, cap, o, ":%d", pt->num);
  }
}

/* "mlx5_bond_0" (":port" when the device has several ports) of each port
 * the plane rules set apart. */
static size_t apart_list(const struct topo_host *h, const struct auto_choice *a, char *buf,
                         size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int p = 0; p < h->nport && o < cap; p++) {
    if (a->verdicts[p] != TV_PLANE) continue;
    const struct topo_hca *hca = &h->hcas[h->ports[p].hca];
    o = strbuf_cat(buf, cap, o, "%s%s", o ? "," : "", hca->name);
    if (hca->nports > 1 && o < cap) o = strbuf_cat(buf, cap, o, ":%d", h->ports[p].num);
  }
  return o;
}

static void advise_hca(const struct topo_host *h, struct topo_choice *c) {
  const char *cur = c->prefs.hca_filter;
  struct auto_choice a;
  auto_choose(h, c, &a);
  char apart[400];
  size_t o = apart_list(h, &a, apart, sizeof(apart));
  bool is_cur_ok = cur && *cur && selects_auto(h, &a, cur);
  struct topo_setting *r = NULL;
  if (a.ndev && (o || (cur && *cur && !is_cur_ok)))
    r = setting_add(c, "NCCL_IB_HCA", cur, is_cur_ok);
  if (!r) return;
  hca_value(h, &a, r->value, sizeof(r->value));
  if (o)
    setting_why(r,
                "uses only the ports chosen above and sets apart %s (see why above); this plugin "
                "does so itself, the setting makes NCCL's built-in IB transport and every node "
                "agree (NCCL_IB_HCA=^=%s excludes instead)",
                apart, apart);
  else
    setting_why(r, "the current NCCL_IB_HCA=%s does not select the usable ports; this list does",
                cur);
}

/* The one GID index every chosen RoCE port uses automatically, or -1. */
static int uniform_auto(const struct topo_host *h, const struct topo_choice *c, int *nroce) {
  int idx = -2;
  *nroce = 0;
  for (int d = 0; d < c->ndev; d++) {
    if (c->dev[d].ll != TOPO_LL_ETH) continue;
    int a = c->pc[c->dev[d].port].gid.auto_index;
    (*nroce)++;
    idx = idx == -2 || idx == a ? a : -1;
  }
  (void)h;
  return idx < 0 ? -1 : idx;
}

static void advise_gid(const struct topo_host *h, struct topo_choice *c) {
  int nroce, u = uniform_auto(h, c, &nroce);
  if (!nroce) return;
  bool is_forced_bad = false;
  int differs = -1;
  for (int d = 0; d < c->ndev; d++) {
    const struct topo_port_choice *pc = &c->pc[c->dev[d].port];
    if (c->dev[d].ll != TOPO_LL_ETH) continue;
    is_forced_bad |= pc->gid.is_forced && pc->gid.severity;
    if (!pc->gid.is_forced && pc->gid.nccl_index != pc->gid.index && differs < 0) differs = d;
  }
  char cur[16];
  snprintf(cur, sizeof(cur), "%d", c->prefs.gid_index);
  if (is_forced_bad) {
    struct topo_setting *r = setting_add(c, "NCCL_IB_GID_INDEX", cur, 0);
    if (!r) return;
    snprintf(r->value, sizeof(r->value), "%d", u);
    setting_why(
      r,
      u >= 0 ? "the forced index is wrong on some port (see the problems); %d is what "
               "the automatic choice picks on every chosen port"
             : "the forced index is wrong on "
               "some port and the ports differ; -1 chooses automatically per port (NCCL 2.21+)",
      u);
  } else if (differs >= 0 && u >= 0) {
    const struct topo_dev *dv = &c->dev[differs];
    struct topo_setting *r = setting_add(c, "NCCL_IB_GID_INDEX", NULL, 0);
    if (!r) return;
    snprintf(r->value, sizeof(r->value), "%d", u);
    setting_why(r,
                "NCCL's built-in automatic choice would take GID %d on %s:%d, not %d; forcing %d "
                "makes every transport use the same GID",
                c->pc[dv->port].gid.nccl_index, dv->name, dv->ib_port, u, u);
  }
}

/* Ports up, none usable: RDMA is lost for the whole process, which a job
 * run with NCCL_DEBUG=WARN must see. One WARN: the port (or the ports and
 * the one setting they share) with the cause and the fix, and what happens
 * until then, in the words of the transport's host-wide fallback. */
static void warn_none_usable(const struct topo_host *h, struct topo_choice *c,
                             struct topo_issue *is, int active, const char *hint) {
  char ports[400] = "";
  size_t o = 0;
  int first = -1, n = 0;
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port_choice *pc = &c->pc[p];
    if (pc->verdict == TV_STATE || pc->verdict == TV_DISABLED) continue;
    if (first < 0) first = p;
    if (n++ < 4)
      o = strbuf_cat(ports, sizeof(ports), o, "%s%s port %d", o ? ", " : "",
                     h->hcas[h->ports[p].hca].name, h->ports[p].num);
  }
  if (first < 0) return;
  if (n > 4) strbuf_cat(ports, sizeof(ports), o, ", ...");
  const char *tail = "every connection of this process runs over TCP, at TCP speed (to use TCP "
                     "knowingly, set NCCL_IB_DISABLE=1)";
  if (active == 1)
    topo_issue_warn(c, is, "RDMA device %s is up but not used: %s; until then %s", ports,
                    c->pc[first].why, tail);
  else if (hint)
    topo_issue_warn(c, is,
                    "%d RDMA ports are up (%s) but none is used: no usable GID on any; set %s "
                    "to use them; until then %s",
                    active, ports, hint, tail);
  else
    topo_issue_warn(c, is,
                    "%d RDMA ports are up (%s) but none is used (the first, %s port %d: %s); "
                    "until then %s",
                    active, ports, h->hcas[h->ports[first].hca].name, h->ports[first].num,
                    c->pc[first].why, tail);
}

/* Whether NCCL_IB_HCA is what refused every active port: its own error
 * and the NCCL_IB_HCA recommendation say what to do, and turning RDMA off
 * (NCCL_IB_DISABLE=1) would contradict that recommendation. */
static bool is_filtered_out(const struct topo_host *h, const struct topo_choice *c) {
  bool has_filtered = false;
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port_choice *pc = &c->pc[p];
    if (pc->verdict == TV_STATE || pc->verdict == TV_DISABLED) continue;
    if (pc->verdict != TV_FILTER) return false;
    has_filtered = true;
  }
  return has_filtered;
}

/* No device: would one knob make the refused ports usable? */
static void advise_none(const struct topo_host *h, struct topo_choice *c) {
  const char *hint = NULL;
  int active = 0;
  bool is_same_hint = true;
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port_choice *pc = &c->pc[p];
    if (pc->verdict == TV_STATE || pc->verdict == TV_DISABLED) continue;
    active++;
    if (pc->verdict != TV_GID || !pc->gid.hint[0]) is_same_hint = false;
    else if (!hint) hint = pc->gid.hint;
    else is_same_hint &= !strcmp(hint, pc->gid.hint);
  }
  if (!active || c->prefs.is_ib_disabled) return;
  struct topo_issue *is = topo_issue(
    c, TOPO_WARNING, "%d RDMA port%s up but none is usable, so traffic goes over TCP: %s", active,
    active == 1 ? " is" : "s are", c->why_none);
  char name[40];
  const char *eq = hint && is_same_hint ? strchr(hint, '=') : NULL;
  if (is_filtered_out(h, c)) return;
  warn_none_usable(h, c, is, active, eq ? hint : NULL);
  struct topo_setting *r;
  if (eq && (size_t)(eq - hint) < sizeof(name)) {
    snprintf(name, sizeof(name), "%.*s", (int)(eq - hint), hint);
    if (!(r = setting_add(c, name, NULL, 0))) return;
    scopy(r->value, sizeof(r->value), eq + 1);
    setting_why(
      r, "every active RDMA port has a GID that this setting admits (see the rejected GIDs)");
  } else if ((r = setting_add(c, "NCCL_IB_DISABLE", NULL, 0))) {
    scopy(r->value, sizeof(r->value), "1");
    setting_why(r, "no active RDMA port is usable; NCCL's built-in IB transport would try them "
                   "anyway (GID 0 is usually link-local) and time out instead of using TCP");
  }
}

static void note_builtin(const struct topo_host *h, struct topo_choice *c) {
  for (int d = 0; d < c->ndev; d++) {
    const struct topo_port *pt = &h->ports[c->dev[d].port];
    bool has_unread = false;
    for (int k = 0; k < pt->ngid; k++) has_unread |= pt->gids[k].type_errno == EINVAL;
    if (has_unread)
      topo_issue(c, TOPO_NOTE,
                 "%s:%d: some GID types read as EINVAL (entries this network "
                 "namespace does not map); NCCL before 2.26 fails on such a table with 'read "
                 "failed in ncclIbRoceGetVersionNum: Invalid argument'",
                 c->dev[d].name, c->dev[d].ib_port);
  }
  for (int d = 0; d < c->ndev; d++) {
    const struct topo_port_choice *pc = &c->pc[c->dev[d].port];
    if (c->dev[d].ll != TOPO_LL_ETH || pc->gid.is_forced || pc->gid.nccl_index == pc->gid.index)
      continue;
    topo_issue(c, TOPO_NOTE,
               "%s:%d: NCCL's built-in IB transport would choose GID %d here, this "
               "plugin chooses %d",
               h->hcas[c->dev[d].hca].name, c->dev[d].ib_port, pc->gid.nccl_index, pc->gid.index);
  }
}

void advice_pass_settings(const struct topo_host *h, struct topo_choice *c) {
  advise_hca(h, c);
  sockadvice_pass(h, c);
  advise_gid(h, c);
  note_builtin(h, c);
  if (!c->ndev && h->has_rdma) advise_none(h, c);
}
