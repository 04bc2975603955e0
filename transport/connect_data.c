/* SPDX-License-Identifier: Apache-2.0 */
/* The connector's last steps: open the data sockets the listener asked for
 * (to the address that won), each introduced by a preamble, then hand the
 * sockets to the transport. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "transport/connect.h"
#include "transport/ib/ib.h"
#include "transport/sock.h"

static ncclResult_t data_fail(struct connecting *c, int i, int err, const char *what) {
  char advice[400];
  sock_errno_advice(err, advice, sizeof(advice));
  ev_count(C_CONN_FAILURES, 1);
  WARN("connect to %s for device %s: data socket %d of %d to %s: %s failed: %s%s%s", c->peer.host,
       c->dev->name, i, c->ndata, c->peer_addr, what, strerror(err), advice[0] ? "; " : "", advice);
  return ncclSystemError;
}

ncclResult_t connect_data_sockets(struct connecting *c, int64_t now) {
  const struct cand *won = &c->c[c->won];
  for (int i = 0; i < c->ndata; i++) {
    struct data_sock *d = &c->data[i];
    if (d->connected && d->off == PREAMBLE_LEN) continue;
    if (d->fd < 0) {
      if (now < d->next_try) continue;
      d->attempts++;
      int err = sock_connect_start((const struct sockaddr *)&won->ss, won->sl, &d->fd);
      if (err == 0) {
        d->connected = 1;
      } else if (err != EINPROGRESS) {
        if (!sock_err_retryable(err) || now > c->deadline) return data_fail(c, i, err, "connect");
        d->next_try = now + 10000000LL * d->attempts;
        continue;
      }
      struct preamble p = {ROLE_DATA, (uint16_t)i, c->h.nonce, c->connid};
      preamble_encode(&p, d->pre);
      d->off = 0;
    }
    if (!d->connected) {
      int err = sock_connect_done(d->fd);
      if (err == EINPROGRESS) continue;
      if (err) {
        close(d->fd);
        d->fd = -1;
        if (!sock_err_retryable(err) || now > c->deadline) return data_fail(c, i, err, "connect");
        d->next_try = now + 10000000LL * d->attempts;
        continue;
      }
      d->connected = 1;
    }
    while (d->off < PREAMBLE_LEN) {
      size_t n;
      int err = sock_send(d->fd, d->pre + d->off, PREAMBLE_LEN - d->off, &n);
      if (err == EAGAIN) break;
      if (err) return data_fail(c, i, err, "introducing it");
      d->off += n;
    }
    if (d->off == PREAMBLE_LEN) c->data_done++;
  }
  return ncclSuccess;
}

ncclResult_t connect_rdma(struct connecting *c, void **send_comm) {
  enum ib_setup_result r = ib_setup_progress(c->ibs);
  if (r == IB_SETUP_PENDING) return ncclSuccess;
  if (r == IB_SETUP_FAILED) {
    ev_count(C_CONN_FAILURES, 1);
    return ncclSystemError;
  }
  if (r == IB_SETUP_FALL_BACK) { /* the TCP data sockets come next */
    ib_setup_free(c->ibs);
    c->ibs = NULL;
    return ncclSuccess;
  }
  struct transport_setup s;
  transport_setup_init(&s, c->dev, 1, c->ctrl_fd, &c->mine, &c->peer, c->peer_addr);
  struct transport_comm *comm = NULL;
  struct ib_setup *ibs = c->ibs;
  c->ibs = NULL;
  c->ctrl_fd = -1;                                            /* the comm owns it now */
  if (ib_comm_create(ibs, &s, &comm)) return ncclSystemError; /* logged */
  ev_count(C_SEND_COMMS, 1);
  *send_comm = comm;
  return ncclSuccess;
}

ncclResult_t connect_finish(struct connecting *c, void **send_comm) {
  struct transport_setup s;
  transport_setup_init(&s, c->dev, 1, c->ctrl_fd, &c->mine, &c->peer, c->peer_addr);
  s.ndata = c->ndata;
  for (int i = 0; i < c->ndata; i++) {
    s.data_fds[i] = c->data[i].fd;
    c->data[i].fd = -1;
  }
  c->ndata = 0;
  c->ctrl_fd = -1;
  s.nthreads = c->h.nthreads;
  struct transport_comm *comm = NULL;
  if (tcp_comm_create(&s, &comm)) return ncclSystemError; /* logged */
  ev_count(C_SEND_COMMS, 1);
  *send_comm = comm;
  return ncclSuccess;
}
