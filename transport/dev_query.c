/* SPDX-License-Identifier: Apache-2.0 */
/* What the plugin asks of a device (see transport.h), answered here so the
 * plugin never reads a transport's per-port state itself. */
#include <stdatomic.h>

#include "transport/ib/dev/ib.h"
#include "transport/transport.h"

_Static_assert(IB_MAX_RECVS <= TRANSPORT_MAX_RECVS, "RDMA grouped receives fit the bound");

static const struct ib_dev *rdma(const struct transport_dev *d) {
  return d->is_ib ? (const struct ib_dev *)d->ib : NULL;
}

const char *transport_dev_kind(const struct transport_dev *d) { return d->is_ib ? "RDMA" : "TCP"; }

int transport_dev_ptr_support(const struct transport_dev *d) { return ib_ptr_support(d); }

int transport_dev_max_recvs(const struct transport_dev *d) { return d->is_ib ? IB_MAX_RECVS : 1; }

bool transport_dev_is_down(const struct transport_dev *d) {
  const struct ib_dev *ib = rdma(d);
  return ib && __atomic_load_n(&ib->port_down, __ATOMIC_ACQUIRE);
}

enum topo_ll transport_dev_ll(const struct transport_dev *d) {
  const struct ib_dev *ib = rdma(d);
  return ib && ib->td ? ib->td->ll : TOPO_LL_UNKNOWN;
}

void transport_dev_rail_plane(const struct transport_dev *d, int *rail, int *plane) {
  const struct ib_dev *ib = rdma(d);
  *rail = ib && ib->td ? ib->td->rail : -1;
  *plane = ib && ib->td ? ib->td->plane : -1;
}

void transport_dev_fuse(const struct transport_dev *const *devs, int n) { ib_dev_fuse(devs, n); }
