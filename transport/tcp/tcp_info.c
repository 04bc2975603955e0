/* SPDX-License-Identifier: Apache-2.0 */
/* TCP_INFO of a TCP comm's sockets (transport/run/evidence.h). A socket the abort
 * path replaced with /dev/null (tcp_abort.c) just does not answer. */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/run/evidence.h"
#include "transport/tcp/tcp.h"

static void add_socket(int fd, struct run_tcp_evidence *e) {
  struct tcp_info ti;
  socklen_t len = sizeof(ti);
  memset(&ti, 0, sizeof(ti));
  if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len)) return;
  e->has = true;
  e->nsockets++;
  if (ti.tcpi_rtt > e->rtt_us) e->rtt_us = ti.tcpi_rtt;
  e->retrans += ti.tcpi_total_retrans;
  e->lost += ti.tcpi_lost;
}

void tcp_comm_evidence(const struct transport_comm *xc, struct run_tcp_evidence *out) {
  const struct tcp_comm *c = (const struct tcp_comm *)xc;
  memset(out, 0, sizeof(*out));
  add_socket(c->ctrl_fd, out);
  for (int i = 0; i < c->nsocks; i++) add_socket(c->socks[i].fd, out);
}
