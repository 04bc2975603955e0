/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA transport's part in connection setup (transport/setup_ops.h). */
#ifndef DIAG_TRANSPORT_IB_OPS_H
#define DIAG_TRANSPORT_IB_OPS_H

#include "transport/setup_ops.h"

extern const struct transport_setup_ops ib_setup_ops;

#endif
