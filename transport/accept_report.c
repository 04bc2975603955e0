/* SPDX-License-Identifier: Apache-2.0 */
/* What the listener tells about a connection in setup beyond the protocol
 * itself: its own addresses that the connector's hello says it could not
 * reach (the connector's host sees the detour; the host whose setting has
 * to change is this one), a connector that gave up and said why, and its
 * own failure to accept, which the connector hears too. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/events.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "transport/abort.h"
#include "transport/frame.h"
#include "transport/listen.h"
#include "transport/prefs.h"
#include "transport/report.h"
#include "transport/sock.h"

/* The local interface and address of the control connection. */
static const struct netif *ctrl_interface(const struct listen_comm *l, char *addr, size_t cap) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  struct ipaddr a;
  if (getsockname(l->ctrl_fd, (struct sockaddr *)&ss, &sl) ||
      ipaddr_from_sockaddr(&a, (struct sockaddr *)&ss, NULL))
    return NULL;
  ipaddr_unmap(&a);
  ipaddr_str(&a, addr, cap);
  return netif_with_addr(&transport_host()->ifs, &a);
}

/* "10.0.0.7<46417> (eth1): no answer after 250 ms" for each tried address
 * on another interface than won; how many. */
static int unreached_list(const struct hello *h, const char *won, char *buf, size_t cap) {
  size_t o = 0;
  int n = 0;
  buf[0] = 0;
  for (int i = 0; i < h->ntried; i++) {
    const struct hello_tried *t = &h->tried[i];
    if (!strcmp(t->ifname, won)) continue;
    o = strbuf_cat(buf, cap, o, "%s%s (%s): ", n ? "; " : "", t->addr, t->ifname);
    if (t->err) o = strbuf_cat(buf, cap, o, "%s (%s)", strerror(t->err), errno_name(t->err));
    else o = strbuf_cat(buf, cap, o, "no answer after %d ms", t->ms);
    n++;
  }
  return n;
}

void accept_report_unreached(const struct listen_comm *l) {
  const struct hello *h = &l->peer_hello;
  char addr[64], list[900], key[1100];
  if (!h->ntried) return;
  const struct netif *won = ctrl_interface(l, addr, sizeof(addr));
  if (!won || !strncmp(won->name, "lo", 2) || !unreached_list(h, won->name, list, sizeof(list)))
    return;
  snprintf(key, sizeof(key), "unreached|%s|%s", h->host, list);
  if (!report_first(key)) return;
  const char *mine = l->mine.host, *cur = transport_prefs()->socket_ifname;
  char job[40], also[160] = "";
  if (report_job_ifname(won->name, h->ifname, job, sizeof(job)) && strcmp(job, won->name))
    snprintf(also, sizeof(also),
             "; for the whole job, NCCL_SOCKET_IFNAME=%s works on every node "
             "(%s here, %s on %s)",
             job, won->name, h->ifname, h->host);
  WARN("%s could not reach this host's %s, and connected to %s (%s) instead: %s advertises "
       "addresses %s does not reach. On %s set NCCL_SOCKET_IFNAME=%s (%s%s now) so it offers the "
       "network both hosts share first%s",
       h->host, list, addr, won->name, mine, h->host, mine, won->name, cur ? "it is " : "unset",
       cur ? cur : "", also);
}

/* "host-b (10.0.0.2<41234>)", or the address alone before its hello. */
static void peer_name(const struct listen_comm *l, char *buf, size_t cap) {
  if (l->stage > ACCEPT_HELLO && l->peer_hello.host[0])
    snprintf(buf, cap, "%s (%s)", l->peer_hello.host, l->ctrl_peer);
  else snprintf(buf, cap, "%s", l->ctrl_peer);
}

void accept_report_failed(struct listen_comm *l, int err) {
  char advice[700], peer[160], reason[MSG_ABORT_MAX];
  bool is_in_setup = l->stage != ACCEPT_IDLE && l->ctrl_fd >= 0;
  sock_fd_advice(err, 1 + l->nsocks, advice, sizeof(advice));
  peer_name(l, peer, sizeof(peer));
  WARN("accept on device %s port %u failed%s%s: %s (%s)%s%s", l->dev->name, l->port,
       is_in_setup ? " while connecting " : "", is_in_setup ? peer : "", strerror(err),
       errno_name(err), advice[0] ? "; " : "", advice);
  if (!is_in_setup) return;
  snprintf(reason, sizeof(reason), "%s could not accept this connection's sockets: %s (%s)%s%s",
           l->mine.host[0] ? l->mine.host : "the listener", strerror(err), errno_name(err),
           advice[0] ? "; " : "", advice);
  transport_send_abort(l->ctrl_fd, 0, reason);
  ev_count(C_CONN_FAILURES, 1);
  listen_reset_conn(l);
}

bool accept_peer_gave_up(struct listen_comm *l) {
  uint8_t buf[MSG_HDR_LEN + MSG_ABORT_MAX];
  ssize_t n = recv(l->ctrl_fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
  struct msg_hdr h;
  char why[160], peer[160];
  /* Only a whole notice counts: the connector's first message may already
   * be on its way, and a closed connection has its own deadline. */
  if (n < MSG_HDR_LEN || msg_hdr_decode(buf, &h, why, sizeof(why)) || !(h.flags & MSG_F_ABORT) ||
      (size_t)n < MSG_HDR_LEN + h.size)
    return false;
  peer_name(l, peer, sizeof(peer));
  WARN("%s gave up its connection to device %s while this side was %s (%d of %d data sockets "
       "arrived): %.*s",
       peer, l->dev->name, accept_stage_name(l->stage), l->ndata_arrived, l->ndata, (int)h.size,
       (const char *)buf + MSG_HDR_LEN);
  ev_count(C_CONN_FAILURES, 1);
  listen_reset_conn(l);
  return true;
}
