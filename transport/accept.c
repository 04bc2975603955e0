/* SPDX-License-Identifier: Apache-2.0 */
/* accept: see listen.h. Each call does a bounded amount of non-blocking
 * work and returns; NCCL calls again until a recv comm comes out. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "transport/ib/ib.h"
#include "transport/listen.h"
#include "transport/report.h"
#include "transport/sock.h"

static void drop_incoming(struct listen_comm *l, int i) { l->inc[i] = l->inc[--l->ninc]; }

static int accept_errno_transient(int err) {
  return err == EINTR || err == ECONNABORTED || err == EPROTO || err == ENETDOWN ||
         err == ENOPROTOOPT || err == EHOSTDOWN || err == ENONET || err == EHOSTUNREACH ||
         err == EOPNOTSUPP || err == ENETUNREACH || err == EPERM;
}

static ncclResult_t accept_new(struct listen_comm *l, int64_t now) {
  for (int loops = 0; loops < 256; loops++) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return ncclSuccess;
      if (accept_errno_transient(err)) continue;
      char advice[400];
      sock_errno_advice(err, advice, sizeof(advice));
      WARN("accept on device %s port %u failed: %s%s%s", l->dev->name, l->port, strerror(err),
           advice[0] ? "; " : "", advice);
      return ncclSystemError;
    }
    sock_tune(fd);
    char peer[80];
    sockaddr_str((struct sockaddr *)&ss, peer, sizeof(peer));
    if (l->ninc == LISTEN_MAX_INCOMING) {
      listen_refuse(l, fd, peer, "too many connections are waiting to identify themselves");
      continue;
    }
    struct incoming *in = &l->inc[l->ninc++];
    memset(in, 0, sizeof(*in));
    in->fd = fd;
    in->deadline = now + l->handshake_ns;
    snprintf(in->peer, sizeof(in->peer), "%s", peer);
  }
  return ncclSuccess;
}

/* Returns 1 when the socket was consumed (attached or refused). */
static int place_socket(struct listen_comm *l, struct incoming *in, int64_t now) {
  char why[200];
  struct preamble p;
  if (preamble_decode(in->buf, &p, why, sizeof(why))) {
    listen_refuse(l, in->fd, in->peer, why);
    return 1;
  }
  if (p.nonce != l->nonce) {
    snprintf(why, sizeof(why),
             "it presents nonce 0x%016llx, this listen's is 0x%016llx (a stale handle, or a "
             "connection meant for another listen)",
             (unsigned long long)p.nonce, (unsigned long long)l->nonce);
    listen_refuse(l, in->fd, in->peer, why);
    return 1;
  }
  if (p.role == ROLE_CTRL) {
    /* The same connector trying another of our addresses in parallel: it
     * waits here, and takes over if the first attempt breaks. */
    if (l->stage != CS_NONE) return 0;
    l->ctrl_fd = in->fd;
    l->connid = p.connid;
    l->stage = CS_HELLO_HDR;
    l->conn_deadline = now + l->handshake_ns;
    snprintf(l->ctrl_peer, sizeof(l->ctrl_peer), "%s", in->peer);
    return 1;
  }
  if (l->stage != CS_NONE && p.connid == l->connid && l->stage != CS_DATA) return 0; /* early */
  if (l->stage == CS_DATA && p.connid == l->connid && p.index < l->ndata &&
      l->data_fds[p.index] < 0) {
    l->data_fds[p.index] = in->fd;
    l->data_have++;
    return 1;
  }
  snprintf(why, sizeof(why), "data socket %u of connection 0x%016llx, which is not in setup here",
           p.index, (unsigned long long)p.connid);
  listen_refuse(l, in->fd, in->peer, why);
  return 1;
}

static void identify_incoming(struct listen_comm *l, int64_t now) {
  for (int i = 0; i < l->ninc;) {
    struct incoming *in = &l->inc[i];
    if (in->got < PREAMBLE_LEN) {
      size_t n;
      int err = sock_recv(in->fd, in->buf + in->got, PREAMBLE_LEN - in->got, &n);
      in->got += n;
      if (err && err != EAGAIN) {
        char why[160];
        if (err == EPIPE)
          snprintf(why, sizeof(why),
                   "it closed the connection after %zu bytes, before identifying itself", in->got);
        else snprintf(why, sizeof(why), "reading its first bytes failed: %s", strerror(err));
        listen_refuse(l, in->fd, in->peer, why);
        drop_incoming(l, i);
        continue;
      }
    }
    if (in->got == PREAMBLE_LEN && place_socket(l, in, now)) {
      drop_incoming(l, i);
      continue;
    }
    if (now > in->deadline) {
      char why[160];
      snprintf(why, sizeof(why), "it sent %zu of the 24 bytes that identify a peer in %lld ms",
               in->got, (long long)(l->handshake_ns / 1000000));
      listen_refuse(l, in->fd, in->peer, why);
      drop_incoming(l, i);
      continue;
    }
    i++;
  }
}

static void build_reply(struct listen_comm *l) {
  struct hello *m = &l->mine;
  hello_fill_local(m, HELLO_ACCEPT);
  m->nonce = l->nonce;
  m->connid = l->connid;
  snprintf(m->transport, sizeof(m->transport), "tcp");
  snprintf(m->dev, sizeof(m->dev), "%s", l->dev->name);
  snprintf(m->ifname, sizeof(m->ifname), "%s", l->dev->ifname);
  ib_fill_hello(l->dev, m);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  if (getsockname(l->ctrl_fd, (struct sockaddr *)&ss, &sl) == 0)
    sockaddr_str((struct sockaddr *)&ss, m->addr, sizeof(m->addr));
  m->nsocks = l->peer_hello.nsocks;
  m->nthreads = (uint16_t)l->nthreads;
  size_t len; /* our own record always fits */
  (void)hello_encode(m, l->out_buf, sizeof(l->out_buf), &len);
  record_writer_start(&l->out, l->out_buf, len);
}

static int hello_received(struct listen_comm *l) {
  char why[200];
  struct hello *h = &l->peer_hello;
  if (hello_decode_body(l->in.buf + HELLO_HDR_LEN, l->in.body_len, h, why, sizeof(why))) {
    listen_refuse(l, -1, l->ctrl_peer, why);
    listen_reset_conn(l);
    return -1;
  }
  h->kind = l->in.kind;
  if (h->nonce != l->nonce || h->connid != l->connid || h->kind != HELLO_CONNECT) {
    snprintf(why, sizeof(why), "its hello names another listen or connection");
    listen_refuse(l, -1, l->ctrl_peer, why);
    listen_reset_conn(l);
    return -1;
  }
  build_reply(l);
  struct transport_peer peer;
  transport_peer_describe(&peer, h, l->ctrl_peer);
  report_hello(&l->mine, h, peer.desc, "accept");
  l->ndata = h->nsocks;
  for (int i = 0; i < TRANSPORT_MAX_DATA_SOCKS; i++) l->data_fds[i] = -1;
  l->data_have = 0;
  l->stage = CS_SEND_HELLO;
  return 0;
}

static ncclResult_t finish(struct listen_comm *l, void **recv_comm) {
  struct transport_setup s;
  transport_setup_init(&s, l->dev, 0, l->ctrl_fd, &l->mine, &l->peer_hello, l->ctrl_peer);
  s.ndata = l->ndata;
  memcpy(s.data_fds, l->data_fds, sizeof(s.data_fds));
  s.nthreads = l->nthreads;
  struct transport_comm *c = NULL;
  ncclResult_t r = tcp_comm_create(&s, &c) ? ncclSystemError : ncclSuccess; /* logged */
  /* The comm owns the sockets now, or closed them on failure. */
  l->ctrl_fd = -1;
  l->ndata = 0;
  listen_reset_conn(l);
  if (r != ncclSuccess) return r;
  ev_count(C_RECV_COMMS, 1);
  *recv_comm = c;
  return ncclSuccess;
}

static ncclResult_t finish_rdma(struct listen_comm *l, void **recv_comm) {
  struct transport_setup s;
  transport_setup_init(&s, l->dev, 0, l->ctrl_fd, &l->mine, &l->peer_hello, l->ctrl_peer);
  struct ib_setup *ibs = l->ibs;
  l->ibs = NULL;
  l->ctrl_fd = -1; /* the comm owns it now */
  struct transport_comm *c = NULL;
  ncclResult_t r = ib_comm_create(ibs, &s, &c) ? ncclSystemError : ncclSuccess; /* logged */
  listen_reset_conn(l);
  if (r != ncclSuccess) return r;
  ev_count(C_RECV_COMMS, 1);
  *recv_comm = c;
  return ncclSuccess;
}

/* The connector's hello: 1 = in and answered, 0 = not yet, -1 = the
 * connection was refused (logged, and reset). */
static int read_hello(struct listen_comm *l) {
  char why[200];
  int err;
  enum progress got = record_read(&l->in, l->ctrl_fd, &err, why, sizeof(why));
  if (got == PROGRESS_PENDING) return 0;
  if (got == PROGRESS_FAILED) {
    if (err != EPROTO) /* else why names what is wrong with the header */
      snprintf(why, sizeof(why), "it %s after %zu of the %zu bytes of its hello",
               err == EPIPE ? "closed the connection" : strerror(err), l->in.got,
               record_reader_want(&l->in));
    listen_refuse(l, -1, l->ctrl_peer, why);
    listen_reset_conn(l);
    return -1;
  }
  return hello_received(l) ? -1 : 1;
}

static ncclResult_t progress_conn(struct listen_comm *l, int64_t now, void **recv_comm) {
  if (l->stage == CS_HELLO_HDR || l->stage == CS_HELLO_BODY) {
    int r = read_hello(l);
    if (r < 0) return ncclSuccess;
    if (r == 0) goto check_deadline;
  }
  if (l->stage == CS_SEND_HELLO) {
    int err;
    enum progress sent = record_write(&l->out, l->ctrl_fd, &err);
    if (sent == PROGRESS_PENDING) goto check_deadline;
    if (sent == PROGRESS_FAILED) {
      WARN("peer %s broke the control connection to device %s while we answered its hello "
           "(%s); still waiting for a peer",
           l->ctrl_peer, l->dev->name, strerror(err));
      listen_reset_conn(l);
      return ncclSuccess;
    }
    struct transport_peer peer;
    transport_peer_describe(&peer, &l->peer_hello, l->ctrl_peer);
    l->ibs = ib_setup_new(l->dev, 0, l->ctrl_fd, &l->mine, &l->peer_hello, peer.desc,
                          NCCL_NET_TRAFFIC_CLASS_UNDEF);
    l->stage = l->ibs ? CS_RDMA : CS_DATA;
    /* RTR may wait for neighbour resolution: the setup has its own bound. */
    if (l->ibs) l->conn_deadline = INT64_MAX;
  }
  if (l->stage == CS_RDMA) {
    enum ib_setup_result r = ib_setup_progress(l->ibs);
    if (r == IB_SETUP_PENDING) return ncclSuccess;
    if (r == IB_SETUP_FAILED) {
      listen_reset_conn(l);
      ev_count(C_CONN_FAILURES, 1);
      return ncclSystemError;
    }
    if (r == IB_SETUP_RDMA_UP) return finish_rdma(l, recv_comm);
    ib_setup_free(l->ibs); /* fall back: wait for the TCP data sockets */
    l->ibs = NULL;
    l->stage = CS_DATA;
    l->conn_deadline = now + l->handshake_ns;
  }
  if (l->stage == CS_DATA && l->data_have == l->ndata) return finish(l, recv_comm);
check_deadline:
  if (l->stage != CS_NONE && now > l->conn_deadline) {
    WARN("peer %s started a connection to device %s but did not finish its setup in %lld ms "
         "(%d of %d data sockets arrived); dropped it and still waiting for a peer. The peer "
         "process may have died or stalled",
         l->ctrl_peer, l->dev->name, (long long)(l->handshake_ns / 1000000), l->data_have,
         l->ndata);
    listen_reset_conn(l);
  }
  return ncclSuccess;
}

ncclResult_t transport_accept(void *listen_comm, void **recv_comm) {
  struct listen_comm *l = listen_comm;
  *recv_comm = NULL;
  int64_t now = now_ns();
  ncclResult_t r = accept_new(l, now);
  if (r != ncclSuccess) return r;
  identify_incoming(l, now);
  if (l->stage == CS_NONE) return ncclSuccess;
  r = progress_conn(l, now, recv_comm);
  /* Data sockets that arrived while the hello was still going out. */
  if (l->stage == CS_DATA && !*recv_comm) {
    identify_incoming(l, now);
    if (l->data_have == l->ndata) r = progress_conn(l, now, recv_comm);
  }
  return r;
}
