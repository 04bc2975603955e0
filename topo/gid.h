/* SPDX-License-Identifier: Apache-2.0 */
/* GIDs: parsing, classification, and the choice of a port's GID index.
 * Pure functions over a table of entries (struct topo_gid), tested against
 * captured real tables.
 *
 * RoCE, automatic (NCCL_IB_GID_INDEX=-1): every populated entry is either
 * rejected with its reason or scored; the best score wins, the lowest index
 * breaking ties (the entry NCCL's own scan would settle on). Rejected:
 * link-local (fe80::/64, never routed), a family other than
 * NCCL_IB_ADDR_FAMILY, outside NCCL_IB_ADDR_RANGE, a RoCE version other than
 * NCCL_IB_ROCE_VERSION_NUM, an unreadable type (a container that does not map
 * the entry: NCCL skips it too), a netdev that is down. Score: +4 when the
 * address is configured on an interface here (its subnet is known), +2 when
 * the netdev is the port's own rather than a VLAN or macvlan on top of it.
 * With nothing left the port is refused, with every entry's reason and the
 * knob that would have made one usable.
 *
 * RoCE, forced (NCCL_IB_GID_INDEX>=0): used as given, as NCCL does, with a
 * warning when the entry is missing, empty or link-local (errors: RTR or
 * routing will fail), or IPv6 under AF_INET, RoCE v1, of unreadable type, or
 * on a netdev that is down (warnings).
 *
 * InfiniBand: index 0, or 1 when entry 1 carries a routable FLID, as NCCL;
 * NCCL_IB_GID_INDEX is ignored there. */
#ifndef DIAG_TOPO_GID_H
#define DIAG_TOPO_GID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/addr.h"
#include "topo/topo.h"

struct gid_prefs {
  int family;       /* AF_INET or AF_INET6 */
  int roce_version; /* 1 or 2 */
  bool has_range;
  struct ipaddr range; /* NCCL_IB_ADDR_RANGE, when has_range */
  int forced_index;    /* NCCL_IB_GID_INDEX, -1 = automatic */
};

/* "fe80:0000:...:3456" (sysfs) or any inet_pton form. 0 or EINVAL. */
int gid_parse(const char *text, uint8_t raw[16]);
/* Compact form: "::ffff:10.1.2.5", "fe80::ba3f:d2ff:fe12:3456". */
void gid_str(const uint8_t raw[16], char *buf, size_t cap);
/* "IB/RoCE v1" and "RoCE v1" -> V1, "RoCE v2" -> V2, else UNKNOWN. */
enum gid_type gid_type_parse(const char *text);

bool gid_is_zero(const uint8_t raw[16]);
bool gid_is_link_local(const uint8_t raw[16]);
/* IPv4-mapped (::ffff:a.b.c.d) or its multicast form: AF_INET; else AF_INET6. */
int gid_family(const uint8_t raw[16]);
/* The IP address inside a RoCE GID (prefix -1). */
void gid_to_ipaddr(const uint8_t raw[16], struct ipaddr *a);
bool gid_in_range(const uint8_t raw[16], const struct ipaddr *range);

/* Chooses for a RoCE port. tbl: the populated entries, tbl_len: the table's
 * length (a forced index at or past it is missing). Fills *out, whose rejects
 * must have room for n entries (NULL: the rejected entries' reasons are not
 * kept); returns the chosen index or -1. */
int gid_pick_roce(const struct topo_gid *tbl, int n, int tbl_len, const struct gid_prefs *p,
                  struct gid_pick *out);
int gid_pick_ib(const struct topo_gid *tbl, int n, int forced, struct gid_pick *out);

/* NCCL's built-in automatic choice (2.21+), reproduced to tell the user
 * when it would pick something else (it falls back to 0, usually link-local,
 * when nothing qualifies). */
int gid_nccl_auto(const struct topo_gid *tbl, int n, int tbl_len, const struct gid_prefs *p);

#endif
