/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA transport's part in connection setup (transport/setup_ops.h). */
#ifndef DIAG_TRANSPORT_IB_OPS_H
#define DIAG_TRANSPORT_IB_OPS_H

#include "transport/setup_ops.h"

extern const struct transport_setup_ops ib_setup_ops;

/* The RDMA transport's init, from the host's (transport/host.c): sets the
 * calls its lower parts make upward (ib_hooks), then opens verbs and every
 * chosen port (ib_host_init). Returns how many RDMA devices it added. */
int ib_transport_init(struct transport_host *host);

#endif
