/* SPDX-License-Identifier: Apache-2.0 */
/* Where a connection whose port failed may move (ib_failover.c). NCCL
 * moves only among the ports of a virtual NIC (makeVDevice); a connection
 * on a single port simply failed. Here a port of the virtual NIC comes
 * first, as NCCL's; else any port this host offers NCCL (NCCL_IB_HCA) that
 * is up and reaches the peer: the port it started on when that is back,
 * its own port when only the path or the peer's port failed, another port
 * of the same NIC, then any other. "Reaches" is the subnet rule connection
 * setup repairs by (ib_repair_port.c): RoCE ports on the peer's IP subnet,
 * InfiniBand ports on its subnet prefix. */
#include <string.h>

#include "topo/gid.h"
#include "transport/ib/data/ib_comm.h"

bool ib_fo_is_member(const struct ib_dev *of, const struct ib_dev *d) {
  for (int i = 0; i < of->nmembers; i++)
    if (of->members[i] == d) return true;
  return false;
}

/* The first other port of the virtual NIC that is up. A striped
 * connection (ib_stripe.c) collapses onto one port: another than its
 * first if one is up, else its first, never the one that failed. */
static struct ib_dev *member_port(const struct ib_comm *c) {
  for (int i = 0; i < c->dev->nmembers; i++) {
    struct ib_dev *m = c->dev->members[i];
    if (m != c->dev && m != c->fo.failed && !ib_dev_check_port(m)) return m;
  }
  if (c->stripe > 1 && c->dev != c->fo.failed && !ib_dev_check_port(c->dev)) return c->dev;
  return NULL;
}

static bool reaches(const struct ib_dev *d, const uint8_t *g) {
  const struct topo_dev *t = d->td;
  if (gid_is_zero(g)) return false;
  if (t->ll == TOPO_LL_IB) return !memcmp(t->gid, g, 8); /* one subnet prefix */
  if (!t->subnet.family || gid_is_link_local(g)) return false;
  return gid_in_range(g, &t->subnet);
}

const uint8_t *ib_fo_peer_gid(const struct ib_comm *c) {
  return c->fo.has_peer_gid ? c->fo.peer_gid : c->peer_hello.ib.gid;
}

/* Whether d reaches toward, or (NULL) the peer's port in use or any port
 * the peer's hello lists (the peer then moves too). */
static bool reaches_peer(const struct ib_comm *c, const struct ib_dev *d, const uint8_t *toward) {
  if (toward) return reaches(d, toward);
  if (reaches(d, ib_fo_peer_gid(c))) return true;
  const struct hello_rdma *r = &c->peer_hello.rdma;
  for (int i = 0; r->has_ports && i < r->nports; i++)
    for (int k = 0; k < r->ports[i].ngids; k++)
      if (reaches(d, r->ports[i].gids[k].gid)) return true;
  return false;
}

static bool is_usable(const struct ib_comm *c, struct ib_dev *d, const uint8_t *toward) {
  return d && d->ctx && d != c->fo.failed && ib_dev_port_is_up(d) && reaches_peer(c, d, toward);
}

struct ib_dev *ib_fo_home(const struct ib_comm *c) {
  return c->fo.nused ? c->fo.used[0] : c->dev;
}

struct ib_dev *ib_fo_choose_port(const struct ib_comm *c, const uint8_t *toward, bool may_stay) {
  if (c->dev->nmembers >= 2) {
    struct ib_dev *m = member_port(c);
    if (m) return m;
  }
  struct ib_dev *home = ib_fo_home(c);
  if (home != c->dev && is_usable(c, home, toward)) return home;
  if (may_stay && is_usable(c, c->dev, toward)) return c->dev;
  const struct ib_state *st = ib_state();
  const char *guid = c->dev->td->guid;
  for (int pass = 0; pass < 2; pass++) /* the same NIC's ports first */
    for (int i = 0; i < st->ndev; i++) {
      struct ib_dev *d = &st->devs[i];
      bool is_same_nic = guid && d->td->guid && !strcmp(guid, d->td->guid);
      if (d != c->dev && is_same_nic == (pass == 0) && is_usable(c, d, toward)) return d;
    }
  return NULL;
}
