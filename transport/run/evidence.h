/* SPDX-License-Identifier: Apache-2.0 */
/* What the kernel says about a connection's path, read off the data path
 * (by the metrics writer and at close): for TCP, TCP_INFO of its sockets. */
#ifndef DIAG_TRANSPORT_RUN_EVIDENCE_H
#define DIAG_TRANSPORT_RUN_EVIDENCE_H

#include <stdbool.h>
#include <stdint.h>

struct transport_comm;

struct run_tcp_evidence {
  bool has;          /* at least one socket answered */
  uint32_t rtt_us;   /* the largest smoothed RTT of its sockets */
  uint64_t retrans;  /* segments retransmitted, all its sockets, over their lives */
  uint32_t lost;     /* segments the kernel counts lost now, all its sockets */
  uint32_t nsockets; /* sockets that answered */
  uint64_t ooo;     /* out-of-order packets received, all its sockets (a receiver's view of loss) */
  uint32_t unacked; /* segments sent and not acknowledged now, all its sockets */
  uint64_t data_segs_out, data_segs_in; /* data segments sent (retransmits too) and received */
  char local[64]; /* this end's address of its first data socket, "10.0.0.6<39312>" */
};

/* TCP_INFO of every socket of a TCP comm (transport/tcp/tcp_info.c): a few
 * getsockopt calls, none blocking. */
void tcp_comm_evidence(const struct transport_comm *c, struct run_tcp_evidence *out);

#endif
