/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: port attributes, GID and P_Key tables. */
#include "sv.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/types.h>

#undef ibv_query_port

static struct sv_port *ctx_port(struct ibv_context *context, unsigned port) {
  return sv_device_port(sv_ctx_of(context)->dev, (int)port);
}

/* The exported symbol takes the legacy struct (without flags and
 * port_cap_flags2): write only those fields. The header's inline wrapper
 * zeroes the whole struct before calling. */
SV_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
                             struct _compat_ibv_port_attr *compat) {
  struct ibv_port_attr *a = (struct ibv_port_attr *)compat;
  struct sv_device *d = sv_ctx_of(context)->dev;
  struct sv_port *p = ctx_port(context, port_num);
  if (!p) return EINVAL;
  memset(a, 0, offsetof(struct ibv_port_attr, flags));
  bool fault = sv_fault_port_down(d->ibdev.name, p->num) || atomic_load(&p->is_cut);
  a->state = fault ? IBV_PORT_DOWN : (enum ibv_port_state)p->state;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = sv_hostcaps_active_mtu(d->ibdev.name, p->num, p->active_mtu);
  a->gid_tbl_len = p->ngids;
  a->port_cap_flags = p->cap_flags;
  a->max_msg_sz = 1u << 31;
  a->pkey_tbl_len = (uint16_t)p->npkeys;
  a->lid = p->lid;
  a->sm_lid = p->sm_lid;
  a->lmc = p->lmc;
  a->max_vl_num = p->link_layer == IBV_LINK_LAYER_INFINIBAND ? 4 : 1;
  a->subnet_timeout = 18;
  a->active_width = p->width;
  a->active_speed = p->speed;
  a->phys_state = fault ? 3 /* Disabled */ : p->phys_state;
  a->link_layer = p->link_layer;
  return 0;
}

/* Like rdma-core: an empty entry reads as zeros; one the namespace cannot
 * read fails with EINVAL. */
SV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
                            union ibv_gid *gid) {
  struct sv_port *p = ctx_port(context, port_num);
  if (!p || index < 0 || index >= p->ngids || p->gids[index].gid_unreadable) {
    errno = EINVAL;
    return -1;
  }
  *gid = p->gids[index].gid;
  return 0;
}

static int gid_entry(struct sv_port *p, uint32_t index, struct ibv_gid_entry *e) {
  if (index >= (uint32_t)p->ngids) return EINVAL;
  const struct sv_gid *g = &p->gids[index];
  if (g->gid_unreadable || sv_gid_is_zero(&g->gid) || g->type < 0) return ENODATA;
  memset(e, 0, sizeof *e);
  e->gid = g->gid;
  e->gid_index = index;
  e->port_num = p->num;
  e->gid_type = (uint32_t)g->type;
  e->ndev_ifindex = g->ndev[0] ? if_nametoindex(g->ndev) : 0;
  return 0;
}

SV_EXPORT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
                                struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size) {
  struct sv_port *p = ctx_port(context, port_num);
  struct ibv_gid_entry e;
  if (!p || flags || entry_size < sizeof e) return EINVAL;
  int err = gid_entry(p, gid_index, &e);
  if (!err) memcpy(entry, &e, sizeof e);
  return err;
}

SV_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
                                       size_t max_entries, uint32_t flags, size_t entry_size) {
  struct sv_device *d = sv_ctx_of(context)->dev;
  if (flags || entry_size < sizeof *entries) return -EINVAL;
  size_t n = 0;
  for (int i = 0; i < d->nports; i++) {
    for (int g = 0; g < d->ports[i].ngids; g++) {
      struct ibv_gid_entry e;
      if (gid_entry(&d->ports[i], (uint32_t)g, &e)) continue;
      if (n == max_entries) return -EINVAL;
      memcpy((char *)entries + n++ * entry_size, &e, sizeof e);
    }
  }
  return (ssize_t)n;
}

SV_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
                             __be16 *pkey) {
  struct sv_port *p = ctx_port(context, port_num);
  if (!p || index < 0 || index >= p->npkeys) {
    errno = EINVAL;
    return -1;
  }
  *pkey = htobe16(p->pkeys[index]);
  return 0;
}

SV_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey) {
  struct sv_port *p = ctx_port(context, port_num);
  for (int i = 0; p && i < p->npkeys; i++)
    if (htobe16(p->pkeys[i]) == pkey) return i;
  errno = ENOENT;
  return -1;
}
