/* SPDX-License-Identifier: Apache-2.0 */
/* Does any route lead from a GID's netdev to the peer's GID address? RoCE
 * v2 resolves the destination through the source GID's netdev. With a
 * device given, the kernel treats a destination it has no route for as
 * on-link and sends ARP/ND for it there: between two planes (field story 5)
 * nobody answers and RTR times out after 1 s, while a peer on another
 * subnet of the same L2 segment answers and RTR succeeds (Linux 6.1). So a
 * route lookup that merely succeeds proves nothing, and no route is a risk,
 * not a verdict (ib_compat.c); this reads the namespace's routing table for
 * a route through that netdev. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ib/dev/ib.h"

static enum ib_route v4_route(const char *netdev, const uint8_t *dst, bool *gateway) {
  FILE *f = fopen("/proc/net/route", "re");
  if (!f) return IB_ROUTE_UNKNOWN;
  char line[512], ifn[64];
  unsigned long dest, gw, mask;
  unsigned flags;
  uint32_t d;
  memcpy(&d, dst, 4);
  int best = -1;
  if (!fgets(line, sizeof(line), f)) line[0] = 0; /* header */
  while (fgets(line, sizeof(line), f)) {
    if (sscanf(line, "%63s %lx %lx %x %*d %*d %*d %lx", ifn, &dest, &gw, &flags, &mask) != 5)
      continue;
    if (strcmp(ifn, netdev) || !(flags & 1) || (d & (uint32_t)mask) != (uint32_t)dest) continue;
    int bits = __builtin_popcount((unsigned)mask);
    if (bits > best) best = bits, *gateway = (flags & 2) != 0;
  }
  fclose(f);
  return best >= 0 ? IB_ROUTE_FOUND : IB_ROUTE_NONE;
}

/* 0, or EPROTO when h is not n bytes of hex. */
static int hexbytes(const char *h, uint8_t *out, int n) {
  for (int i = 0; i < n; i++) {
    unsigned v;
    if (sscanf(h + 2 * i, "%2x", &v) != 1) return EPROTO;
    out[i] = (uint8_t)v;
  }
  return 0;
}

static enum ib_route v6_route(const char *netdev, const uint8_t *dst, bool *gateway) {
  FILE *f = fopen("/proc/net/ipv6_route", "re");
  if (!f) return IB_ROUTE_UNKNOWN;
  char dhex[33], nhex[33], ifn[64];
  unsigned plen, flags;
  int best = -1;
  while (fscanf(f, "%32s %x %*s %*x %32s %*x %*x %*x %x %63s", dhex, &plen, nhex, &flags, ifn) ==
         5) {
    uint8_t dest[16];
    if (strcmp(ifn, netdev) || !(flags & 1) || plen > 128 || hexbytes(dhex, dest, 16)) continue;
    if (!ipaddr_prefix_equal(dest, dst, (int)plen) || (int)plen <= best) continue;
    best = (int)plen;
    *gateway = (flags & 2) != 0;
  }
  fclose(f);
  return best >= 0 ? IB_ROUTE_FOUND : IB_ROUTE_NONE;
}

enum ib_route ib_route_through(const char *netdev, const uint8_t *rgid, bool *via_gateway) {
  static const uint8_t v4pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  *via_gateway = false;
  /* A netdev of another namespace (or none) says nothing about this one. */
  if (!netdev || !netdev[0] || !if_nametoindex(netdev)) return IB_ROUTE_UNKNOWN;
  if (!memcmp(rgid, v4pfx, 12)) return v4_route(netdev, rgid + 12, via_gateway);
  if (rgid[0] == 0xfe && (rgid[1] & 0xc0) == 0x80) return IB_ROUTE_FOUND; /* link-local: on-link */
  return v6_route(netdev, rgid, via_gateway);
}
