/* SPDX-License-Identifier: Apache-2.0 */
/* The transports connection setup offers, in order (setup_ops.h): the one
 * file that names them, as NCCL's transport list does. */
#include "transport/setup_ops.h"

#include <stddef.h>

#include "transport/ib/ib_ops.h"
#include "transport/tcp/tcp.h"

static const struct transport_setup_ops *const kinds[] = {&ib_setup_ops, &tcp_setup_ops};

const struct transport_setup_ops *transport_setup_kind(int i) {
  return i >= 0 && i < (int)(sizeof(kinds) / sizeof(kinds[0])) ? kinds[i] : NULL;
}

const struct transport_setup_ops *transport_setup_sockets(void) { return &tcp_setup_ops; }

void transport_setup_fill_hello(const struct transport_dev *dev, struct hello *mine) {
  for (int i = 0; transport_setup_kind(i); i++)
    if (transport_setup_kind(i)->fill_hello) transport_setup_kind(i)->fill_hello(dev, mine);
}

const struct transport_setup_ops *
transport_setup_start(struct transport_kind_setup **ks, const struct transport_dev *dev,
                      bool is_send, int ctrl_fd, const struct hello *mine, const struct hello *peer,
                      const char *peer_desc, int traffic_class) {
  *ks = NULL;
  for (int i = 0; transport_setup_kind(i); i++) {
    const struct transport_setup_ops *o = transport_setup_kind(i);
    if (!o->start) continue;
    *ks = o->start(dev, is_send, ctrl_fd, mine, peer, peer_desc, traffic_class);
    if (*ks) return o;
  }
  return NULL;
}
