/* SPDX-License-Identifier: Apache-2.0 */
/* accept: the listener's state machine. The stages, in order (listen.h has
 * the details):
 *   waiting for a peer -> reading the peer's hello -> answering it ->
 *   setting up RDMA (both sides have RDMA devices) or waiting for data
 *   sockets -> the comm, and waiting for a peer again
 * A fall back from RDMA to TCP goes on to the data sockets. Each call takes
 * the sockets that arrived, reads their preambles, then runs the
 * connection's stages until one has to wait, checks the connection's
 * deadline (in this one place), and returns; NCCL calls again until a
 * receive comm comes out. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "transport/listen.h"
#include "transport/report.h"
#include "transport/sock.h"

static void drop_incoming(struct listen_comm *l, int i) {
  l->incoming[i] = l->incoming[--l->nincoming];
}

/* accept(2) errors that concern one connection, not the listener. */
static bool accept_errno_transient(int err) {
  return err == EINTR || err == ECONNABORTED || err == EPROTO || err == ENETDOWN ||
         err == ENOPROTOOPT || err == EHOSTDOWN || err == ENONET || err == EHOSTUNREACH ||
         err == EOPNOTSUPP || err == ENETUNREACH || err == EPERM;
}

static bool same_source(const struct incoming *in, const struct ipaddr *src) {
  return in->src.family == src->family && !memcmp(in->src.bytes, src->bytes, sizeof(src->bytes));
}

/* Makes room for a socket from src: drops the oldest silent one from src
 * when src holds its share, else the oldest silent one when the table is
 * full. false: no room (every place holds a socket that identified
 * itself). */
static bool make_room(struct listen_comm *l, const struct ipaddr *src, int64_t now) {
  int from_src = 0, oldest_src = -1, oldest = -1;
  for (int i = 0; i < l->nincoming; i++) {
    const struct incoming *in = &l->incoming[i];
    if (in->got == PREAMBLE_LEN) continue;
    bool is_src = same_source(in, src);
    from_src += is_src;
    if (is_src && (oldest_src < 0 || in->deadline < l->incoming[oldest_src].deadline))
      oldest_src = i;
    if (oldest < 0 || in->deadline < l->incoming[oldest].deadline) oldest = i;
  }
  int victim = from_src >= LISTEN_PER_SOURCE         ? oldest_src
               : l->nincoming == LISTEN_MAX_INCOMING ? oldest
                                                     : -2;
  if (victim == -2) return true;
  if (victim < 0) return false;
  listen_turn_away(l, l->incoming[victim].fd, l->incoming[victim].peer,
                   "it had not identified itself, and newer connections needed its place", now);
  drop_incoming(l, victim);
  return true;
}

/* Takes what the listening socket has: 0, or an errno (logged). A few at a
 * time: the call returns to NCCL within its millisecond. */
static int accept_new(struct listen_comm *l, int64_t now) {
  for (int loops = 0; loops < 64; loops++) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return 0;
      if (accept_errno_transient(err)) continue;
      if (!sock_err_local(err)) accept_report_failed(l, err);
      return err; /* a local one is reported by the caller, when it stops the connection */
    }
    sock_tune(fd);
    char peer[80];
    struct ipaddr src = {0};
    sockaddr_str((struct sockaddr *)&ss, peer, sizeof(peer));
    ipaddr_from_sockaddr(&src, (struct sockaddr *)&ss, NULL);
    ipaddr_unmap(&src);
    src.prefix = 0;
    if (!make_room(l, &src, now)) {
      listen_refuse(l, fd, peer, "too many connections are waiting to identify themselves", NULL);
      continue;
    }
    struct incoming *in = &l->incoming[l->nincoming++];
    memset(in, 0, sizeof(*in));
    in->fd = fd;
    in->src = src;
    in->deadline = now + l->handshake_ns;
    snprintf(in->peer, sizeof(in->peer), "%s", peer);
  }
  return 0;
}

static void note_answered(struct listen_comm *l, uint64_t connid) {
  l->answered[l->nanswered++ % LISTEN_ANSWERED] = connid;
}

static bool was_answered(const struct listen_comm *l, uint64_t connid) {
  unsigned n = l->nanswered < LISTEN_ANSWERED ? l->nanswered : LISTEN_ANSWERED;
  for (unsigned i = 0; i < n; i++)
    if (l->answered[i] == connid) return true;
  return false;
}

/* Whether the socket was consumed (attached or refused); false: it waits. */
static bool place_socket(struct listen_comm *l, struct incoming *in, int64_t now) {
  char why[200];
  struct preamble p;
  if (preamble_decode(in->buf, &p, why, sizeof(why))) {
    listen_refuse(l, in->fd, in->peer, why, NULL); /* not our protocol: nothing to say */
    return true;
  }
  if (p.nonce != l->nonce) {
    char tell[240];
    snprintf(why, sizeof(why),
             "it presents nonce 0x%016llx, this listen's is 0x%016llx (a stale handle, or a "
             "connection meant for another listen)",
             (unsigned long long)p.nonce, (unsigned long long)l->nonce);
    /* The listen's own nonce stays here: it is what keeps strangers out. */
    snprintf(tell, sizeof(tell),
             "no listen on port %u has nonce 0x%016llx (the handle is stale: its listen was "
             "closed, or the process that made it restarted; or it is another listen's handle)",
             l->port, (unsigned long long)p.nonce);
    listen_refuse(l, in->fd, in->peer, why, tell);
    return true;
  }
  if (p.role == ROLE_CTRL) {
    /* The same connector trying another of our addresses in parallel: it
     * waits here, and takes over if the first attempt breaks before we
     * answer it. Once one attempt is answered the connector takes that one
     * (the first answer wins) and abandons the others: never handed out. */
    if (was_answered(l, p.connid)) {
      INFO(LOG_NET,
           "listen on device %s port %u: dropped %s, an attempt of connection 0x%016llx that "
           "raced on another address, which the connector abandoned",
           l->dev->name, l->port, in->peer, (unsigned long long)p.connid);
      close(in->fd);
      return true;
    }
    if (l->stage != ACCEPT_IDLE) return false;
    l->ctrl_fd = in->fd;
    l->connid = p.connid;
    l->stage = ACCEPT_HELLO;
    l->conn_deadline = now + l->handshake_ns;
    snprintf(l->ctrl_peer, sizeof(l->ctrl_peer), "%s", in->peer);
    return true;
  }
  bool ours = l->stage != ACCEPT_IDLE && p.connid == l->connid;
  if (ours && l->stage != ACCEPT_DATA_SOCKETS) return false; /* early: it waits */
  if (ours && p.index < l->ndata && l->data_fds[p.index] < 0) {
    l->data_fds[p.index] = in->fd;
    l->ndata_arrived++;
    return true;
  }
  snprintf(why, sizeof(why), "data socket %u of connection 0x%016llx, which is not in setup here",
           p.index, (unsigned long long)p.connid);
  listen_refuse(l, in->fd, in->peer, why, NULL);
  return true;
}

static void identify_incoming(struct listen_comm *l, int64_t now) {
  for (int i = 0; i < l->nincoming;) {
    struct incoming *in = &l->incoming[i];
    if (in->got < PREAMBLE_LEN) {
      size_t n;
      int err = sock_recv(in->fd, in->buf + in->got, PREAMBLE_LEN - in->got, &n);
      in->got += n;
      if (err == EPIPE && in->got == 0) {
        /* Nothing said at all: a connect of ours that lost its race before
         * it wrote (the connector closes those), or a port probe. */
        INFO(LOG_NET, "connection from %s to device %s port %u closed before it sent anything",
             in->peer, l->dev->name, l->port);
        close(in->fd);
        drop_incoming(l, i);
        continue;
      }
      if (err && err != EAGAIN) {
        char why[160];
        if (err == EPIPE)
          snprintf(why, sizeof(why),
                   "it closed the connection after %zu bytes, before identifying itself", in->got);
        else snprintf(why, sizeof(why), "reading its first bytes failed: %s", strerror(err));
        listen_refuse(l, in->fd, in->peer, why, NULL);
        drop_incoming(l, i);
        continue;
      }
    }
    if (in->got == PREAMBLE_LEN && place_socket(l, in, now)) {
      drop_incoming(l, i);
      continue;
    }
    /* One that identified itself as ours waits for the connection in setup
     * (which has its own deadline), however long that takes. */
    if (in->got < PREAMBLE_LEN && now > in->deadline) {
      char why[160];
      snprintf(why, sizeof(why), "it sent %zu of the 24 bytes that identify a peer in %lld ms",
               in->got, (long long)(l->handshake_ns / 1000000));
      listen_refuse(l, in->fd, in->peer, why, NULL);
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
  transport_setup_fill_hello(l->dev, m);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  if (getsockname(l->ctrl_fd, (struct sockaddr *)&ss, &sl) == 0)
    sockaddr_str((struct sockaddr *)&ss, m->addr, sizeof(m->addr));
  m->if_mtu = (uint32_t)sock_local_mtu(l->ctrl_fd, NULL, 0);
  m->nsocks = l->peer_hello.nsocks;
  m->nthreads = (uint16_t)l->nthreads;
  size_t len; /* our own record always fits */
  (void)hello_encode(m, l->out_buf, sizeof(l->out_buf), &len);
  record_writer_start(&l->out, l->out_buf, len);
}

/* The connector's hello is in: whether it is the one we wait for (else
 * the connection was refused and reset). */
static bool hello_received(struct listen_comm *l) {
  char why[200];
  struct hello *h = &l->peer_hello;
  bool is_ok = !hello_decode_body(l->in.buf + HELLO_HDR_LEN, l->in.body_len, h, why, sizeof(why));
  h->kind = l->in.kind;
  if (is_ok && (h->nonce != l->nonce || h->connid != l->connid || h->kind != HELLO_CONNECT)) {
    snprintf(why, sizeof(why), "its hello names another listen or connection");
    is_ok = false;
  }
  if (!is_ok) { /* the socket is the refusal's to close, not the reset's */
    int fd = l->ctrl_fd;
    l->ctrl_fd = -1;
    listen_refuse(l, fd, l->ctrl_peer, why, why);
    listen_reset_conn(l);
    return false;
  }
  build_reply(l);
  struct transport_peer peer;
  transport_peer_describe(&peer, h, l->ctrl_peer);
  report_hello(&l->mine, h, peer.desc, "accept");
  accept_report_unreached(l);
  l->ndata = h->nsocks;
  for (int i = 0; i < TRANSPORT_MAX_DATA_SOCKS; i++) l->data_fds[i] = -1;
  l->ndata_arrived = 0;
  return true;
}

/* The TCP comm from the control and data sockets: 0 or an errno (logged). */
static int finish(struct listen_comm *l, void **recv_comm) {
  struct transport_setup s;
  transport_setup_init(&s, l->dev, false, l->ctrl_fd, &l->mine, &l->peer_hello, l->ctrl_peer);
  s.ndata = l->ndata;
  memcpy(s.data_fds, l->data_fds, sizeof(s.data_fds));
  s.nthreads = l->nthreads;
  struct transport_comm *c = NULL;
  int err = transport_setup_sockets()->comm_create(NULL, &s, &c);
  /* The comm owns the sockets now, or closed them on failure. */
  l->ctrl_fd = -1;
  l->ndata = 0;
  listen_reset_conn(l);
  if (err) return err; /* logged */
  ev_count(C_RECV_COMMS, 1);
  *recv_comm = c;
  return 0;
}

/* The comm of the kind whose setup is up: 0 or an errno (logged). */
static int finish_rdma(struct listen_comm *l, void **recv_comm) {
  struct transport_setup s;
  transport_setup_init(&s, l->dev, false, l->ctrl_fd, &l->mine, &l->peer_hello, l->ctrl_peer);
  struct transport_kind_setup *ks = l->ks;
  l->ks = NULL;
  l->ctrl_fd = -1; /* the comm owns it now */
  struct transport_comm *c = NULL;
  int err = l->ks_ops->comm_create(ks, &s, &c);
  listen_reset_conn(l);
  if (err) return err; /* logged */
  ev_count(C_RECV_COMMS, 1);
  *recv_comm = c;
  return 0;
}

const char *accept_stage_name(enum accept_stage stage) {
  switch (stage) {
  case ACCEPT_IDLE: return "waiting for a peer";
  case ACCEPT_HELLO: return "reading the peer's hello";
  case ACCEPT_ANSWER: return "answering the peer's hello";
  case ACCEPT_RDMA: return "setting up RDMA";
  case ACCEPT_DATA_SOCKETS: return "waiting for data sockets";
  }
  return "in an unknown stage";
}

static void enter(struct listen_comm *l, enum accept_stage next) {
  TRACE(LOG_NET, "accept from %s on device %s: %s, then %s", l->ctrl_peer, l->dev->name,
        accept_stage_name(l->stage), accept_stage_name(next));
  l->stage = next;
}

/* ACCEPT_HELLO. A connection that breaks the protocol is refused and reset:
 * PROGRESS_PENDING then, with the machine idle. */
static enum progress step_hello(struct listen_comm *l) {
  char why[200];
  int err;
  enum progress got = record_read(&l->in, l->ctrl_fd, &err, why, sizeof(why));
  if (got == PROGRESS_PENDING) return got;
  if (got == PROGRESS_FAILED) {
    if (err != EPROTO) /* else why names what is wrong with the header */
      snprintf(why, sizeof(why), "it %s after %zu of the %zu bytes of its hello",
               err == EPIPE ? "closed the connection" : strerror(err), l->in.got,
               record_reader_want(&l->in));
    listen_refuse(l, -1, l->ctrl_peer, why, NULL);
    listen_reset_conn(l);
    return PROGRESS_PENDING;
  }
  if (!hello_received(l)) return PROGRESS_PENDING; /* refused */
  enter(l, ACCEPT_ANSWER);
  return PROGRESS_DONE;
}

/* ACCEPT_ANSWER: our hello out, then RDMA setup or the data sockets. */
static enum progress step_answer(struct listen_comm *l) {
  int err;
  enum progress sent = record_write(&l->out, l->ctrl_fd, &err);
  if (sent == PROGRESS_PENDING) return sent;
  if (sent == PROGRESS_FAILED) {
    WARN("peer %s broke the control connection to device %s while we answered its hello "
         "(%s); still waiting for a peer",
         l->ctrl_peer, l->dev->name, strerror(err));
    listen_reset_conn(l);
    return PROGRESS_PENDING;
  }
  note_answered(l, l->connid);
  struct transport_peer peer;
  transport_peer_describe(&peer, &l->peer_hello, l->ctrl_peer);
  l->ks_ops = transport_setup_start(&l->ks, l->dev, false, l->ctrl_fd, &l->mine, &l->peer_hello,
                                    peer.desc, NCCL_NET_TRAFFIC_CLASS_UNDEF);
  /* RTR may wait for neighbour resolution: the setup has its own bound. */
  if (l->ks) l->conn_deadline = INT64_MAX;
  enter(l, l->ks ? ACCEPT_RDMA : ACCEPT_DATA_SOCKETS);
  return PROGRESS_DONE;
}

/* ACCEPT_RDMA: PROGRESS_FAILED when the connection fails (logged). */
static enum progress step_rdma(struct listen_comm *l, int64_t now, void **recv_comm) {
  switch (l->ks_ops->progress(l->ks)) {
  case TRANSPORT_SETUP_PENDING: return PROGRESS_PENDING;
  case TRANSPORT_SETUP_FAILED:
    listen_reset_conn(l);
    ev_count(C_CONN_FAILURES, 1);
    return PROGRESS_FAILED;
  case TRANSPORT_SETUP_UP: return finish_rdma(l, recv_comm) ? PROGRESS_FAILED : PROGRESS_DONE;
  case TRANSPORT_SETUP_FALL_BACK: break;
  }
  l->ks_ops->free(l->ks); /* wait for the TCP data sockets */
  l->ks = NULL;
  l->conn_deadline = now + l->handshake_ns;
  enter(l, ACCEPT_DATA_SOCKETS);
  return PROGRESS_DONE;
}

/* Runs the current stage: PROGRESS_DONE when it finished (the machine has
 * moved on, or built the comm and is idle again). */
static enum progress step(struct listen_comm *l, int64_t now, void **recv_comm) {
  switch (l->stage) {
  case ACCEPT_IDLE: return PROGRESS_PENDING;
  case ACCEPT_HELLO: return step_hello(l);
  case ACCEPT_ANSWER: return step_answer(l);
  case ACCEPT_RDMA: return step_rdma(l, now, recv_comm);
  case ACCEPT_DATA_SOCKETS:
    if (l->ndata_arrived < l->ndata)
      return accept_peer_gave_up(l) ? PROGRESS_FAILED : PROGRESS_PENDING;
    return finish(l, recv_comm) ? PROGRESS_FAILED : PROGRESS_DONE;
  }
  return PROGRESS_FAILED;
}

/* The connection in setup, as far as it goes: PROGRESS_DONE with
 * *recv_comm set, PROGRESS_FAILED when it failed (logged). The one place
 * the connection's deadline is checked. */
static enum progress progress_conn(struct listen_comm *l, int64_t now, void **recv_comm) {
  enum progress p = PROGRESS_DONE;
  while (l->stage != ACCEPT_IDLE && !*recv_comm && p == PROGRESS_DONE) p = step(l, now, recv_comm);
  if (p == PROGRESS_FAILED || *recv_comm) return p;
  if (l->stage != ACCEPT_IDLE && now > l->conn_deadline) {
    WARN("peer %s started a connection to device %s but did not finish its setup in %lld ms "
         "(stopped while this side was %s; %d of %d data sockets arrived); dropped it and still "
         "waiting for a peer. The peer process may have died or stalled",
         l->ctrl_peer, l->dev->name, (long long)(l->handshake_ns / 1000000),
         accept_stage_name(l->stage), l->ndata_arrived, l->ndata);
    listen_reset_conn(l);
  }
  return PROGRESS_PENDING;
}

/* Whether the connection can only go on with a socket not accepted yet:
 * waiting for a peer with none identifying itself, or for data sockets. */
static bool accept_stuck(const struct listen_comm *l) {
  return (l->stage == ACCEPT_IDLE && !l->nincoming) || l->stage == ACCEPT_DATA_SOCKETS;
}

ncclResult_t transport_accept(void *listen_comm, void **recv_comm) {
  struct listen_comm *l = listen_comm;
  *recv_comm = NULL;
  int64_t now = now_ns();
  int err = accept_new(l, now);
  if (err && !sock_err_local(err)) return ncclSystemError; /* logged */
  identify_incoming(l, now);
  enum progress p = progress_conn(l, now, recv_comm);
  /* Data sockets that arrived while the hello was still going out. */
  if (p == PROGRESS_PENDING && l->stage == ACCEPT_DATA_SOCKETS) {
    identify_incoming(l, now);
    p = progress_conn(l, now, recv_comm);
  }
  if (p == PROGRESS_PENDING && err && accept_stuck(l)) {
    accept_report_failed(l, err); /* out of descriptors: no socket can come in */
    return ncclSystemError;
  }
  return p == PROGRESS_FAILED ? ncclSystemError : ncclSuccess;
}
