/* SPDX-License-Identifier: Apache-2.0 */
/* Each transport's part in connection setup, as a table the connection
 * manager (connect.c, accept.c, connect_data.c) calls without naming the
 * transport, as it calls a comm's transport_comm_ops. The kinds come in
 * the order setup offers them (setup_ops.c): RDMA first, which says in the
 * hello what the host offers and takes the connection when both sides can;
 * then the sockets, which carry every connection no kind above took. */
#ifndef DIAG_TRANSPORT_SETUP_OPS_H
#define DIAG_TRANSPORT_SETUP_OPS_H

#include <stdbool.h>

#include "transport/hello.h"
#include "transport/transport.h"

/* A step of a kind's own setup stage: common/progress.h's meanings, with
 * the two ways it can finish. */
enum transport_setup_result {
  TRANSPORT_SETUP_PENDING,   /* call again: waiting for the peer or the socket */
  TRANSPORT_SETUP_UP,        /* comm_create takes it from here */
  TRANSPORT_SETUP_FALL_BACK, /* both sides agreed on the sockets: the data sockets come next */
  TRANSPORT_SETUP_FAILED,    /* logged by the step that failed */
};

struct transport_kind_setup; /* a kind's own setup state, opaque here */

struct transport_setup_ops {
  const char *name; /* "ib" or "tcp" */
  /* Adds this kind's fields to our hello, on every device; NULL: none. */
  void (*fill_hello)(const struct transport_dev *dev, struct hello *mine);
  /* Once both hellos are in: this kind's setup on the control socket, or
   * NULL when it does not take the connection (this member NULL too). */
  struct transport_kind_setup *(*start)(const struct transport_dev *dev, bool is_send, int ctrl_fd,
                                        const struct hello *mine, const struct hello *peer,
                                        const char *peer_desc, int traffic_class);
  /* Runs the setup's stages as far as the control socket allows. */
  enum transport_setup_result (*progress)(struct transport_kind_setup *ks);
  void (*free)(struct transport_kind_setup *ks);
  /* The comm: from a setup that is up (taken, with the control socket), or
   * for the sockets kind from the sockets in s (ks NULL). 0 or an errno,
   * logged; the sockets are closed on failure. */
  int (*comm_create)(struct transport_kind_setup *ks, struct transport_setup *s,
                     struct transport_comm **out);
};

/* The kinds in the order setup offers them; NULL past the last. */
const struct transport_setup_ops *transport_setup_kind(int i);
/* The kind that carries what no other took: the sockets. */
const struct transport_setup_ops *transport_setup_sockets(void);

/* Each kind's hello fields, in order. */
void transport_setup_fill_hello(const struct transport_dev *dev, struct hello *mine);
/* The first kind that takes the connection, with its setup in *ks; NULL
 * when none does (the data sockets come next). */
const struct transport_setup_ops *
transport_setup_start(struct transport_kind_setup **ks, const struct transport_dev *dev,
                      bool is_send, int ctrl_fd, const struct hello *mine, const struct hello *peer,
                      const char *peer_desc, int traffic_class);

#endif
