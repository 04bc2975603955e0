/* SPDX-License-Identifier: Apache-2.0 */
/* The connector's state, shared by connect.c (candidates, hello) and
 * connect_data.c (data sockets, hand-off to the transport). */
#ifndef DIAG_TRANSPORT_CONNECT_H
#define DIAG_TRANSPORT_CONNECT_H

#include <net/if.h>
#include <stdint.h>
#include <sys/socket.h>

#include "transport/frame.h"
#include "transport/handle.h"
#include "transport/hello.h"
#include "transport/record_io.h"
#include "transport/transport.h"

enum cand_state { CAND_IDLE, CAND_CONNECTING, CAND_HELLO, CAND_WAIT, CAND_DEAD };

struct cand {
  struct handle_cand hc;
  struct sockaddr_storage ss;
  socklen_t sl;
  char str[80];
  int local; /* a local interface shares its subnet */
  char local_if[IF_NAMESIZE];
  int fd;
  enum cand_state st;
  int attempts;
  int failed_once;
  int last_err;
  char last_why[640];
  int64_t next_try, attempt_start;
  uint8_t out_buf[PREAMBLE_LEN + HELLO_HDR_LEN + HELLO_MAX_BODY];
  struct record_writer out; /* our preamble and hello */
  uint8_t in_buf[HELLO_HDR_LEN + HELLO_MAX_BODY];
  struct record_reader in; /* the listener's hello */
};

struct data_sock {
  int fd;
  int connected;
  size_t off; /* preamble bytes written */
  uint8_t pre[PREAMBLE_LEN];
  int attempts;
  int64_t next_try;
};

struct connecting {
  uint32_t obj;
  struct connecting *next; /* registry of live connects */
  void *handle;
  const struct transport_dev *dev;
  int traffic_class;
  struct handle h;
  uint64_t connid;
  int64_t start, deadline, handshake_ns;
  int ncand;
  struct cand c[HANDLE_MAX_CAND];
  int order[HANDLE_MAX_CAND];
  int won;
  int ctrl_fd;
  char peer_addr[80];
  struct hello mine, peer;
  struct ib_setup *ibs; /* the RDMA setup stage, when both sides have RDMA */
  int ndata, data_done;
  struct data_sock data[TRANSPORT_MAX_DATA_SOCKS];
};

ncclResult_t connect_data_sockets(struct connecting *c, int64_t now);
ncclResult_t connect_finish(struct connecting *c, void **send_comm);
/* After the hello: the RDMA stage. 0 = go on to TCP data sockets (or wait:
 * *send_comm NULL and c->ibs set), else an error; *send_comm set when the
 * RDMA connection is up. */
ncclResult_t connect_rdma(struct connecting *c, void **send_comm);

#endif
