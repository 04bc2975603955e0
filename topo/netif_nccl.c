/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL's own interface choice (ncclFindInterfaces in src/misc/socket.cc and
 * the interface walk of its OS layer), which its bootstrap and built-in
 * transports use whatever this plugin chooses:
 *  - NCCL_SOCKET_IFNAME longer than one character: that list, NCCL's
 *    grammar (topo/filter.h);
 *  - else the first of these passes that finds anything: names starting
 *    with ib; (NCCL_COMM_ID's subnet, not modelled here); anything but
 *    docker*, lo* and virbr*; docker*; lo*; virbr*.
 * Each pass walks getifaddrs: only running interfaces, IPv4 and IPv6
 * addresses of the NCCL_SOCKET_FAMILY if given, never IPv6 loopback, each
 * interface once, with the first address seen. getifaddrs lists every IPv4
 * address before any IPv6 one, so an interface with IPv4 comes before one
 * with IPv6 only, and an interface whose only address is fe80:: is taken
 * with it. Bootstrap uses the first interface. */
#include <stdio.h>
#include <string.h>

#include "topo/filter.h"
#include "topo/netif.h"

static const char *const auto_passes[] = {"ib", "^docker,lo,virbr", "docker", "lo", "virbr"};
static const char *const pass_names[] = {"the ib* preference", "interface order",
                                         "the docker* fallback", "the lo* fallback",
                                         "the virbr* fallback"};

static bool is_taken(const struct netif_nccl *m, int i) {
  for (int j = 0; j < m->n; j++)
    if (m->idx[j] == i) return true;
  return false;
}

/* One pass of NCCL's walk with the filter text: interfaces it adds. */
static int walk(const struct netif_list *l, const char *text, int family, struct netif_nccl *m) {
  struct filter f;
  char why[128];
  if (filter_parse(text, &f, why, sizeof(why))) return 0;
  int added = 0;
  static const int order[] = {AF_INET, AF_INET6};
  for (int o = 0; o < 2; o++) {
    if (family != AF_UNSPEC && family != order[o]) continue;
    for (int i = 0; i < l->n && m->n < NETIF_CHOSEN_MAX; i++) {
      const struct netif *n = &l->ifs[i];
      if (!n->up || !n->running || is_taken(m, i) || !filter_select(&f, n->name, -1)) continue;
      for (int k = 0; k < n->naddr; k++) {
        const struct ipaddr *a = &n->addr[k];
        if (a->family != order[o] || (a->family == AF_INET6 && ipaddr_is_loopback(a))) continue;
        m->idx[m->n] = i;
        m->addr[m->n++] = k;
        added++;
        break;
      }
    }
  }
  return added;
}

/* Why NCCL did not take interface i. */
static void why_not(const struct netif_list *l, int i, int family, const struct netif_nccl *m,
                    char *buf, size_t cap) {
  const struct netif *n = &l->ifs[i];
  bool has_addr = false;
  for (int k = 0; k < n->naddr; k++)
    has_addr |= (family == AF_UNSPEC || n->addr[k].family == family) &&
                !(n->addr[k].family == AF_INET6 && ipaddr_is_loopback(&n->addr[k]));
  if (!n->up || !n->running) snprintf(buf, cap, "%s", n->up ? "no carrier" : "down");
  else if (!has_addr)
    snprintf(buf, cap, "no %saddress",
             family == AF_INET    ? "IPv4 "
             : family == AF_INET6 ? "IPv6 "
                                  : "");
  else if (m->is_filtered) snprintf(buf, cap, "not selected by NCCL_SOCKET_IFNAME");
  else if (m->pass == 0) snprintf(buf, cap, "an ib* interface comes first");
  else if (!strncmp(n->name, "docker", 6) || !strncmp(n->name, "lo", 2) ||
           !strncmp(n->name, "virbr", 5))
    snprintf(buf, cap, "docker*, lo* and virbr* only when nothing else qualifies");
  else snprintf(buf, cap, "a later fallback");
}

int netif_nccl_choose(const struct netif_list *l, const char *ifname, int family,
                      struct netif_nccl *m) {
  memset(m, 0, sizeof(*m));
  m->pass = -1;
  m->is_filtered = ifname && strlen(ifname) > 1; /* NCCL ignores a one-character value */
  if (m->is_filtered) {
    walk(l, ifname, family, m);
    snprintf(m->rule, sizeof(m->rule), "NCCL_SOCKET_IFNAME=%s", ifname);
  } else {
    for (int p = 0; p < 5 && !m->n; p++)
      if (walk(l, auto_passes[p], family, m)) m->pass = p;
    snprintf(m->rule, sizeof(m->rule), "%s", m->pass >= 0 ? pass_names[m->pass] : "nothing");
  }
  for (int i = 0; i < l->n && i < NETIF_MAX; i++)
    if (!is_taken(m, i)) why_not(l, i, family, m, m->why[i], sizeof(m->why[i]));
  return m->n;
}

int netif_nccl_position(const struct netif_nccl *m, int i) {
  for (int j = 0; j < m->n; j++)
    if (m->idx[j] == i) return j;
  return -1;
}
