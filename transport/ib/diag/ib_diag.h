/* SPDX-License-Identifier: Apache-2.0 */
/* What the two RDMA diagnoses (ib_diag.c for RTR, ib_diag_wc.c for
 * completions) share: a bounded text buffer, the specific causes the plugin
 * can name from its own topology (a pair on one host, a link-local GID, a
 * cross-rail pair, a device of another plane), and the path's details,
 * which go to an INFO line and the event file, not the WARN. */
#ifndef DIAG_TRANSPORT_IB_DIAG_H
#define DIAG_TRANSPORT_IB_DIAG_H

#include <stdbool.h>
#include <stddef.h>

#include "transport/ib/dev/ib.h"

struct diag_out {
  char *p;
  size_t cap, len;
};

void diag_put(struct diag_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

bool diag_gid_link_local(const uint8_t *g);

/* When the plugin knows the specific cause of a failed path, writes it,
 * with event ("RTR failed with ETIMEDOUT") and the fix, and returns true;
 * else writes nothing. */
bool diag_lead_cause(struct diag_out *o, const struct ib_dev *d, const struct hello *peer,
                     const char *event);

/* "from GID 3 ::ffff:10.1.4.5 (xgbe4, 10.1.4.0/24) of mlx5_4 port 1 to GID 3
 * ::ffff:10.0.0.7 (bond0, 10.0.0.0/24) of mlx5_bond_0 port 1 on host-b" */
void diag_path_short(struct diag_out *o, const struct ib_dev *d, const struct hello *peer);

/* The long form: both GIDs with type, host and address, the local ports on
 * the remote's subnet, and the ib_write_bw commands that confirm the path;
 * logged as INFO and written to the event file as "rdma_path". */
void diag_log_details(const struct ib_dev *d, const struct hello *peer, const char *what);

#endif
