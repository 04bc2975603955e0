/* SPDX-License-Identifier: Apache-2.0 */
/* The address vector of a queue pair's RTR, as NCCL builds it. RoCE always
 * carries a global routing header (GRH) with the traffic class. On
 * InfiniBand (NCCL 2.22+) a peer whose GID has another local subnet prefix
 * (the low 16 bits of the 64-bit prefix) is reached through a router: GRH,
 * and the DLID is the remote GID's FLID (its bits 32-47) when it has one;
 * the same subnet goes by LID without a GRH unless the port says it needs
 * one (IBV_QPF_GRH_REQUIRED, NCCL 2.30). The traffic class is RoCE's only:
 * NCCL leaves it 0 in an InfiniBand GRH. The path MTU is the smaller of
 * the two ports' active MTUs. */
#include <string.h>

#include "transport/ib/dev/ib.h"

static unsigned be16_at(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }

enum ib_grh ib_path_address(const struct ib_path_ends *e, struct ib_path *p) {
  p->mtu = e->local_mtu;
  if (e->remote_mtu && e->remote_mtu < p->mtu) p->mtu = e->remote_mtu;
  memcpy(p->dgid, e->remote_gid, 16);
  p->sgid_index = e->local_gid_index;
  p->dlid = e->remote_lid;
  p->sl = e->sl;
  if (e->is_roce) {
    p->is_global = true;
    p->tc = e->tc;
    return IB_GRH_ROCE;
  }
  p->tc = 0;
  bool is_same_subnet = be16_at(e->local_gid + 6) == be16_at(e->remote_gid + 6);
  if (is_same_subnet) {
    p->is_global = e->is_grh_required;
    return p->is_global ? IB_GRH_PORT_REQUIRES : IB_GRH_NONE;
  }
  p->is_global = true;
  unsigned flid = be16_at(e->remote_gid + 4);
  if (!flid) return IB_GRH_OTHER_SUBNET_NO_FLID; /* the LID, which may not route */
  p->dlid = (int)flid;
  return IB_GRH_OTHER_SUBNET;
}

enum ib_grh ib_path_self(const struct ib_path_ends *local, struct ib_path *p) {
  struct ib_path_ends e = *local;
  e.remote_gid = e.local_gid;
  e.remote_mtu = e.local_mtu;
  return ib_path_address(&e, p);
}
