/* SPDX-License-Identifier: Apache-2.0 */
/* The listen comm, shared by listen.c (listen, closeListen) and accept.c. */
#ifndef DIAG_TRANSPORT_LISTEN_H
#define DIAG_TRANSPORT_LISTEN_H

#include <stdint.h>

#include "transport/frame.h"
#include "transport/hello.h"
#include "transport/record_io.h"
#include "transport/transport.h"

#define LISTEN_MAX_INCOMING 32

/* A socket that has not identified itself yet. */
struct incoming {
  int fd;
  char peer[80];
  uint8_t buf[PREAMBLE_LEN];
  size_t got;
  int64_t deadline;
};

enum conn_stage { CS_NONE, CS_HELLO_HDR, CS_HELLO_BODY, CS_SEND_HELLO, CS_RDMA, CS_DATA };

struct listen_comm {
  uint32_t obj;
  const struct transport_dev *dev;
  int fd;
  uint16_t port;
  uint64_t nonce;
  int64_t handshake_ns;
  int nthreads, nsocks;
  int ninc;
  struct incoming inc[LISTEN_MAX_INCOMING];
  int refusals;
  /* The one connection being assembled (the socket that presented our
   * nonce as a control socket). */
  enum conn_stage stage;
  int ctrl_fd;
  char ctrl_peer[80];
  uint64_t connid;
  int64_t conn_deadline;
  uint8_t in_buf[HELLO_HDR_LEN + HELLO_MAX_BODY];
  struct record_reader in; /* the connector's hello */
  uint8_t out_buf[HELLO_HDR_LEN + HELLO_MAX_BODY];
  struct record_writer out; /* our answer */
  struct hello peer_hello, mine;
  struct ib_setup *ibs; /* the RDMA setup stage, when both sides have RDMA */
  int ndata;
  int data_fds[TRANSPORT_MAX_DATA_SOCKS];
  int data_have;
};

void listen_refuse(struct listen_comm *l, int fd, const char *peer, const char *why);
void listen_reset_conn(struct listen_comm *l);

#endif
