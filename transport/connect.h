/* SPDX-License-Identifier: Apache-2.0 */
/* The connector: a non-blocking state machine, shared by connect.c (the
 * machine, the listener's candidate addresses and the hello) and
 * connect_data.c (the RDMA stage, the data sockets, the hand-off to a
 * transport). Its stages, in order (connect_stage_name() words them):
 *   CONNECT_CANDIDATES    try the listener's addresses and send a hello on
 *                         each that answers; the first whose listener
 *                         answers with this handle's nonce wins, and its
 *                         socket becomes the control socket
 *   CONNECT_RDMA          only when both sides have RDMA devices: RDMA
 *                         setup on the control socket (ib/setup/ib_setup.c); up
 *                         ends the machine, a fall back goes on to
 *   CONNECT_DATA_SOCKETS  the listener's number of TCP data sockets to the
 *                         address that won, each introduced by a preamble
 *   CONNECT_DONE          the comm is built
 * Each candidate address has its own small machine (enum cand_stage). */
#ifndef DIAG_TRANSPORT_CONNECT_H
#define DIAG_TRANSPORT_CONNECT_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/progress.h"
#include "transport/frame.h"
#include "transport/handle.h"
#include "transport/hello.h"
#include "transport/record_io.h"
#include "transport/setup_ops.h"
#include "transport/transport.h"

enum connect_stage {
  CONNECT_CANDIDATES,
  CONNECT_RDMA,
  CONNECT_DATA_SOCKETS,
  CONNECT_DONE,
};

/* "trying the listener's addresses": for logs. */
const char *connect_stage_name(enum connect_stage stage);

/* One of the listener's addresses: idle (not tried yet) -> connecting (a
 * TCP connect in flight) -> hello (ours out, the listener's in) -> the
 * winner; a failed attempt waits (a retryable errno: try again after a
 * backoff) or is dead. */
enum cand_stage { CAND_IDLE, CAND_CONNECTING, CAND_HELLO, CAND_WAIT, CAND_DEAD };

struct cand {
  struct handle_cand hc;
  struct sockaddr_storage ss;
  socklen_t sl;
  char str[80];
  bool is_local; /* a local interface shares its subnet */
  char local_if[IF_NAMESIZE];
  char scope_if[IF_NAMESIZE]; /* a link-local address: the local interface to its link */
  bool is_peer_loopback;      /* the loopback address of a listener on another host: never tried */
  int fd;
  enum cand_stage stage;
  int attempts;
  bool was_connected; /* a TCP connection came up: reachable, whatever happened next */
  bool was_dropped;   /* closed or reset before any answer: tried once more to tell why */
  int last_err;       /* of the last failed attempt; 0: the process there refused us */
  char last_why[640];
  int64_t next_try, attempt_start;
  uint8_t out_buf[PREAMBLE_LEN + HELLO_HDR_LEN + HELLO_MAX_BODY];
  struct record_writer out; /* our preamble and hello */
  uint8_t in_buf[HELLO_HDR_LEN + HELLO_MAX_BODY];
  struct record_reader in; /* the listener's hello */
};

struct data_sock {
  int fd; /* -1: not open (yet, or again after a failed connect) */
  bool is_connected;
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
  enum connect_stage stage;
  int local_err; /* socket() failed here (EMFILE...): no address can be tried */
  int ncands;
  struct cand *cands;         /* the handle's addresses as tried here (connect_cands.c) */
  int *cand_order;            /* indices into cands: local subnets first */
  const struct cand *winner;  /* from CONNECT_RDMA on */
  const struct cand *refuser; /* the first listener that refused us, with its reason */
  bool is_refusal_final;      /* it was on the handle's own host: nothing else to try */
  bool has_warned_busy;       /* the listener has been slow to answer: said once */
  int ctrl_fd;
  char peer_addr[80];
  struct hello mine, peer;
  struct transport_kind_setup *ks; /* CONNECT_RDMA: the kind that took it */
  const struct transport_setup_ops *ks_ops;
  int ndata;                    /* from CONNECT_DATA_SOCKETS on: the listener's count */
  struct data_sock *data_socks; /* room for the listener's count */
};

/* connect_cands.c. The candidates from c->h, ordered, each link-local one
 * once per local link: 0 or ENOMEM. */
int connect_cands_build(struct connecting *c);

/* connect_report.c. "10.0.0.7<46417> (eth1 on host-b, subnet 10.0.0.0/24,
 * local eth0)": an address with its interface, host and reachability. */
void connect_cand_desc(const struct connecting *c, const struct cand *k, char *buf, size_t cap);
/* A WARN (once per distinct detour) when addresses we preferred failed
 * and won, a later one, worked. */
void connect_report_detour(struct connecting *c, const struct cand *won);
/* The WARN when no address worked: each address, what happened to it, the
 * cause and the fix. */
void connect_report_failure(struct connecting *c);

/* connect_data.c. The RDMA stage: on TRANSPORT_SETUP_UP *send_comm is the
 * kind's comm; TRANSPORT_SETUP_FAILED is logged (a failed comm creation too). */
enum transport_setup_result connect_rdma(struct connecting *c, void **send_comm);
/* PROGRESS_DONE once every data socket is connected and introduced. */
enum progress connect_data_sockets(struct connecting *c, int64_t now);
/* The TCP comm from the control and data sockets: 0 or an errno (logged). */
int connect_finish(struct connecting *c, void **send_comm);

#endif
