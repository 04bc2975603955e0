/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: path resolution at INIT->RTR, the way kernel RoCE resolves it.
 *
 * RoCE, net mode (the GID's interface exists in this namespace), as the
 * Linux 6.1 kernel does it (measured with rdma_rxe, tests/rxe):
 *  1. the source GID's address must be configured here, else ENODATA (the
 *     kernel drops a GID entry whose address is removed, and RTR with that
 *     index fails with ENODATA);
 *  2. the neighbour: a TCP connect from the GID's interface (SO_BINDTODEVICE)
 *     to the remote QP's listener. Bound to a device, the kernel's route
 *     lookup treats a destination it has no route for as on-link and sends
 *     ARP/ND there, exactly as RoCE's address resolution does: so "no route"
 *     is no error of its own, and a cross-subnet peer on the same L2
 *     segment that answers ARP is reached. A neighbour that never answers
 *     ends in ETIMEDOUT after SOFTVERBS_RTR_TIMEOUT_MS (default 1000, the
 *     kernel's address-resolution timeout) or the kernel's own neighbour
 *     failure, whichever comes first. Only a netdev that is down fails at
 *     once, with ENETUNREACH. A refused connection means the neighbour
 *     answered: RTR succeeds and the QP's traffic later times out
 *     (IBV_WC_RETRY_EXC_ERR), as on RoCE. A connect still pending at the
 *     deadline with a valid neighbour entry (the peer is blackholed, or its
 *     replies take no route back) also succeeds, and the progress thread
 *     keeps connecting.
 * RoCE on a port reported DOWN (SOFTVERBS_PORT_DOWN: its netdev is down)
 * fails with ENETUNREACH.
 * InfiniBand, and loopback mode: RTR never fails for reachability (IB's
 * modify_qp does not resolve anything); an unknown LID or a refused
 * connection only means the traffic will time out. */
#include "sv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static socklen_t addr_len(const struct sockaddr_storage *ss) {
  return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static void set_port(struct sockaddr_storage *ss, uint16_t port) {
  if (ss->ss_family == AF_INET) ((struct sockaddr_in *)ss)->sin_port = htons(port);
  else ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static void set_scope(struct sockaddr_storage *ss, int ifindex) {
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
  if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr))
    in6->sin6_scope_id = (uint32_t)ifindex;
}

static int rtr_timeout_ms(void) {
  return (int)sv_env_long("SOFTVERBS_RTR_TIMEOUT_MS", 1000, 1, 600000);
}

/* Connects a non-blocking socket, waiting up to timeout_ms. 0: connected;
 * EINPROGRESS: still connecting at the deadline; else the connect error. */
static int connect_wait(int fd, const struct sockaddr_storage *dst, int timeout_ms) {
  if (!connect(fd, (const struct sockaddr *)dst, addr_len(dst))) return 0;
  if (errno != EINPROGRESS) return errno;
  struct pollfd pfd = {.fd = fd, .events = POLLOUT};
  uint64_t end = sv_now_ns() + (uint64_t)timeout_ms * 1000000ull;
  for (;;) {
    uint64_t now = sv_now_ns();
    if (now >= end) return EINPROGRESS;
    int n = poll(&pfd, 1, (int)((end - now + 999999) / 1000000));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n ? errno : EINPROGRESS;
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    return err;
  }
}

static int stream_socket(int family) {
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/* Connects where a failure only means "no wire": loopback mode and IB. */
static void best_effort(const struct sockaddr_storage *src, const struct sockaddr_storage *dst,
                        struct sv_path *path) {
  int fd = stream_socket(dst->ss_family);
  if (fd < 0) return;
  if (src && src->ss_family == dst->ss_family) {
    struct sockaddr_storage s = *src;
    set_port(&s, 0);
    bind(fd, (struct sockaddr *)&s,
         addr_len(&s)); /* best effort: the fabric, not the source, matters */
  }
  int err = connect_wait(fd, dst, rtr_timeout_ms());
  if (err && err != EINPROGRESS) {
    sv_log("connect to the remote qp failed (%s): its traffic will time out", strerror(err));
    close(fd);
    return;
  }
  path->fd = fd;
  path->connecting = err == EINPROGRESS;
}

static void loopback_addr(struct sockaddr_storage *dst) {
  struct sockaddr_in *in = (struct sockaddr_in *)dst;
  memset(dst, 0, sizeof *dst);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static int ib_path(struct sv_qp *qp, struct sv_port *p, const struct ibv_qp_attr *a,
                   struct sv_path *path) {
  struct sockaddr_storage dst;
  if (sv_port_is_down(qp->ctx->dev, p)) return 0;
  if (!qp->ctx->net[p->num]) loopback_addr(&dst);
  else if (sv_fabric_lid(a->ah_attr.dlid, &dst)) {
    sv_log("lid %u is not in the fabric: qp 0x%x traffic will time out", a->ah_attr.dlid,
           qp->ibqp.qp_num);
    return 0;
  }
  set_port(&dst, (uint16_t)(a->dest_qp_num >> 8));
  best_effort(qp->ctx->net[p->num] ? &p->ipoib : NULL, &dst, path);
  return 0;
}

static int neighbour(const char *ndev, int ifindex, const struct sockaddr_storage *src,
                     const struct sockaddr_storage *dst, struct sv_path *path) {
  int fd = stream_socket(dst->ss_family);
  if (fd < 0) return errno;
  int err = 0;
  if (setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ndev, (socklen_t)strlen(ndev) + 1)) err = errno;
  else if (bind(fd, (const struct sockaddr *)src, addr_len(src)))
    err = errno == EADDRNOTAVAIL ? ENODATA : errno; /* the GID's address is gone */
  if (!err) err = connect_wait(fd, dst, rtr_timeout_ms());
  bool pending = err == EINPROGRESS;
  if (pending) err = sv_nl_neigh_valid(ifindex, dst) ? 0 : ETIMEDOUT;
  else if (err == ECONNREFUSED) {
    sv_log("no listener at the remote qp's port: its traffic will time out");
    close(fd);
    return 0;
  }
  if (err == EHOSTUNREACH) err = ETIMEDOUT; /* address resolution gave up */
  if (err) {
    close(fd);
    return err;
  }
  path->fd = fd;
  path->connecting = pending;
  return 0;
}

static int roce_path(struct sv_qp *qp, struct sv_port *p, const struct ibv_qp_attr *a,
                     struct sv_path *path) {
  const struct sv_gid *sg = &p->gids[a->ah_attr.grh.sgid_index];
  struct sockaddr_storage src, dst;
  if (sv_gid_is_zero(&sg->gid)) return ENODATA; /* an empty entry, as the kernel answers */
  if (sv_port_is_down(qp->ctx->dev, p)) return ENETUNREACH;
  if (!sv_gid_to_addr(&a->ah_attr.grh.dgid, &dst)) return EINVAL;
  if (!qp->ctx->net[p->num]) loopback_addr(&dst);
  set_port(&dst, (uint16_t)(a->dest_qp_num >> 8));
  if (!qp->ctx->net[p->num]) {
    best_effort(NULL, &dst, path);
    return 0;
  }
  int ifindex = sg->ndev[0] ? (int)if_nametoindex(sg->ndev) : 0;
  if (!ifindex) return ENODATA; /* the GID's netdev is gone, and its entry with it */
  if (!sv_gid_to_addr(&sg->gid, &src) || src.ss_family != dst.ss_family) return EINVAL;
  set_scope(&src, ifindex);
  set_scope(&dst, ifindex);
  return neighbour(sg->ndev, ifindex, &src, &dst, path);
}

int sv_route_resolve(struct sv_qp *qp, const struct ibv_qp_attr *a, struct sv_path *path) {
  struct sv_port *p = sv_qp_port(qp);
  path->fd = -1;
  path->connecting = false;
  if (!p) return EINVAL;
  int err = p->link_layer == IBV_LINK_LAYER_INFINIBAND ? ib_path(qp, p, a, path)
                                                       : roce_path(qp, p, a, path);
  if (err) {
    char dst[INET6_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET6, a->ah_attr.grh.dgid.raw, dst, sizeof dst);
    sv_log("qp 0x%x rtr to %s failed: %s", qp->ibqp.qp_num, dst, strerror(err));
  }
  return err;
}
