/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA transport as connection setup sees it (ib_ops.h): its hello
 * fields on every connection (what this host offers, even without RDMA),
 * and its setup stage when both sides have RDMA. */
#include "transport/ib/ib_ops.h"

#include "transport/ib/dev/ib.h"

static struct transport_kind_setup *start(const struct transport_dev *dev, bool is_send,
                                          int ctrl_fd, const struct hello *mine,
                                          const struct hello *peer, const char *peer_desc,
                                          int traffic_class) {
  return (struct transport_kind_setup *)ib_setup_new(dev, is_send, ctrl_fd, mine, peer, peer_desc,
                                                     traffic_class);
}

static enum transport_setup_result progress(struct transport_kind_setup *ks) {
  switch (ib_setup_progress((struct ib_setup *)ks)) {
  case IB_SETUP_PENDING: return TRANSPORT_SETUP_PENDING;
  case IB_SETUP_RDMA_UP: return TRANSPORT_SETUP_UP;
  case IB_SETUP_FALL_BACK: return TRANSPORT_SETUP_FALL_BACK;
  case IB_SETUP_FAILED: break;
  }
  return TRANSPORT_SETUP_FAILED;
}

static void setup_free(struct transport_kind_setup *ks) { ib_setup_free((struct ib_setup *)ks); }

static int comm_create(struct transport_kind_setup *ks, struct transport_setup *s,
                       struct transport_comm **out) {
  return ib_comm_create((struct ib_setup *)ks, s, out);
}

int ib_transport_init(struct transport_host *host) {
  static const struct ib_hooks hooks = {
    .fatal_note = ib_fatal_note,
    .port_down = ib_flap_down,
    .port_up = ib_flap_up,
    .rtr_why = ib_diag_rtr,
  };
  ib_hooks_set(&hooks);
  return ib_host_init(host);
}

const struct transport_setup_ops ib_setup_ops = {
  .name = "ib",
  .fill_hello = ib_fill_hello,
  .start = start,
  .progress = progress,
  .free = setup_free,
  .comm_create = comm_create,
};
