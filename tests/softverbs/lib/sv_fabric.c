/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: where a port lives on the network.
 *
 * RoCE ports are reached through their GIDs' IP addresses. InfiniBand ports
 * are reached by LID inside one fabric: the fabric is the local fixture host
 * plus the hosts named in SOFTVERBS_FABRIC, and a LID maps to the address of
 * its port's IPoIB interface (the netdev on the same PCI function) as the
 * host's ifaddrs file lists it. A port runs in "net" mode (real sockets from
 * its interface, so the namespace's routing decides reachability) when its
 * interface carries its address in this network namespace, or when
 * SOFTVERBS_WIRE=net; otherwise in "loopback" mode (everything over
 * 127.0.0.1, every port reaches every other). */
#include "sv.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool parse_addr(const char *text, struct sockaddr_storage *ss) {
  char buf[INET6_ADDRSTRLEN + 8];
  snprintf(buf, sizeof buf, "%s", text);
  char *slash = strchr(buf, '/');
  if (slash) *slash = 0;
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in *in = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET, buf, &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
    return true;
  }
  if (inet_pton(AF_INET6, buf, &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    return true;
  }
  return false;
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr *b) {
  if (a->ss_family != b->sa_family) return false;
  if (a->ss_family == AF_INET)
    return !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                   &((const struct sockaddr_in *)b)->sin_addr, 4);
  if (a->ss_family == AF_INET6)
    return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                   &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
  return false;
}

/* The interface's first IPv4 address in <root>/../ifaddrs, else its first
 * IPv6 one that is not link-local. */
static int ifaddrs_lookup(const char *root, const char *ifname, struct sockaddr_storage *out) {
  char path[PATH_MAX], line[1024];
  snprintf(path, sizeof path, "%s/../ifaddrs", root);
  FILE *f = fopen(path, "re");
  if (!f) return errno;
  int found = ENOENT;
  while (found && fgets(line, sizeof line, f)) {
    char *save = NULL, *name = strtok_r(line, " \t\n", &save);
    if (!name || strcmp(name, ifname) || !strtok_r(NULL, " \t\n", &save)) continue;
    struct sockaddr_storage v6 = {0}, ss;
    for (char *tok; (tok = strtok_r(NULL, " \t\n", &save)) != NULL;) {
      if (!parse_addr(tok, &ss)) continue;
      if (ss.ss_family == AF_INET) {
        *out = ss;
        found = 0;
        break;
      }
      if (!v6.ss_family && !IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)&ss)->sin6_addr))
        v6 = ss;
    }
    if (found && v6.ss_family) {
      *out = v6;
      found = 0;
    }
  }
  fclose(f);
  return found;
}

/* The IPoIB netdev of an IB port: a class/net entry on the same PCI function. */
void sv_port_find_ipoib(const char *root, const char *devname, struct sv_port *p) {
  char path[PATH_MAX], want[PATH_MAX], got[PATH_MAX];
  snprintf(path, sizeof path, "%s/class/infiniband/%s/device", root, devname);
  if (!realpath(path, want)) return;
  snprintf(path, sizeof path, "%s/class/net", root);
  DIR *d = opendir(path);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/class/net/%s/device", root, e->d_name);
    if (!realpath(path, got) || strcmp(got, want)) continue;
    snprintf(p->netdev, sizeof p->netdev, "%s", e->d_name);
    ifaddrs_lookup(root, e->d_name, &p->ipoib);
    break;
  }
  closedir(d);
}

static bool iface_has(struct ifaddrs *list, const char *name, const struct sockaddr_storage *addr) {
  for (struct ifaddrs *i = list; i; i = i->ifa_next)
    if (i->ifa_addr && !strcmp(i->ifa_name, name) && same_addr(addr, i->ifa_addr)) return true;
  return false;
}

bool sv_port_wants_net(struct sv_port *p) {
  const char *mode = sv_env("SOFTVERBS_WIRE");
  if (mode && !strcmp(mode, "net")) return true;
  if (mode && !strcmp(mode, "loopback")) return false;
  struct ifaddrs *list = NULL;
  if (getifaddrs(&list)) return false;
  bool net = false;
  if (p->link_layer == IBV_LINK_LAYER_INFINIBAND) {
    net = p->netdev[0] && p->ipoib.ss_family && iface_has(list, p->netdev, &p->ipoib);
  } else {
    for (int i = 0; i < p->ngids && !net; i++) {
      struct sockaddr_storage ss;
      if (p->gids[i].ndev[0] && sv_gid_to_addr(&p->gids[i].gid, &ss))
        net = iface_has(list, p->gids[i].ndev, &ss);
    }
  }
  freeifaddrs(list);
  return net;
}

static int lid_in_root(const char *root, uint16_t lid, struct sockaddr_storage *out) {
  struct sv_device **devs = NULL;
  int n = 0, found = ENOENT;
  if (sv_fixture_scan(root, &devs, &n)) return ENOENT;
  for (int i = 0; i < n; i++) {
    for (int j = 0; found && j < devs[i]->nports; j++) {
      struct sv_port *p = &devs[i]->ports[j];
      uint32_t span = 1u << p->lmc;
      if (p->link_layer != IBV_LINK_LAYER_INFINIBAND || !p->ipoib.ss_family) continue;
      if (lid >= p->lid && lid < p->lid + span) {
        *out = p->ipoib;
        found = 0;
      }
    }
    sv_device_put(devs[i]);
  }
  free(devs);
  return found;
}

/* The address of the port that owns a LID in this fabric; ENOENT if none. */
int sv_fabric_lid(uint16_t lid, struct sockaddr_storage *out) {
  if (!lid_in_root(sv_sysfs_root(), lid, out)) return 0;
  const char *fabric = sv_env("SOFTVERBS_FABRIC");
  if (!fabric) return ENOENT;
  char *copy = strdup(fabric), *save = NULL;
  int found = ENOENT;
  for (char *root = strtok_r(copy, ":", &save); root && found; root = strtok_r(NULL, ":", &save))
    found = lid_in_root(root, lid, out);
  free(copy);
  return found;
}
