/* SPDX-License-Identifier: Apache-2.0 */
/* Small helpers every transport uses. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "transport/prefs.h"
#include "transport/run/conns.h"
#include "transport/transport.h"

void transport_peer_describe(struct transport_peer *p, const struct hello *h, const char *addr) {
  memset(p, 0, sizeof(*p));
  snprintf(p->host, sizeof(p->host), "%s", h->host);
  liveness_who_from(&p->who, h);
  snprintf(p->addr, sizeof(p->addr), "%s", addr);
  snprintf(p->desc, sizeof(p->desc), "%s (%s%s%s)", h->host[0] ? h->host : "unknown host", addr,
           h->ifname[0] ? ", " : "", h->ifname);
}

void transport_setup_init(struct transport_setup *s, const struct transport_dev *dev, bool is_send,
                          int ctrl_fd, const struct hello *mine, const struct hello *peer,
                          const char *peer_addr) {
  memset(s, 0, sizeof(*s));
  s->dev = dev;
  s->is_send = is_send;
  s->ctrl_fd = ctrl_fd;
  s->mine = *mine;
  s->peer_hello = *peer;
  transport_peer_describe(&s->peer, peer, peer_addr);
  s->peer.sa_len = sizeof(s->peer.sa);
  if (getpeername(ctrl_fd, (struct sockaddr *)&s->peer.sa, &s->peer.sa_len)) s->peer.sa_len = 0;
}

void transport_comm_watch(struct transport_comm *c) {
  const struct transport_peer *p = &c->peer;
  c->live =
    p->sa_len ? liveness_peer_get(&p->who, (const struct sockaddr *)&p->sa, p->sa_len) : NULL;
  run_conn_add(c);
}

ncclResult_t transport_comm_close(struct transport_comm *c) {
  struct liveness_peer *live = c->live;
  run_conn_remove(c);
  ncclResult_t r = c->ops->close(c);
  liveness_peer_put(live);
  return r;
}

/* NCCL's meaning: threads x sockets per thread, at most 64 sockets. Auto
 * values were chosen by measurement (bench/README.md). */
void transport_socket_shape(int *nsocks, int *nthreads) {
  int th = (int)transport_prefs()->socket_nthreads;
  int per = (int)transport_prefs()->nsocks_perthread;
  if (th == -2) th = 2;
  if (per == -2) per = 1;
  if (per < 1) per = 1;
  int total = (th ? th : 1) * per;
  if (total > TRANSPORT_MAX_DATA_SOCKS) {
    static atomic_bool has_warned; /* once per process */
    if (!atomic_exchange(&has_warned, true))
      WARN("NCCL_SOCKET_NTHREADS=%d x NCCL_NSOCKS_PERTHREAD=%d is %d sockets per connection, "
           "more than the %d allowed; using %d",
           th, per, total, TRANSPORT_MAX_DATA_SOCKS, TRANSPORT_MAX_DATA_SOCKS);
    total = TRANSPORT_MAX_DATA_SOCKS;
  }
  *nsocks = total;
  *nthreads = th;
}

ncclResult_t transport_result(int err) {
  switch (err) {
  case 0: return ncclSuccess;
  case ECONNRESET: return ncclRemoteError;
  case EMSGSIZE:
  case ENOMSG: return ncclInvalidUsage;
  default: return ncclSystemError;
  }
}
