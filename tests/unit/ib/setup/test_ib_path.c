/* SPDX-License-Identifier: Apache-2.0 */
/* How an RTR's path is addressed, as NCCL does: RoCE always global with the
 * traffic class; InfiniBand by LID within a subnet, with a GRH (and the
 * remote FLID as DLID) across subnets or where the port requires one; the
 * path MTU the smaller of both ends. */
#include <stdbool.h>
#include <string.h>

#include "tap.h"
#include "transport/ib/dev/ib.h"

/* fe80::/64 style IB GIDs: prefix bytes 0-7 (FLID at 4-5, local subnet
 * prefix at 6-7), then the port GUID. */
static const uint8_t gid_a[16] = {0xfe, 0x80, 0, 0, 0, 0, 0x00, 0x01, 1, 2, 3, 4, 5, 6, 7, 8};
static const uint8_t gid_b_same[16] = {0xfe, 0x80, 0, 0, 0, 0, 0x00, 0x01, 9, 9, 9, 9, 9, 9, 9, 9};
static const uint8_t gid_b_other[16] = {0xfe, 0x80, 0, 0, 0x0a, 0x0b, 0x00, 0x02,
                                        9,    9,    9, 9, 9,    9,    9,    9};
static const uint8_t gid_b_noflid[16] = {0xfe, 0x80, 0, 0, 0, 0, 0x00, 0x02,
                                         9,    9,    9, 9, 9, 9, 9,    9};

static struct ib_path_ends ends(const uint8_t *remote) {
  struct ib_path_ends e = {.local_mtu = 4096,
                           .remote_mtu = 2048,
                           .local_gid = gid_a,
                           .remote_gid = remote,
                           .local_gid_index = 0,
                           .remote_lid = 17,
                           .sl = 3,
                           .tc = 106};
  return e;
}

static void roce(void) {
  struct ib_path_ends e = ends(gid_b_other);
  e.is_roce = true, e.local_gid_index = 3;
  struct ib_path p;
  memset(&p, 0, sizeof(p));
  CHECK(ib_path_address(&e, &p) == IB_GRH_ROCE && p.is_global && p.tc == 106 && p.sl == 3 &&
          p.sgid_index == 3 && !memcmp(p.dgid, gid_b_other, 16),
        "RoCE: global %d tc %d sl %d sgid %d", p.is_global, p.tc, p.sl, p.sgid_index);
  CHECK(p.mtu == 2048, "the smaller MTU: %d", p.mtu);
}

static void ib_same_subnet(void) {
  struct ib_path_ends e = ends(gid_b_same);
  struct ib_path p;
  CHECK(ib_path_address(&e, &p) == IB_GRH_NONE && !p.is_global && p.dlid == 17 && p.tc == 0 &&
          p.sl == 3,
        "one subnet: by LID, no GRH, no traffic class: global %d dlid %d tc %d", p.is_global,
        p.dlid, p.tc);
  e.is_grh_required = true;
  CHECK(ib_path_address(&e, &p) == IB_GRH_PORT_REQUIRES && p.is_global && p.dlid == 17,
        "the port requires a GRH: global %d dlid %d", p.is_global, p.dlid);
  e.remote_mtu = 0;
  ib_path_address(&e, &p);
  CHECK(p.mtu == 4096, "unknown remote MTU: the local one: %d", p.mtu);
}

static void ib_other_subnet(void) {
  struct ib_path_ends e = ends(gid_b_other);
  struct ib_path p;
  CHECK(ib_path_address(&e, &p) == IB_GRH_OTHER_SUBNET && p.is_global && p.dlid == 0x0a0b &&
          p.tc == 0,
        "across subnets: GRH, DLID = the remote FLID 0x0a0b: global %d dlid 0x%x", p.is_global,
        (unsigned)p.dlid);
  e = ends(gid_b_noflid);
  CHECK(ib_path_address(&e, &p) == IB_GRH_OTHER_SUBNET_NO_FLID && p.is_global && p.dlid == 17,
        "across subnets without a FLID: GRH, the LID: global %d dlid %d", p.is_global, p.dlid);
}

/* The flush queue pair's loopback: addressed as a data queue pair's, so a
 * port that requires a GRH gets one (it was by LID alone on InfiniBand). */
static void flush_self(void) {
  struct ib_path_ends e = ends(gid_b_other);
  struct ib_path p;
  CHECK(ib_path_self(&e, &p) == IB_GRH_NONE && !p.is_global && p.dlid == 17 && p.mtu == 4096 &&
          !memcmp(p.dgid, gid_a, 16),
        "InfiniBand loopback: by its own LID: global %d dlid %d mtu %d", p.is_global, p.dlid,
        p.mtu);
  e.is_grh_required = true;
  CHECK(ib_path_self(&e, &p) == IB_GRH_PORT_REQUIRES && p.is_global && !memcmp(p.dgid, gid_a, 16),
        "a port that requires a GRH: global %d", p.is_global);
  e.is_roce = true;
  CHECK(ib_path_self(&e, &p) == IB_GRH_ROCE && p.is_global, "RoCE: global %d", p.is_global);
}

int main(void) {
  TAP_CASE("RoCE: GRH with the traffic class, the smaller MTU", roce);
  TAP_CASE("InfiniBand, one subnet: by LID; GRH when the port requires it", ib_same_subnet);
  TAP_CASE("InfiniBand across subnets: GRH, routed by the remote FLID", ib_other_subnet);
  TAP_CASE("the flush queue pair's loopback: a GRH where the port requires one", flush_self);
  return tap_done();
}
