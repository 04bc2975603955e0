/* SPDX-License-Identifier: Apache-2.0 */
/* What the listener learns from a connector's hello about its own
 * addresses: those the connector could not reach before one worked. The
 * connector's host sees the detour; the host whose setting has to change is
 * this one, so it hears it too. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "common/knobs.h"
#include "common/log.h"
#include "topo/strbuf.h"
#include "transport/listen.h"
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
    o = topo_cat(buf, cap, o, "%s%s (%s): ", n ? "; " : "", t->addr, t->ifname);
    if (t->err) o = topo_cat(buf, cap, o, "%s (%s)", strerror(t->err), errno_name(t->err));
    else o = topo_cat(buf, cap, o, "no answer after %d ms", t->ms);
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
  const char *mine = l->mine.host, *cur = knob_str(K_SOCKET_IFNAME);
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
