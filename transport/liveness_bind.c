/* SPDX-License-Identifier: Apache-2.0 */
/* The liveness port's listening sockets: one per address of the interfaces
 * the plugin chose, all on one kernel-chosen port, so the port is not open
 * on interfaces the job does not use. A peer checks this process at the
 * control connection's address, which is one of them. The wildcard only
 * when none binds (addresses this host does not have, as in a test that
 * describes another host). */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/strbuf.h"
#include "transport/liveness_int.h"
#include "transport/sock.h"
#include "transport/transport.h"

static void close_all(struct liveness_state *st) {
  for (int i = 0; i < st->nlisten; i++) close(st->listen_fds[i]);
  st->nlisten = 0;
}

/* One listening socket on a at port (0: the kernel picks): 0 or an errno. */
static int bind_one(const struct ipaddr *a, unsigned scope, uint16_t *port, int *fd) {
  struct sockaddr_storage ss;
  socklen_t len = ipaddr_to_sockaddr(a, *port, &ss);
  if (!len) return EAFNOSUPPORT;
  if (ss.ss_family == AF_INET6) ((struct sockaddr_in6 *)&ss)->sin6_scope_id = scope;
  int s = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  int one = 1;
  if (ss.ss_family == AF_INET6) setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  if (bind(s, (struct sockaddr *)&ss, len) || listen(s, 4096)) {
    int err = errno;
    close(s);
    return err;
  }
  if (!*port) {
    struct sockaddr_storage got;
    socklen_t gl = sizeof(got);
    getsockname(s, (struct sockaddr *)&got, &gl);
    *port = ntohs(got.ss_family == AF_INET ? ((struct sockaddr_in *)&got)->sin_port
                                           : ((struct sockaddr_in6 *)&got)->sin6_port);
  }
  *fd = s;
  return 0;
}

/* Every chosen address on one port: true when at least one bound. A
 * later address that finds the port taken starts over on a new port. */
static bool bind_chosen(struct liveness_state *st, char *where, size_t cap) {
  const struct transport_host *host = transport_host();
  for (int attempt = 0; attempt < 8; attempt++) {
    uint16_t port = 0;
    size_t o = 0;
    bool is_taken = false;
    where[0] = 0;
    for (int j = 0; host && j < host->choice.n && !is_taken; j++) {
      const struct netif *n = &host->ifs.ifs[host->choice.idx[j]];
      for (int k = 0; k < n->naddr && st->nlisten < LIVE_MAX_LISTEN; k++) {
        int fd = -1;
        unsigned scope = ipaddr_is_link_local(&n->addr[k]) ? if_nametoindex(n->name) : 0;
        int err = bind_one(&n->addr[k], scope, &port, &fd);
        if (err == EADDRINUSE && st->nlisten) {
          is_taken = true;
          break;
        }
        if (err) continue; /* not an address of this host: nothing reaches it */
        st->listen_fds[st->nlisten++] = fd;
        char a[64];
        ipaddr_str(&n->addr[k], a, sizeof(a));
        o = strbuf_cat(where, cap, o, "%s%s", o ? ", " : "", a);
      }
    }
    if (!is_taken) {
      st->port = port;
      return st->nlisten > 0;
    }
    close_all(st);
  }
  return false;
}

int liveness_bind(struct liveness_state *st, char *where, size_t cap) {
  st->nlisten = 0;
  if (bind_chosen(st, where, cap)) return 0;
  snprintf(where, cap, "every address (none of the chosen interfaces' addresses could be bound)");
  int fd = -1;
  int err = sock_listen(AF_INET6, &fd, &st->port);
  if (err == EAFNOSUPPORT) err = sock_listen(AF_INET, &fd, &st->port);
  if (err) return err;
  st->listen_fds[st->nlisten++] = fd;
  return 0;
}
