/* SPDX-License-Identifier: Apache-2.0 */
/* listen and closeListen. The listener binds the wildcard address (both
 * families when it advertises IPv6) on one kernel-chosen port and puts every
 * chosen interface's address in the handle, this device's own first: a
 * connector that cannot reach one address tries the others, and says which
 * worked. The random nonce keeps every other connection out. */
#include "transport/listen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "transport/handle.h"
#include "transport/prefs.h"
#include "transport/report.h"
#include "transport/sock.h"

/* Best effort, never blocking: the record fits an empty socket buffer. What
 * the connector sent is drained first, so the close ends in a FIN behind
 * the record rather than a reset that could overtake it. */
static void tell_refusal(int fd, const char *tell) {
  uint8_t rec[HELLO_HDR_LEN + HELLO_REASON_MAX + 256];
  size_t len;
  if (hello_encode_refusal(tell, rec, sizeof(rec), &len)) return;
  char sink[4096];
  for (int i = 0; i < 64 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++) {
  }
  (void)!send(fd, rec, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  shutdown(fd, SHUT_WR);
}

/* Past the first few, refusals and dropped sockets are counted and said
 * at INFO at most every 10 s: a flood must not flood the log or the event
 * file. */
#define LISTEN_LOUD_REFUSALS 25
static void say_quietly(struct listen_comm *l, const char *peer, const char *why, int64_t now) {
  l->turned_away++;
  ev_count(C_REFUSED_CONNS, 1);
  if (l->said_turned_away_ns && now - l->said_turned_away_ns < 10000000000LL) return;
  INFO(LOG_NET,
       "listen on device %s port %u: refused or dropped %lu more connections (the latest from %s: "
       "%s); still waiting for the real peer",
       l->dev->name, l->port, l->turned_away - l->said_turned_away, peer, why);
  l->said_turned_away = l->turned_away;
  l->said_turned_away_ns = now;
}

void listen_refuse(struct listen_comm *l, int fd, const char *peer, const char *why,
                   const char *tell) {
  if (++l->refusals > LISTEN_LOUD_REFUSALS) {
    say_quietly(l, peer, why, now_ns());
  } else {
    ev_count(C_REFUSED_CONNS, 1);
    struct ev e;
    ev_begin(&e, "refused_connection");
    ev_str(&e, "device", l->dev->name);
    ev_int(&e, "port", l->port);
    ev_str(&e, "remote", peer);
    ev_str(&e, "reason", why);
    ev_end(&e);
    /* A port scanner must not flood the log: the first few are WARNs. */
    if (l->refusals <= 5)
      WARN("refused connection from %s to device %s port %u: %s. It is not this listener's "
           "peer (a stray or hostile connection, a process of another job, or a peer with "
           "another plugin version); still waiting for the real peer",
           peer, l->dev->name, l->port, why);
    else
      INFO(LOG_NET, "refused connection from %s to device %s port %u: %s", peer, l->dev->name,
           l->port, why);
  }
  if (fd >= 0 && tell) tell_refusal(fd, tell);
  if (fd >= 0) close(fd);
}

void listen_turn_away(struct listen_comm *l, int fd, const char *peer, const char *why,
                      int64_t now) {
  close(fd);
  say_quietly(l, peer, why, now);
}

void listen_reset_conn(struct listen_comm *l) {
  if (l->ctrl_fd >= 0) close(l->ctrl_fd);
  for (int i = 0; i < l->ndata; i++)
    if (l->data_fds[i] >= 0) close(l->data_fds[i]);
  l->ctrl_fd = -1;
  if (l->ks) l->ks_ops->free(l->ks);
  l->ks = NULL;
  l->stage = ACCEPT_IDLE;
  record_reader_init(&l->in, l->in_buf, sizeof(l->in_buf), HELLO_HDR_LEN, hello_decode_header);
  record_writer_start(&l->out, l->out_buf, 0);
  l->ndata = l->ndata_arrived = 0;
}

static uint64_t random_u64(const void *salt) {
  uint64_t v;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == sizeof(v)) return v;
  return ((uint64_t)now_ns() << 20) ^ ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)salt;
}

/* Every address of every chosen interface of the listen family; this
 * device's interface first. The connector puts the scope on an IPv6
 * link-local one (transport/connect_cands.c). */
static void add_candidates(struct handle *h, const struct transport_dev *dev, int family,
                           uint16_t port) {
  const struct transport_host *host = transport_host();
  for (int pass = 0; pass < 2; pass++) {
    for (int j = 0; j < host->choice.n; j++) {
      const struct netif *n = &host->ifs.ifs[host->choice.idx[j]];
      int own = !strcmp(n->name, dev->ifname);
      if (own != (pass == 0)) continue;
      bool has_routable = false;
      for (int k = 0; k < n->naddr; k++)
        has_routable |=
          ipaddr_is_routable(&n->addr[k]) && (family == AF_INET6 || n->addr[k].family == AF_INET);
      for (int k = 0; k < n->naddr && h->ncands < HANDLE_MAX_CAND; k++) {
        const struct ipaddr *a = &n->addr[k];
        if (family == AF_INET && a->family != AF_INET) continue;
        if (family == AF_INET6 && a->family != AF_INET6 && transport_prefs()->socket_family == 1)
          continue; /* IPv6 asked for: no IPv4-mapped candidates */
        /* An IPv6 link-local address only where nothing better is there:
         * it takes room in the handle and reaches one link at most. */
        if (ipaddr_is_link_local(a) && a->family == AF_INET6 && has_routable) continue;
        if (ipaddr_is_loopback(a) && !n->loopback) continue;
        struct handle_cand *c = &h->cands[h->ncands++];
        c->addr = *a;
        c->port = port;
        snprintf(c->ifname, HANDLE_IFNAME_LEN, "%s", n->name);
      }
    }
  }
}

/* Every address this listen offers is loopback or link-local: no other host
 * can reach it, or only one on the same link. Said once per process. */
static void warn_unroutable(const struct transport_dev *dev, const struct handle *h) {
  char list[400] = "";
  size_t o = 0;
  bool has_loopback = false;
  for (int i = 0; i < h->ncands; i++) {
    const struct handle_cand *c = &h->cands[i];
    if (ipaddr_is_routable(&c->addr)) return;
    has_loopback |= ipaddr_is_loopback(&c->addr);
    char a[64];
    ipaddr_str(&c->addr, a, sizeof(a));
    o = strbuf_cat(list, sizeof(list), o, "%s%s (%s)", i ? ", " : "", a, c->ifname);
  }
  char key[480], have[700];
  snprintf(key, sizeof(key), "unroutable|%s", list);
  if (!h->ncands || !report_first(key)) return;
  const char *ifname = transport_prefs()->socket_ifname;
  /* "=lo" names loopback exactly: a one-host job (a test, a bench) chose
   * it on purpose, so it is said, not warned; a connector elsewhere still
   * names this address and host when it cannot reach it. */
  if (has_loopback && ifname && ifname[0] == '=') {
    bool is_all_loopback = true;
    for (int i = 0; i < h->ncands; i++) is_all_loopback &= ipaddr_is_loopback(&h->cands[i].addr);
    if (is_all_loopback) {
      INFO(LOG_NET,
           "%s offers only %s for device %s, as NCCL_SOCKET_IFNAME=%s asks: ranks on "
           "this host connect, other hosts cannot",
           h->host, list, dev->name, ifname);
      return;
    }
  }
  netif_list_str(&transport_host()->ifs, have, sizeof(have));
  char fix[240] = "bring up the interface on the network the nodes share, or set "
                  "NCCL_SOCKET_IFNAME to it";
  char works[200];
  if (report_routable_ifname(h->cands[0].ifname, works, sizeof(works)))
    snprintf(fix, sizeof(fix), "set %s on every node", works);
  WARN("%s offers other hosts only %s to connect to device %s: %s. NCCL_SOCKET_IFNAME%s%s selects "
       "nothing routable on %s (it has %s): %s",
       h->host, list, dev->name,
       has_loopback ? "a loopback address, which no other host can reach, so connections from "
                      "other nodes fail (a job on this host alone works)"
                    : "link-local, which only a host on the same link reaches (routers never "
                      "forward it), so nodes on other links cannot connect",
       ifname ? "=" : " (unset)", ifname ? ifname : "", h->host, have, fix);
}

static int listen_family(const struct transport_dev *dev) {
  const struct transport_host *host = transport_host();
  /* NCCL_SOCKET_FAMILY decides, as it decided the interfaces: an interface
   * with both families must not offer the other one. */
  int fam = transport_prefs()->socket_family;
  if (fam == 0 || fam == 1) return fam == 0 ? AF_INET : AF_INET6;
  if (dev->addr.family == AF_INET6) return AF_INET6;
  for (int j = 0; j < host->choice.n; j++) {
    const struct netif *n = &host->ifs.ifs[host->choice.idx[j]];
    for (int k = 0; k < n->naddr; k++)
      if (n->addr[k].family == AF_INET6 && !ipaddr_is_link_local(&n->addr[k]) &&
          !ipaddr_is_loopback(&n->addr[k]))
        return AF_INET6;
  }
  return AF_INET;
}

ncclResult_t transport_listen(const struct transport_dev *dev, void *handle, void **listen_comm) {
  *listen_comm = NULL;
  struct listen_comm *l = calloc(1, sizeof(*l));
  if (!l) {
    WARN("listen on device %s: out of memory", dev->name);
    return ncclSystemError;
  }
  l->obj = OBJ_LISTEN;
  l->dev = dev;
  l->ctrl_fd = -1;
  listen_reset_conn(l);
  l->handshake_ns = transport_prefs()->handshake_timeout_ms * 1000000LL;
  transport_socket_shape(&l->nsocks, &l->nthreads);
  l->nonce = random_u64(l);

  int family = listen_family(dev);
  int err = sock_listen(family, &l->fd, &l->port);
  if (err == EAFNOSUPPORT && family == AF_INET6 && dev->addr.family == AF_INET) {
    family = AF_INET; /* IPv6 disabled in this kernel: IPv4 only */
    err = sock_listen(family, &l->fd, &l->port);
  }
  if (err) {
    char advice[700];
    sock_fd_advice(err, 1 + l->nsocks, advice, sizeof(advice));
    WARN("cannot listen for device %s on interface %s: socket/bind/listen failed: %s%s%s",
         dev->name, dev->ifname, strerror(err), advice[0] ? "; " : "", advice);
    free(l);
    return ncclSystemError;
  }

  struct handle h = {0};
  h.version = HANDLE_VERSION;
  h.flags = dev->is_ib ? HANDLE_F_RDMA : 0;
  h.nsocks = (uint8_t)l->nsocks;
  h.nthreads = (uint8_t)l->nthreads;
  h.dev = (uint32_t)dev->index;
  h.nonce = l->nonce;
  handle_local_host(h.host);
  add_candidates(&h, dev, family, l->port);
  if (h.ncands == 0) { /* the device's own address, whatever it is */
    h.cands[0].addr = dev->addr;
    h.cands[0].port = l->port;
    snprintf(h.cands[0].ifname, HANDLE_IFNAME_LEN, "%s", dev->ifname);
    h.ncands = 1;
  }
  int encoded = handle_encode(&h, handle);
  if (encoded < h.ncands)
    INFO(LOG_NET, "listen on device %s: %d of %d candidate addresses fit in the handle", dev->name,
         encoded, h.ncands);
  h.ncands = encoded;
  warn_unroutable(dev, &h);
  ev_count(C_LISTENS, 1);
  INFO(LOG_NET, "listening for device %s on port %u (%d addresses, nonce 0x%016llx)", dev->name,
       l->port, encoded, (unsigned long long)l->nonce);
  *listen_comm = l;
  return ncclSuccess;
}

ncclResult_t transport_close_listen(void *listen_comm) {
  struct listen_comm *l = listen_comm;
  for (int i = 0; i < l->nincoming; i++) close(l->incoming[i].fd);
  listen_reset_conn(l);
  close(l->fd);
  l->obj = OBJ_DEAD;
  free(l);
  return ncclSuccess;
}
