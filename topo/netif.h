/* SPDX-License-Identifier: Apache-2.0 */
/* Network interfaces: discovery (live getifaddrs, or a fixture's ifaddrs
 * file) plus sysfs facts, and the choice of the interfaces TCP traffic uses,
 * with the reason each other interface was not chosen. */
#ifndef DIAG_TOPO_NETIF_H
#define DIAG_TOPO_NETIF_H

#include <limits.h>
#include <net/if.h>
#include <stdbool.h>

#include "common/addr.h"

#define NETIF_MAX 64
#define NETIF_ADDR_MAX 8
#define NETIF_CHOSEN_MAX 16

struct netif {
  char name[IF_NAMESIZE];
  int up, running, loopback;
  int naddr;
  struct ipaddr addr[NETIF_ADDR_MAX];
  int mtu;
  int speed_mbps;          /* 0 = unknown */
  char pci_path[PATH_MAX]; /* "" for virtual interfaces */
  int numa;                /* -1 unknown */
};

struct netif_list {
  int n;
  struct netif *ifs;     /* n of them, at most NETIF_MAX */
  char source[PATH_MAX]; /* "live" or the file read */
};

/* Fills *l (its previous content is ignored): 0, or an errno with a WARN
 * already logged. The list owns memory: netif_list_free() releases it. */
int netif_discover(struct netif_list *l);
void netif_list_free(struct netif_list *l);
/* Parse an ifaddrs file ("<if> up|down|nocarrier [addr/prefix]..." lines). */
int netif_load_file(struct netif_list *l, const char *path);
/* Fill mtu/speed/pci/numa from sysfs for every interface. */
void netif_add_sysfs(struct netif_list *l);

struct netif_choice {
  int n;
  int idx[NETIF_CHOSEN_MAX];     /* chosen interfaces, in preference order */
  int primary[NETIF_CHOSEN_MAX]; /* index into addr[] of each one's address */
  char why[NETIF_MAX][96];       /* "" when chosen, else why not */
  bool is_fallback;              /* auto choice had to use a normally skipped interface */
  bool is_filtered;              /* NCCL_SOCKET_IFNAME was given */
  char error[1024];              /* set when nothing is usable: what and how to fix */
};

/* ifname: NCCL_SOCKET_IFNAME text or NULL (auto). family: AF_INET, AF_INET6
 * or AF_UNSPEC. Returns the number chosen (0 with c->error set). */
int netif_choose(const struct netif_list *l, const char *ifname, int family,
                 struct netif_choice *c);

/* NCCL's own choice (topo/netif_nccl.c), which its bootstrap and built-in
 * transports make whatever this plugin chooses; bootstrap takes the first. */
struct netif_nccl {
  int n;
  int idx[NETIF_CHOSEN_MAX];  /* interfaces, in NCCL's order */
  int addr[NETIF_CHOSEN_MAX]; /* index into addr[] of the address NCCL uses */
  bool is_filtered;           /* NCCL_SOCKET_IFNAME decided */
  int pass;                   /* automatic: 0 ib*, 1 the rest, 2 docker*, 3 lo*, 4 virbr*; -1 */
  char rule[96];              /* what decided, in words: "the ib* preference", ... */
  char why[NETIF_MAX][64];    /* "" when taken, else why not */
};
/* ifname: NCCL_SOCKET_IFNAME or NULL; family as for netif_choose. Returns
 * how many NCCL takes. */
int netif_nccl_choose(const struct netif_list *l, const char *ifname, int family,
                      struct netif_nccl *m);
/* Interface i's place in NCCL's order, or -1. */
int netif_nccl_position(const struct netif_nccl *m, int i);

/* One line: "using eth0 (10.0.0.1/24); not lo (loopback), docker0 (...)". */
void netif_choice_summary(const struct netif_list *l, const struct netif_choice *c, char *buf,
                          size_t cap);
/* "enp0s1 (10.0.2.15/24), lo (127.0.0.1/8)": what exists, for messages. */
void netif_list_str(const struct netif_list *l, char *buf, size_t cap);

/* The interface of the IPv4 default route ("" when none is known): a hint
 * for which interface is the host's main network. Live hosts read
 * /proc/net/route; an interface file may have a copy of it beside it,
 * named route. */
void netif_default_route(const struct netif_list *l, char *ifname, size_t cap);
/* The interface other nodes most likely reach this host through, for the
 * fix of a setting that selects none: up, not loopback or a container
 * bridge, with a routable address; the default route's interface first,
 * then one with IPv4, then one with IPv6. skip (or NULL) is left out. Its
 * index and, in *addr_idx, its address's; -1 when none qualifies. */
int netif_routable_pick(const struct netif_list *l, const char *skip, int *addr_idx,
                        bool *has_default);
/* The interface that has address a itself (or NULL). */
const struct netif *netif_with_addr(const struct netif_list *l, const struct ipaddr *a);
/* The interface owning an address in the same subnet as a (or NULL). */
const struct netif *netif_on_subnet(const struct netif_list *l, const struct ipaddr *a,
                                    int *addr_idx);

#endif
