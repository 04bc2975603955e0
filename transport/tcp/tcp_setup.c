/* SPDX-License-Identifier: Apache-2.0 */
/* The sockets as a kind of connection setup (transport/setup_ops.h): no
 * hello fields and no stage of their own; the connection manager connects
 * the data sockets, and this builds the comm over them. */
#include "transport/setup_ops.h"
#include "transport/tcp/tcp.h"

static int comm_create(struct transport_kind_setup *ks, struct transport_setup *s,
                       struct transport_comm **out) {
  (void)ks;
  return tcp_comm_create(s, out);
}

const struct transport_setup_ops tcp_setup_ops = {.name = "tcp", .comm_create = comm_create};
