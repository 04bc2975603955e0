/* SPDX-License-Identifier: Apache-2.0 */
/* The socket interface part of the settings pass. NCCL's bootstrap and its
 * built-in transports choose an interface by NCCL's own rule
 * (topo/netif_nccl.c), whatever this plugin chooses, so this pass judges
 * that choice:
 *  - the main interface with only a loopback or link-local address: an
 *    error, nothing routable to pin;
 *  - NCCL would take a loopback, link-local or veth interface: an error
 *    (a warning for a veth with a routable address), and the pin;
 *  - NCCL would take an interface merely because it comes first, while
 *    the user, the default route or the RDMA rails decide another: a
 *    warning and the pin;
 *  - several interfaces qualify and nothing decides: a note that says so,
 *    and no pin (a guess would be worse than none).
 * NCCL_SOCKET_IFNAME is recommended (exact, =name) only for an interface
 * with a routable address, never lo. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "topo/internal.h"

/* What this pass knows about the host's interfaces. */
struct sock_view {
  int main_if;     /* c->main_if */
  bool is_main_ok; /* it has a routable address */
  bool is_decided; /* the user, the default route or the rails chose it */
  char decided_by[160];
  int ngood;      /* automatic candidates with a routable address */
  char good[300]; /* their names */
  int boot;       /* NCCL's bootstrap interface, -1 */
  const struct ipaddr *boot_addr;
  char have[700]; /* every interface, for messages */
};

static bool has_routable(const struct netif *n, int family) {
  for (int k = 0; k < n->naddr; k++)
    if ((family == AF_UNSPEC || n->addr[k].family == family) && ipaddr_is_routable(&n->addr[k]))
      return true;
  return false;
}

static void fill_view(const struct topo_host *h, const struct topo_choice *c, struct sock_view *v) {
  memset(v, 0, sizeof(*v));
  int fam = c->prefs.socket_family;
  struct netif_choice a;
  netif_choose(&h->ifs, NULL, fam, &a);
  size_t o = 0;
  for (int j = 0; j < a.n && !a.is_fallback; j++) {
    const struct netif *n = &h->ifs.ifs[a.idx[j]];
    if (!has_routable(n, fam)) continue;
    o = strbuf_cat(v->good, sizeof(v->good), o, "%s%s", v->ngood ? ", " : "", n->name);
    v->ngood++;
  }
  v->main_if = c->main_if;
  if (v->main_if >= 0) {
    const char *name = h->ifs.ifs[v->main_if].name;
    v->is_main_ok = has_routable(&h->ifs.ifs[v->main_if], fam);
    if (c->sock.is_filtered && c->sock.n)
      snprintf(v->decided_by, sizeof(v->decided_by), "NCCL_SOCKET_IFNAME selects it");
    else if (!strcmp(name, h->default_route_if))
      snprintf(v->decided_by, sizeof(v->decided_by), "it holds the default route");
    else if (a.n && a.idx[0] != v->main_if)
      snprintf(v->decided_by, sizeof(v->decided_by), "%s", c->main_why);
    v->is_decided = v->decided_by[0] != 0;
  }
  const struct netif_nccl *m = &c->nccl_sock;
  v->boot = m->n ? m->idx[0] : -1;
  if (m->n) v->boot_addr = &h->ifs.ifs[v->boot].addr[m->addr[0]];
  netif_list_str(&h->ifs, v->have, sizeof(v->have));
}

/* Why NCCL's bootstrap cannot work over interface n with address a, or
 * NULL; *is_certain when no other node can reach it at all. */
static const char *unusable(const struct netif *n, const struct ipaddr *a, bool *is_certain) {
  *is_certain = true;
  if (n->loopback || !strncmp(n->name, "lo", 2) || ipaddr_is_loopback(a))
    return "the loopback interface, which no other host can reach";
  if (ipaddr_is_link_local(a) && a->family == AF_INET)
    return "a 169.254.0.0/16 link-local address, which no router forwards and which is usually "
           "a container's or a cloud agent's";
  if (ipaddr_is_link_local(a))
    return "an IPv6 link-local address, which reaches one link at most and only with this host's "
           "own interface index, which peers do not share";
  *is_certain = false;
  if (!strncmp(n->name, "veth", 4))
    return "the host end of a container's virtual pair, which leads into that container, not to "
           "other nodes";
  return NULL;
}

static struct topo_issue *issue_with_fix(struct topo_choice *c, enum topo_severity sev,
                                         const char *fix, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
static struct topo_issue *issue_with_fix(struct topo_choice *c, enum topo_severity sev,
                                         const char *fix, const char *fmt, ...) {
  char text[1600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  struct topo_issue *i = topo_issue(c, sev, "%s", text);
  if (i && !(i->fix = strdup(fix))) c->nissue_lost++;
  return i;
}

/* The main interface has nothing another node can reach. */
static void check_main(const struct topo_host *h, struct topo_choice *c,
                       const struct sock_view *v) {
  if (v->main_if < 0 || v->is_main_ok) return;
  const struct netif *n = &h->ifs.ifs[v->main_if];
  char fix[300];
  snprintf(fix, sizeof(fix),
           "give the interface on the network the nodes share a routable address and bring it "
           "up (then pin it: NCCL_SOCKET_IFNAME==<its name>)");
  issue_with_fix(c, TOPO_ERROR, fix,
                 "the main interface %s has only %s addresses: no other node can reach this host "
                 "over it, so NCCL's bootstrap and every connection between nodes fail (a job on "
                 "this host alone works). This host has %s: %s",
                 n->name, n->loopback || !strncmp(n->name, "lo", 2) ? "loopback" : "link-local",
                 v->have, fix);
}

/* The interface to pin, exact, when one is known for sure: "" else. */
static const char *pin_of(const struct topo_host *h, const struct sock_view *v) {
  if (v->main_if < 0 || !v->is_main_ok || (!v->is_decided && v->ngood != 1)) return "";
  return h->ifs.ifs[v->main_if].name;
}

/* NCCL's own choice for its bootstrap. */
static void check_nccl(const struct topo_host *h, struct topo_choice *c,
                       const struct sock_view *v) {
  const struct netif_nccl *m = &c->nccl_sock;
  if (v->boot < 0 || !v->is_main_ok) return; /* nothing, or check_main said it */
  const struct netif *b = &h->ifs.ifs[v->boot];
  char addr[64], fix[400];
  ipaddr_str(v->boot_addr, addr, sizeof(addr));
  const char *pin = pin_of(h, v);
  if (pin[0]) snprintf(fix, sizeof(fix), "export NCCL_SOCKET_IFNAME==%s", pin);
  else
    snprintf(fix, sizeof(fix),
             "set NCCL_SOCKET_IFNAME on every node to the interface on the network the nodes "
             "share (here one of %s; no default route says which)",
             v->good);
  bool is_certain;
  const char *why = unusable(b, v->boot_addr, &is_certain);
  if (why) {
    issue_with_fix(c, is_certain ? TOPO_ERROR : TOPO_WARNING, fix,
                   "NCCL's bootstrap and built-in transports would use %s (%s), chosen by %s: %s, "
                   "so the other nodes cannot connect to this one",
                   b->name, addr, m->rule, why);
  } else if (!m->is_filtered && m->pass == 1 && v->boot != v->main_if && v->is_decided) {
    issue_with_fix(c, TOPO_WARNING, fix,
                   "NCCL's bootstrap would use %s (%s) merely because it comes first in interface "
                   "order, but the main interface is %s (%s): a node whose bootstrap address is "
                   "on a network its peers do not reach makes their connections time out",
                   b->name, addr, h->ifs.ifs[v->main_if].name, v->decided_by);
  } else if (!m->is_filtered && !v->is_decided && v->ngood > 1) {
    issue_with_fix(c, TOPO_NOTE, fix,
                   "%d interfaces could carry NCCL's bootstrap (%s) and nothing on this host (no "
                   "default route, no RDMA rail) says which one reaches the other nodes; NCCL "
                   "takes %s (%s) by %s",
                   v->ngood, v->good, b->name, addr, m->rule);
  }
}

static struct topo_setting *setting(struct topo_choice *c, const char *cur, bool is_keep) {
  if (c->nsetting == TOPO_MAX_SETTINGS) return NULL;
  struct topo_setting *r = &c->settings[c->nsetting++];
  memset(r, 0, sizeof(*r));
  scopy(r->name, sizeof(r->name), "NCCL_SOCKET_IFNAME");
  scopy(r->status, sizeof(r->status), is_keep ? "keep" : cur && *cur ? "change" : "add");
  return r;
}

static void advise(const struct topo_host *h, struct topo_choice *c, const struct sock_view *v) {
  if (v->main_if < 0 || !v->is_main_ok) return; /* nothing routable to pin */
  const char *name = h->ifs.ifs[v->main_if].name, *cur = c->prefs.socket_ifname;
  bool is_set = cur && *cur, is_ok = is_set && c->sock.n > 0 && c->sock.idx[0] == v->main_if;
  const char *pin = pin_of(h, v);
  if (!is_set && (!pin[0] || (v->boot == v->main_if && v->ngood <= 1))) return;
  struct topo_setting *r = setting(c, cur, is_ok);
  if (!r) return;
  snprintf(r->value, sizeof(r->value), "=%s", name);
  if (is_set && !is_ok)
    snprintf(r->why, sizeof(r->why),
             "the current NCCL_SOCKET_IFNAME=%s %s; %s is the main "
             "interface (%s)",
             cur, c->sock.n ? "puts another interface first" : "matches no usable interface", name,
             c->main_why);
  else if (is_set)
    snprintf(r->why, sizeof(r->why), "%s is the main interface (%s)", name, c->main_why);
  else if (v->boot >= 0 && v->boot != v->main_if)
    snprintf(r->why, sizeof(r->why),
             "%s is the main interface (%s); NCCL's own choice would "
             "bootstrap over %s, by %s",
             name,
             v->is_decided ? v->decided_by
                           : "the only one "
                             "with a routable address",
             h->ifs.ifs[v->boot].name, c->nccl_sock.rule);
  else
    snprintf(r->why, sizeof(r->why),
             "%s is the main interface (%s); pinning it exactly makes "
             "every node bootstrap over the same network whatever order its %d candidate "
             "interfaces come in (a node that picks another one advertises an address its peers "
             "may not reach, and their connections to it time out)",
             name, v->decided_by, v->ngood);
}

void sockadvice_pass(const struct topo_host *h, struct topo_choice *c) {
  struct sock_view v;
  fill_view(h, c, &v);
  check_main(h, c, &v);
  check_nccl(h, c, &v);
  advise(h, c, &v);
}
