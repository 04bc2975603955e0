/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/probe/rdv_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/clock.h"
#include "tools/probe/transfer.h"

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* A connect bounded by timeout_ms (an unreachable host would hold a
 * blocking one for minutes): 0 or an errno. */
static int connect_bounded(int fd, const struct sockaddr *sa, socklen_t len, int timeout_ms) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  if (connect(fd, sa, len) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  struct pollfd p = {fd, POLLOUT, 0};
  int n = poll(&p, 1, timeout_ms);
  if (n == 0) return ETIMEDOUT;
  if (n < 0) return errno;
  int err = 0;
  socklen_t el = sizeof(err);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
  return err;
}

/* One attempt on every address of host: 0 with the fd, or the errno of the
 * last failure. */
static int try_connect(const struct addrinfo *list, int timeout_ms, int *out, char *peer,
                       size_t cap) {
  int err = EHOSTUNREACH;
  for (const struct addrinfo *a = list; a; a = a->ai_next) {
    int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      continue;
    }
    err = connect_bounded(fd, a->ai_addr, a->ai_addrlen, timeout_ms);
    if (!err) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      sockaddr_str(a->ai_addr, peer, cap);
      *out = fd;
      return 0;
    }
    close(fd);
  }
  return err;
}

int rdv_client_connect(struct rdv_client *c, const char *host, int port, const char *from,
                       int64_t deadline_ns, char *why, size_t cap) {
  rdv_conn_init(&c->conn, -1);
  snprintf(c->where, sizeof(c->where), "%s:%d (%s)", host, port, from);
  char service[16];
  snprintf(service, sizeof(service), "%d", port);
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *list = NULL;
  int err = 0, gai = 0, delay = 50;
  do {
    /* Resolved on every try: the name may appear once the node is up. */
    gai = getaddrinfo(host, service, &hints, &list);
    if (!gai) {
      int64_t left = (deadline_ns - clock_mono_ns()) / 1000000;
      err = try_connect(list,
                        left < 100    ? 100
                        : left > 5000 ? 5000
                                      : (int)left,
                        &c->conn.fd, c->conn.peer, sizeof(c->conn.peer));
      freeaddrinfo(list);
      if (!err) return 0;
    }
    nap_ms(delay);
    delay = delay < 1000 ? delay * 2 : 1000;
  } while (clock_mono_ns() < deadline_ns);
  if (gai)
    snprintf(why, cap,
             "the rendezvous host %s cannot be resolved: %s; set MASTER_ADDR (or "
             "--rendezvous) to rank 0's host name or address",
             c->where, gai_strerror(gai));
  else
    snprintf(why, cap,
             "rank 0's rendezvous at %s did not answer in time (last error: %s): check that "
             "rank 0 runs, that every rank has the same MASTER_ADDR and MASTER_PORT, and that "
             "no firewall blocks the port",
             c->where, strerror(err));
  return err ? err : EHOSTUNREACH;
}

int rdv_client_send(struct rdv_client *c, struct wire_buf *b, int64_t deadline_ns, char *why,
                    size_t cap) {
  if (rdv_conn_queue(&c->conn, b)) {
    snprintf(why, cap, "a %s message could not be built", wire_type_name(b->len ? b->p[7] : 0));
    return EMSGSIZE;
  }
  for (;;) {
    enum rdv_io r = rdv_conn_flush(&c->conn, why, cap);
    if (r == RDV_MSG) return 0;
    if (r == RDV_CLOSED) {
      snprintf(why, cap, "rank 0 at %s closed the connection", c->where);
      return EPIPE;
    }
    if (r == RDV_ERROR) return EIO;
    int64_t left = (deadline_ns - clock_mono_ns()) / 1000000;
    if (left <= 0) {
      snprintf(why, cap, "rank 0 at %s does not take our messages", c->where);
      return ETIMEDOUT;
    }
    struct pollfd p = {c->conn.fd, POLLOUT, 0};
    poll(&p, 1, left > 1000 ? 1000 : (int)left);
  }
}

enum rdv_io rdv_client_next(struct rdv_client *c, int timeout_ms, char *why, size_t cap) {
  int64_t end = clock_mono_ns() + (int64_t)timeout_ms * 1000000;
  for (;;) {
    enum rdv_io r = rdv_conn_read(&c->conn, why, cap);
    if (r != RDV_AGAIN) return r;
    int64_t left = (end - clock_mono_ns()) / 1000000;
    if (left <= 0) return RDV_AGAIN;
    struct pollfd p = {c->conn.fd, POLLIN, 0};
    poll(&p, 1, left > 1000 ? 1000 : (int)left);
  }
}

void rdv_client_close(struct rdv_client *c) { rdv_conn_close(&c->conn); }
