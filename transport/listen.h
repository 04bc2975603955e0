/* SPDX-License-Identifier: Apache-2.0 */
/* The listen comm, shared by listen.c (listen, closeListen) and accept.c.
 *
 * accept is a non-blocking state machine for one connection at a time
 * (accept_stage_name() words its stages):
 *   ACCEPT_IDLE          no connection in setup: sockets that arrive are
 *                        held until their first 24 bytes (the preamble)
 *                        name this listen's nonce; a control socket starts
 *   ACCEPT_HELLO         the connector's hello, read and checked
 *   ACCEPT_ANSWER        our hello, sent back
 *   ACCEPT_RDMA          only when both sides have RDMA devices: RDMA
 *                        setup on the control socket (ib/setup/ib_setup.c); up
 *                        ends the machine, a fall back goes on to
 *   ACCEPT_DATA_SOCKETS  the connector's data sockets, each attached by its
 *                        preamble as it arrives
 * then the comm is built and the machine is idle again. A connection that
 * breaks the protocol is refused (a WARN naming the remote) and the
 * listener keeps waiting for the real peer; one that stalls past its
 * deadline (NCCL_DIAG_HANDSHAKE_TIMEOUT_MS; RDMA setup has its own) is
 * dropped. */
#ifndef DIAG_TRANSPORT_LISTEN_H
#define DIAG_TRANSPORT_LISTEN_H

#include <stdint.h>

#include "common/addr.h"

#include "transport/frame.h"
#include "transport/hello.h"
#include "transport/record_io.h"
#include "transport/setup_ops.h"
#include "transport/transport.h"

/* Sockets that have not identified themselves yet, in all and from one
 * source address. A newcomer takes the place of the oldest silent one
 * (from its own source when that source holds its share), so strangers
 * cannot crowd out the real peer, whose sockets identify themselves at
 * once; one that identified itself is never dropped for a newcomer. */
#define LISTEN_MAX_INCOMING 64
#define LISTEN_PER_SOURCE 16
/* Connections whose hello this listen answered, remembered so that the
 * connector's other attempts (the same connection raced on another of our
 * addresses) are dropped when they come up, however late. */
#define LISTEN_ANSWERED 256

/* A socket that has not identified itself yet. */
struct incoming {
  int fd;
  struct ipaddr src;
  char peer[80];
  uint8_t buf[PREAMBLE_LEN];
  size_t got;
  int64_t deadline;
};

enum accept_stage {
  ACCEPT_IDLE,
  ACCEPT_HELLO,
  ACCEPT_ANSWER,
  ACCEPT_RDMA,
  ACCEPT_DATA_SOCKETS,
};

/* "reading the peer's hello": for logs. */
const char *accept_stage_name(enum accept_stage stage);

struct listen_comm {
  uint32_t obj;
  const struct transport_dev *dev;
  int fd;
  uint16_t port;
  uint64_t nonce;
  int64_t handshake_ns;
  int nthreads, nsocks;
  int nincoming;
  struct incoming incoming[LISTEN_MAX_INCOMING];
  int refusals;
  unsigned long turned_away, said_turned_away; /* refused or dropped quietly */
  int64_t said_turned_away_ns;
  /* The one connection being assembled (the socket that presented our
   * nonce as a control socket). */
  enum accept_stage stage;
  int ctrl_fd;
  char ctrl_peer[80];
  uint64_t connid;
  int64_t conn_deadline;
  uint8_t in_buf[HELLO_HDR_LEN + HELLO_MAX_BODY];
  struct record_reader in; /* the connector's hello */
  uint8_t out_buf[HELLO_HDR_LEN + HELLO_MAX_BODY];
  struct record_writer out; /* our answer */
  struct hello peer_hello, mine;
  struct transport_kind_setup *ks; /* ACCEPT_RDMA: the kind that took it */
  const struct transport_setup_ops *ks_ops;
  int ndata, ndata_arrived;
  int data_fds[TRANSPORT_MAX_DATA_SOCKS];
  uint64_t answered[LISTEN_ANSWERED]; /* a ring of connection ids, the newest at nanswered - 1 */
  unsigned nanswered;
};

/* Counts and logs a refused connection (the first few as WARNs) and closes
 * fd (when >= 0). tell, when not NULL, is the reason in words for the
 * connector: sent as a refusal record (hello.h) before the close, to a
 * connection that spoke our protocol, so it fails at once instead of at
 * its connect timeout. */
void listen_refuse(struct listen_comm *l, int fd, const char *peer, const char *why,
                   const char *tell);
/* Closes a silent socket dropped to make room for a newcomer: counted, and
 * said at INFO at most every 10 s (a flood must not flood the log or the
 * event file; listen_refuse, too, goes quiet after the first few). */
void listen_turn_away(struct listen_comm *l, int fd, const char *peer, const char *why,
                      int64_t now);
/* Drops the connection in setup, if any: the machine is idle again. */
void listen_reset_conn(struct listen_comm *l);

/* accept_report.c: once the connector's hello is in, a WARN (once per
 * distinct case) when it could not reach some of this listener's addresses
 * before one worked, with the setting to change on this host. */
void accept_report_unreached(const struct listen_comm *l);
/* accept(2) failed for this process's own reason (EMFILE...): the WARN
 * with the fix, the same reason to the connector whose connection is in
 * setup, and that connection dropped. */
void accept_report_failed(struct listen_comm *l, int err);
/* Whether the connector sent an abort notice on the control socket (a
 * WARN with its reason; the connection is dropped). Reads nothing else. */
bool accept_peer_gave_up(struct listen_comm *l);

#endif
