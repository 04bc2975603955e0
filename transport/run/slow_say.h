/* SPDX-License-Identifier: Apache-2.0 */
/* The words of a slow link (slow.h): one WARN naming both ends, the ratio
 * and the counters, and its event. */
#ifndef DIAG_TRANSPORT_RUN_SLOW_SAY_H
#define DIAG_TRANSPORT_RUN_SLOW_SAY_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/run/conns.h"
#include "transport/run/slow_port.h"

struct slow_state;

/* One connection over its last windows (slow.h); for its siblings, their medians. */
struct slow_sample {
  const struct run_conn_info *i;
  struct slow_state *st;
  bool is_measured;   /* enough windows, bytes and busy time */
  bool is_flapped;    /* RDMA: a port of either end went down in the span: not judged */
  double rate;        /* bytes per busy second over the windows */
  uint64_t d_retrans; /* retransmits over the windows */
  uint64_t d_ooo;     /* out-of-order packets received over the windows */
  uint64_t segs;      /* data segments it sent (a sender) or received over the windows */
  uint32_t rtt_us;    /* siblings: their median smoothed RTT */
  double lat_us;      /* mean sampled completion latency over the windows; siblings: median */
  int nsiblings;
  struct slow_port_view port; /* RDMA: its port's counters over the windows */
  /* siblings, RDMA: the medians of their ports' figures, for those on
   * another port (0 when none is), and how many share this one */
  uint64_t port_retries, port_congestion;
  double port_gbps;
  int nother_ports, nsame_port;
  uint64_t requests; /* completed over the windows */
  bool is_named;     /* named slow now (set after the judgement) */
  int ev;            /* enum slow_evidence it was named with */
  double ratio;      /* to its siblings' median at the last judgement; 1 with none */
};

/* What its own sockets show that its siblings' do not. */
enum slow_evidence {
  SLOW_EV_NONE,
  SLOW_EV_LOSS,            /* a sender retransmits a share of its segments */
  SLOW_EV_DISORDER,        /* a receiver gets a share of its segments out of order */
  SLOW_EV_QUEUE,           /* a sender's RTT far above its siblings': a queue on the path */
  SLOW_EV_PORT_LOSS,       /* RDMA: its port resends and sees packets out of sequence */
  SLOW_EV_PORT_CONGESTION, /* RDMA: its port sends or handles CNPs, sees ECN marks */
  SLOW_EV_PORT_RATE,       /* RDMA: its port's link runs at a lower rate than its siblings' */
};

/* Connection x was slow for secs against its siblings' medians sib. */
void slow_say(const struct slow_sample *x, const struct slow_sample *sib, enum slow_evidence ev,
              double ratio, int secs);
/* RDMA port dev:port lost packets over secs (its view v) while its
 * nconns connections (on[0..n) of them named) ran alike: no one path
 * stood out. requests: those they completed. */
void slow_say_port(const char *dev, int port, const struct slow_port_view *v, int secs,
                   const struct slow_sample *const *on, int n, int nconns, uint64_t requests);
/* The other end of connection x names their path slow (flags: what its
 * check said, transport/run/waitfor.h) while this end has no evidence of
 * its own; sib: its siblings' medians when it has measured ones (ratio
 * then its own), else NULL. */
void slow_say_peer(const struct slow_sample *x, const struct slow_sample *sib, double ratio,
                   uint16_t flags, int secs);
/* A link named slow runs as its siblings again. */
void slow_say_recovered(const struct run_conn_info *i);

#endif
