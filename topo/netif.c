/* SPDX-License-Identifier: Apache-2.0 */
#include "topo/netif.h"

#include <errno.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/knobs.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "topo/filter.h"
#include "topo/sysfs.h"

/* The interface called name, added when new; NULL past NETIF_MAX (*err 0)
 * or out of memory (*err ENOMEM). */
static struct netif *get_or_add(struct netif_list *l, const char *name, int *err) {
  *err = 0;
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->ifs[i].name, name)) return &l->ifs[i];
  if (l->n == NETIF_MAX) return NULL;
  struct netif *grown = realloc(l->ifs, (size_t)(l->n + 1) * sizeof(*grown));
  if (!grown) {
    *err = ENOMEM;
    return NULL;
  }
  l->ifs = grown;
  struct netif *n = &l->ifs[l->n++];
  memset(n, 0, sizeof(*n));
  snprintf(n->name, sizeof(n->name), "%s", name);
  n->numa = -1;
  return n;
}

static void add_addr(struct netif *n, const struct ipaddr *a) {
  if (n->naddr < NETIF_ADDR_MAX) n->addr[n->naddr++] = *a;
}

static void warn_no_memory(void) {
  WARN("cannot list network interfaces: out of memory for the list (%d interfaces)", NETIF_MAX);
}

static int discover_live(struct netif_list *l) {
  struct ifaddrs *ifa = NULL;
  if (getifaddrs(&ifa) != 0) {
    int err = errno;
    WARN("cannot list network interfaces: getifaddrs failed: %s", strerror(err));
    return err;
  }
  int err = 0;
  for (struct ifaddrs *p = ifa; p; p = p->ifa_next) {
    struct netif *n = get_or_add(l, p->ifa_name, &err);
    if (!n) break;
    n->up = !!(p->ifa_flags & IFF_UP);
    n->running = !!(p->ifa_flags & IFF_RUNNING);
    n->loopback = !!(p->ifa_flags & IFF_LOOPBACK);
    struct ipaddr a;
    if (p->ifa_addr && ipaddr_from_sockaddr(&a, p->ifa_addr, p->ifa_netmask) == 0) add_addr(n, &a);
  }
  freeifaddrs(ifa);
  if (err) {
    warn_no_memory();
    return err;
  }
  snprintf(l->source, sizeof(l->source), "live");
  return 0;
}

int netif_load_file(struct netif_list *l, const char *path) {
  FILE *f = fopen(path, "re");
  if (!f) {
    int err = errno;
    WARN("cannot read the interface file %s: %s", path, strerror(err));
    return err;
  }
  char line[1024];
  int lineno = 0, err = 0;
  while (fgets(line, sizeof(line), f)) {
    lineno++;
    char *save = NULL, *tok = strtok_r(line, " \t\n", &save);
    if (!tok || tok[0] == '#') continue;
    struct netif *n = get_or_add(l, tok, &err);
    if (!n) break;
    char *state = strtok_r(NULL, " \t\n", &save);
    if (state && !strcmp(state, "up")) n->up = n->running = 1;
    else if (state && !strcmp(state, "nocarrier")) n->up = 1;
    else if (!state || strcmp(state, "down"))
      WARN("%s line %d: state '%s' of %s is not up, down or nocarrier", path, lineno,
           state ? state : "", n->name);
    n->loopback = !strcmp(n->name, "lo");
    while ((tok = strtok_r(NULL, " \t\n", &save))) {
      struct ipaddr a;
      if (ipaddr_parse(&a, tok) == 0) add_addr(n, &a);
      else WARN("%s line %d: '%s' is not an address/prefix", path, lineno, tok);
    }
  }
  fclose(f);
  if (err) {
    warn_no_memory();
    return err;
  }
  snprintf(l->source, sizeof(l->source), "%s", path);
  return 0;
}

void netif_add_sysfs(struct netif_list *l) {
  for (int i = 0; i < l->n; i++) {
    struct netif *n = &l->ifs[i];
    long v;
    if (sysfs_read_long(&v, "class/net/%s/mtu", n->name) == 0) n->mtu = (int)v;
    /* Virtual interfaces answer EINVAL or -1: unknown. */
    if (sysfs_read_long(&v, "class/net/%s/speed", n->name) == 0 && v > 0) n->speed_mbps = (int)v;
    if (sysfs_realpath(n->pci_path, sizeof(n->pci_path), "class/net/%s/device", n->name) != 0)
      n->pci_path[0] = 0;
    if (sysfs_read_long(&v, "class/net/%s/device/numa_node", n->name) == 0) n->numa = (int)v;
  }
}

/* Where addresses come from: NCCL_DIAG_IFADDRS = live | <file> | auto, where
 * auto reads the ifaddrs file beside an overridden sysfs root (a fixture). */
int netif_discover(struct netif_list *l) {
  memset(l, 0, sizeof(*l));
  const char *src = knob_str(K_DIAG_IFADDRS);
  int r;
  if (src && strcmp(src, "auto") && strcmp(src, "live")) {
    r = netif_load_file(l, src);
  } else {
    char beside[PATH_MAX];
    const char *root = sysfs_root();
    snprintf(beside, sizeof(beside), "%s/../ifaddrs", root);
    if (src && !strcmp(src, "auto") && strcmp(root, "/sys") && access(beside, R_OK) == 0)
      r = netif_load_file(l, beside);
    else r = discover_live(l);
  }
  if (r == 0) netif_add_sysfs(l);
  return r;
}

void netif_list_free(struct netif_list *l) {
  free(l->ifs);
  l->ifs = NULL;
  l->n = 0;
}

enum skip_class {
  SKIP_NONE,
  SKIP_DOCKER,
  SKIP_VETH,
  SKIP_VIRBR,
  SKIP_LINKLOCAL,
  SKIP_LOOPBACK,
  SKIP_CLASSES
};

static enum skip_class skip_class_of(const struct netif *n, bool is_link_local_only) {
  if (n->loopback || !strncmp(n->name, "lo", 2)) return SKIP_LOOPBACK;
  if (!strncmp(n->name, "docker", 6)) return SKIP_DOCKER;
  if (!strncmp(n->name, "veth", 4)) return SKIP_VETH;
  if (!strncmp(n->name, "virbr", 5)) return SKIP_VIRBR;
  if (is_link_local_only) return SKIP_LINKLOCAL;
  return SKIP_NONE;
}

static const char *skip_reason[SKIP_CLASSES] = {
  "",
  "container bridge",
  "veth (container end)",
  "libvirt bridge",
  "link-local address only",
  "loopback",
};

/* The address an interface is used with: first of the family, preferring
 * global over link-local and IPv4 over IPv6 (as getifaddrs orders them). */
static int pick_addr(const struct netif *n, int family, bool *is_link_local_only) {
  int best = -1, best_rank = 99;
  *is_link_local_only = false;
  for (int i = 0; i < n->naddr; i++) {
    const struct ipaddr *a = &n->addr[i];
    if (family != AF_UNSPEC && a->family != family) continue;
    if (a->family == AF_INET6 && ipaddr_is_loopback(a)) continue;
    int rank = (ipaddr_is_link_local(a) ? 10 : 0) + (a->family == AF_INET6 ? 1 : 0);
    if (rank < best_rank) best = i, best_rank = rank;
  }
  if (best >= 0 && ipaddr_is_link_local(&n->addr[best])) *is_link_local_only = true;
  return best;
}

static int choose_filtered(const struct netif_list *l, const char *ifname, int family,
                           struct netif_choice *c) {
  struct filter f;
  char why[256];
  if (filter_parse(ifname, &f, why, sizeof(why))) {
    snprintf(c->error, sizeof(c->error),
             "NCCL_SOCKET_IFNAME=\"%s\" is not valid: %s. Accepted: a comma list of interface "
             "name prefixes, '=' for exact names, '^' to exclude (e.g. bond0 or ^docker,lo)",
             ifname, why);
    return 0;
  }
  for (int i = 0; i < l->n; i++) {
    const struct netif *n = &l->ifs[i];
    if (!filter_select(&f, n->name, -1)) {
      snprintf(c->why[i], sizeof(c->why[i]), "%s NCCL_SOCKET_IFNAME",
               f.is_exclude ? "excluded by" : "not in");
      continue;
    }
    bool ll;
    int a = pick_addr(n, family, &ll);
    if (!n->up || !n->running) {
      snprintf(c->why[i], sizeof(c->why[i]), "%s", n->up ? "no carrier" : "down");
    } else if (a < 0) {
      snprintf(c->why[i], sizeof(c->why[i]), "no %saddress",
               family == AF_INET    ? "IPv4 "
               : family == AF_INET6 ? "IPv6 "
                                    : "");
    } else if (c->n < NETIF_CHOSEN_MAX) {
      c->why[i][0] = 0;
      c->primary[c->n] = a;
      c->idx[c->n++] = i;
    } else {
      snprintf(c->why[i], sizeof(c->why[i]), "more than %d interfaces", NETIF_CHOSEN_MAX);
    }
  }
  return c->n;
}

static int choose_auto(const struct netif_list *l, int family, struct netif_choice *c) {
  enum skip_class cls[NETIF_MAX];
  int addr[NETIF_MAX];
  /* Pass 0 takes IPoIB (ib*) as NCCL does, pass 1 the rest of the regular
   * interfaces, then the normally skipped classes in order, only while
   * nothing has been chosen. */
  for (int i = 0; i < l->n; i++) {
    const struct netif *n = &l->ifs[i];
    bool ll;
    addr[i] = pick_addr(n, family, &ll);
    cls[i] = skip_class_of(n, ll);
    if (!n->up || !n->running)
      snprintf(c->why[i], sizeof(c->why[i]), "%s", n->up ? "no carrier" : "down");
    else if (addr[i] < 0)
      snprintf(c->why[i], sizeof(c->why[i]), "no %saddress",
               family == AF_INET    ? "IPv4 "
               : family == AF_INET6 ? "IPv6 "
                                    : "");
    else if (cls[i] != SKIP_NONE) snprintf(c->why[i], sizeof(c->why[i]), "%s", skip_reason[cls[i]]);
    else c->why[i][0] = 0;
  }
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < l->n; i++) {
      if (c->why[i][0] || c->n == NETIF_CHOSEN_MAX) continue;
      bool is_ib = !strncmp(l->ifs[i].name, "ib", 2);
      if ((pass == 0) != is_ib) continue;
      c->primary[c->n] = addr[i];
      c->idx[c->n++] = i;
    }
  }
  for (int k = SKIP_DOCKER; k < SKIP_CLASSES && c->n == 0; k++) {
    for (int i = 0; i < l->n; i++) {
      const struct netif *n = &l->ifs[i];
      if (cls[i] != (enum skip_class)k || !n->up || !n->running || addr[i] < 0) continue;
      if (c->n == NETIF_CHOSEN_MAX) break;
      c->primary[c->n] = addr[i];
      c->idx[c->n++] = i;
      snprintf(c->why[i], sizeof(c->why[i]), "%s", "");
      c->is_fallback = true;
    }
  }
  for (int i = 0; i < l->n; i++)
    for (int j = 0; j < c->n; j++)
      if (c->idx[j] == i) c->why[i][0] = 0;
  return c->n;
}

int netif_choose(const struct netif_list *l, const char *ifname, int family,
                 struct netif_choice *c) {
  memset(c, 0, sizeof(*c));
  c->is_filtered = ifname && *ifname;
  int n = c->is_filtered ? choose_filtered(l, ifname, family, c) : choose_auto(l, family, c);
  if (n == 0 && !c->error[0]) {
    char have[700];
    netif_list_str(l, have, sizeof(have));
    if (c->is_filtered)
      snprintf(c->error, sizeof(c->error),
               "no usable interface matches NCCL_SOCKET_IFNAME=%s%s%s; this host has %s. Set "
               "NCCL_SOCKET_IFNAME to one of these on this node",
               ifname, family != AF_UNSPEC ? " with NCCL_SOCKET_FAMILY=" : "",
               family == AF_INET    ? "AF_INET"
               : family == AF_INET6 ? "AF_INET6"
                                    : "",
               have);
    else
      snprintf(c->error, sizeof(c->error),
               "no network interface is up with an address; this host has %s. Bring an "
               "interface up or set NCCL_SOCKET_IFNAME",
               have);
  }
  return n;
}

static void first_addr_str(const struct netif *n, int idx, char *buf, size_t cap) {
  if (idx < 0 || idx >= n->naddr) {
    snprintf(buf, cap, "no address");
    return;
  }
  ipaddr_cidr(&n->addr[idx], buf, cap);
}

void netif_list_str(const struct netif_list *l, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < l->n; i++) {
    const struct netif *n = &l->ifs[i];
    char a[64];
    bool ll;
    first_addr_str(n, pick_addr(n, AF_UNSPEC, &ll), a, sizeof(a));
    o = strbuf_cat(buf, cap, o, "%s%s (%s%s)", i ? ", " : "", n->name, a,
                   !n->up        ? ", down"
                   : !n->running ? ", no carrier"
                                 : "");
  }
  if (l->n == 0) strbuf_cat(buf, cap, 0, "no interfaces at all");
}

void netif_choice_summary(const struct netif_list *l, const struct netif_choice *c, char *buf,
                          size_t cap) {
  size_t o = strbuf_cat(buf, cap, 0, "using");
  for (int j = 0; j < c->n; j++) {
    const struct netif *n = &l->ifs[c->idx[j]];
    char a[64];
    first_addr_str(n, c->primary[j], a, sizeof(a));
    o = strbuf_cat(buf, cap, o, "%s %s (%s)", j ? "," : "", n->name, a);
  }
  if (c->n == 0) o = strbuf_cat(buf, cap, o, " nothing");
  if (c->is_fallback) o = strbuf_cat(buf, cap, o, " because nothing better is up");
  int first = 1;
  for (int i = 0; i < l->n; i++) {
    if (!c->why[i][0]) continue;
    o = strbuf_cat(buf, cap, o, "%s%s (%s)", first ? "; not " : ", ", l->ifs[i].name, c->why[i]);
    first = 0;
  }
}

const struct netif *netif_on_subnet(const struct netif_list *l, const struct ipaddr *a,
                                    int *addr_idx) {
  for (int i = 0; i < l->n; i++) {
    const struct netif *n = &l->ifs[i];
    if (!n->up) continue;
    for (int k = 0; k < n->naddr; k++) {
      if (n->addr[k].prefix < 0 || ipaddr_is_loopback(&n->addr[k])) continue;
      if (ipaddr_in_subnet(&n->addr[k], a)) {
        if (addr_idx) *addr_idx = k;
        return n;
      }
    }
  }
  return NULL;
}

const struct netif *netif_with_addr(const struct netif_list *l, const struct ipaddr *a) {
  for (int i = 0; i < l->n; i++)
    for (int k = 0; k < l->ifs[i].naddr; k++) {
      const struct ipaddr *b = &l->ifs[i].addr[k];
      if (b->family == a->family && !memcmp(b->bytes, a->bytes, 16)) return &l->ifs[i];
    }
  return NULL;
}

void netif_default_route(const struct netif_list *l, char *ifname, size_t cap) {
  char path[PATH_MAX + 8] = "/proc/net/route";
  ifname[0] = 0;
  if (strcmp(l->source, "live")) {
    const char *slash = strrchr(l->source, '/');
    int dir = slash ? (int)(slash - l->source) : 0;
    snprintf(path, sizeof(path), "%.*s%sroute", dir, l->source, slash ? "/" : "");
  }
  FILE *f = fopen(path, "re");
  if (!f) return;
  char line[256];
  while (fgets(line, sizeof(line), f)) {
    char name[IF_NAMESIZE + 1];
    unsigned long dst, gw, flags, ref, use, metric, mask;
    if (sscanf(line, "%16s %lx %lx %lx %lu %lu %lu %lx", name, &dst, &gw, &flags, &ref, &use,
               &metric, &mask) == 8 &&
        dst == 0 && mask == 0) {
      snprintf(ifname, cap, "%s", name);
      break;
    }
  }
  fclose(f);
}

/* Whether interface i is one other nodes can reach: up, not loopback, not
 * a container or VM bridge, with an address of family (AF_UNSPEC: any)
 * that routes beyond its link; the address's index, or -1. */
static int routable_addr(const struct netif *n, int family) {
  if (!n->up || n->loopback || !strncmp(n->name, "docker", 6) || !strncmp(n->name, "virbr", 5))
    return -1;
  for (int k = 0; k < n->naddr; k++)
    if (ipaddr_is_routable(&n->addr[k]) && (family == AF_UNSPEC || n->addr[k].family == family))
      return k;
  return -1;
}

int netif_routable_pick(const struct netif_list *l, const char *skip, int *addr_idx,
                        bool *has_default) {
  char dflt[IF_NAMESIZE + 1];
  netif_default_route(l, dflt, sizeof(dflt));
  *has_default = false;
  for (int pass = 0; pass < 3; pass++)
    for (int i = 0; i < l->n; i++) {
      const struct netif *n = &l->ifs[i];
      if (skip && !strcmp(n->name, skip)) continue;
      if (pass == 0 && strcmp(n->name, dflt)) continue;
      int k = routable_addr(n, pass == 2 ? AF_UNSPEC : AF_INET);
      if (k < 0) continue;
      *addr_idx = k;
      *has_default = pass == 0;
      return i;
    }
  return -1;
}
