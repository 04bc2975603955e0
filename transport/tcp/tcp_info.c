/* SPDX-License-Identifier: Apache-2.0 */
/* TCP_INFO of a TCP comm's sockets (transport/run/evidence.h). A socket the abort
 * path replaced with /dev/null (tcp_abort.c) just does not answer. */
#include <arpa/inet.h>
#include <linux/tcp.h> /* glibc's struct tcp_info lacks tcpi_rcv_ooopack */
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
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
  e->unacked += ti.tcpi_unacked;
  if (len >= offsetof(struct tcp_info, tcpi_data_segs_out) + sizeof(ti.tcpi_data_segs_out)) {
    e->data_segs_in += ti.tcpi_data_segs_in; /* kernels from 4.6 */
    e->data_segs_out += ti.tcpi_data_segs_out;
  }
  if (len >= offsetof(struct tcp_info, tcpi_rcv_ooopack) + sizeof(ti.tcpi_rcv_ooopack))
    e->ooo += ti.tcpi_rcv_ooopack; /* kernels from 5.4 */
}

/* "10.0.0.6<39312>" of this end of fd. */
static void local_name(int fd, char *out, size_t cap) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof(sa);
  char ip[INET6_ADDRSTRLEN] = "";
  if (fd < 0 || getsockname(fd, (struct sockaddr *)&sa, &len)) return;
  int port = 0;
  if (sa.ss_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)&sa;
    inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
    port = ntohs(a->sin_port);
  } else if (sa.ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&sa;
    inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
    port = ntohs(a->sin6_port);
  }
  if (ip[0]) snprintf(out, cap, "%s<%d>", ip, port);
}

void tcp_comm_evidence(const struct transport_comm *xc, struct run_tcp_evidence *out) {
  const struct tcp_comm *c = (const struct tcp_comm *)xc;
  memset(out, 0, sizeof(*out));
  add_socket(c->ctrl_fd, out);
  for (int i = 0; i < c->nsocks; i++) add_socket(c->socks[i].fd, out);
  local_name(c->nsocks ? c->socks[0].fd : c->ctrl_fd, out->local, sizeof(out->local));
}
