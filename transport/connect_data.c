/* SPDX-License-Identifier: Apache-2.0 */
/* The connector's stages after the hello (see connect.h): the RDMA setup
 * when both sides have RDMA devices, else (or after a fall back) the data
 * sockets the listener asked for, to the address that won, each introduced
 * by a preamble; then the hand-off of the sockets to a transport. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "transport/abort.h"
#include "transport/connect.h"
#include "transport/sock.h"

/* The WARN here, and the same reason to the listener, which would
 * otherwise wait for data sockets that never come. */
static void data_fail(struct connecting *c, int i, int err, const char *what) {
  char advice[700], reason[MSG_ABORT_MAX];
  sock_fd_advice(err, 1 + c->ndata, advice, sizeof(advice));
  ev_count(C_CONN_FAILURES, 1);
  snprintf(reason, sizeof(reason), "%s could not open data socket %d of %d: %s failed: %s (%s)%s%s",
           c->mine.host, i, c->ndata, what, strerror(err), errno_name(err), advice[0] ? "; " : "",
           advice);
  WARN("connect to %s for device %s: data socket %d of %d to %s: %s failed: %s (%s)%s%s",
       c->peer.host, c->dev->name, i, c->ndata, c->peer_addr, what, strerror(err), errno_name(err),
       advice[0] ? "; " : "", advice);
  transport_send_abort(c->ctrl_fd, 0, reason);
}

/* A failed connect: retried after a short backoff while the error is
 * retryable and the deadline is ahead; false when the connect fails. */
static bool retry_later(struct connecting *c, int i, int err, int64_t now) {
  if (!sock_err_retryable(err) || now > c->deadline) {
    data_fail(c, i, err, "connect");
    return false;
  }
  c->data_socks[i].next_try = now + 10000000LL * c->data_socks[i].attempts;
  return true;
}

/* One data socket as far as it goes: PROGRESS_DONE once it is connected
 * and introduced. */
static enum progress data_sock_step(struct connecting *c, int i, int64_t now) {
  struct data_sock *d = &c->data_socks[i];
  if (d->fd < 0) {
    if (now < d->next_try) return PROGRESS_PENDING;
    d->attempts++;
    int err = sock_connect_start((const struct sockaddr *)&c->winner->ss, c->winner->sl, &d->fd);
    if (err == 0) d->is_connected = true;
    else if (err != EINPROGRESS)
      return retry_later(c, i, err, now) ? PROGRESS_PENDING : PROGRESS_FAILED;
    struct preamble p = {ROLE_DATA, (uint16_t)i, c->h.nonce, c->connid};
    preamble_encode(&p, d->pre);
    d->off = 0;
  }
  if (!d->is_connected) {
    int err = sock_connect_done(d->fd);
    if (err == EINPROGRESS) return PROGRESS_PENDING;
    if (err) {
      close(d->fd);
      d->fd = -1;
      return retry_later(c, i, err, now) ? PROGRESS_PENDING : PROGRESS_FAILED;
    }
    d->is_connected = true;
  }
  while (d->off < PREAMBLE_LEN) {
    size_t n;
    int err = sock_send(d->fd, d->pre + d->off, PREAMBLE_LEN - d->off, &n);
    if (err == EAGAIN) return PROGRESS_PENDING;
    if (err) {
      data_fail(c, i, err, "introducing it");
      return PROGRESS_FAILED;
    }
    d->off += n;
  }
  return PROGRESS_DONE;
}

enum progress connect_data_sockets(struct connecting *c, int64_t now) {
  int ready = 0;
  for (int i = 0; i < c->ndata; i++) {
    enum progress p = data_sock_step(c, i, now);
    if (p == PROGRESS_FAILED) return p;
    ready += p == PROGRESS_DONE;
  }
  return ready == c->ndata ? PROGRESS_DONE : PROGRESS_PENDING;
}

enum transport_setup_result connect_rdma(struct connecting *c, void **send_comm) {
  enum transport_setup_result r = c->ks_ops->progress(c->ks);
  if (r == TRANSPORT_SETUP_FAILED) ev_count(C_CONN_FAILURES, 1);
  if (r == TRANSPORT_SETUP_FAILED || r == TRANSPORT_SETUP_PENDING) return r;
  if (r == TRANSPORT_SETUP_FALL_BACK) { /* the TCP data sockets come next */
    c->ks_ops->free(c->ks);
    c->ks = NULL;
    return r;
  }
  struct transport_setup s;
  transport_setup_init(&s, c->dev, true, c->ctrl_fd, &c->mine, &c->peer, c->peer_addr);
  struct transport_comm *comm = NULL;
  struct transport_kind_setup *ks = c->ks;
  c->ks = NULL;
  c->ctrl_fd = -1; /* the comm owns it now */
  if (c->ks_ops->comm_create(ks, &s, &comm)) return TRANSPORT_SETUP_FAILED; /* logged */
  ev_count(C_SEND_COMMS, 1);
  *send_comm = comm;
  return r;
}

int connect_finish(struct connecting *c, void **send_comm) {
  struct transport_setup s;
  transport_setup_init(&s, c->dev, true, c->ctrl_fd, &c->mine, &c->peer, c->peer_addr);
  s.ndata = c->ndata;
  for (int i = 0; i < c->ndata; i++) {
    s.data_fds[i] = c->data_socks[i].fd;
    c->data_socks[i].fd = -1;
  }
  c->ndata = 0;
  c->ctrl_fd = -1;
  s.nthreads = c->h.nthreads;
  struct transport_comm *comm = NULL;
  int err = transport_setup_sockets()->comm_create(NULL, &s, &comm);
  if (err) return err; /* logged */
  ev_count(C_SEND_COMMS, 1);
  *send_comm = comm;
  return 0;
}
