/* SPDX-License-Identifier: Apache-2.0 */
/* sv_rc_pingpong: an RC ping-pong over verbs, in the spirit of
 * ibv_rc_pingpong. Between two hosts: run it without a host on one side
 * (the server) and with the server's host name or address on the other;
 * the QP addresses are exchanged over a TCP connection to that address, the
 * traffic goes over the device's port. In one process: -P names a second
 * device, and the two ping-pong from two threads.
 *
 *   sv_rc_pingpong [-d dev] [-g gid] [-s size] [-n iters] [-p port] [-t] [host]
 *   sv_rc_pingpong -d dev -P dev2 [-g gid] [-s size] [-n iters] [-t]
 *
 * -t prints one TAP case instead of a summary. Exit status 0 on success. */
#include "svt.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct opts {
  const char *dev, *dev2, *host;
  int gid, iters, port;
  size_t size;
  bool tap;
};

static int oob_connect(const char *host, int port) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
  char svc[16];
  snprintf(svc, sizeof svc, "%d", port);
  if (getaddrinfo(host, svc, &hints, &res)) return -1;
  int fd = -1;
  for (int tries = 0; tries < 100 && fd < 0; tries++) { /* the server may still be starting */
    fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen)) {
      close(fd);
      fd = -1;
      usleep(100000);
    }
  }
  freeaddrinfo(res);
  return fd;
}

static int oob_accept(int port) {
  int one = 1, lfd = socket(AF_INET6, SOCK_STREAM, 0), off = 0;
  struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) || listen(lfd, 1)) return -1;
  int fd = accept(lfd, NULL, NULL);
  close(lfd);
  return fd;
}

/* Both sides send their address first, then read the peer's. */
static int exchange(int fd, const struct svt_info *mine, struct svt_info *theirs) {
  return svt_write_all(fd, mine, sizeof *mine) || svt_read_all(fd, theirs, sizeof *theirs) ? -1 : 0;
}

static int two_hosts(const struct opts *o) {
  struct svt_ep e;
  struct svt_info mine, theirs;
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  struct svt_qp_opts qo = svt_defaults();
  if (svt_open(&e, o->dev, o->gid, 3 * o->size, access)) return -1;
  svt_info(&e, &mine);
  int fd = o->host ? oob_connect(o->host, o->port) : oob_accept(o->port);
  int err = fd < 0 || exchange(fd, &mine, &theirs);
  if (err) fprintf(stderr, "sv_rc_pingpong: out-of-band exchange failed\n");
  if (!err && (err = svt_connect(&e, &theirs, &qo)) != 0)
    fprintf(stderr, "sv_rc_pingpong: connecting the QP failed: %s\n", strerror(err));
  /* A byte each way: both QPs are in RTS before the first ping. */
  char b = 0;
  if (!err) err = svt_write_all(fd, &b, 1) || svt_read_all(fd, &b, 1);
  if (!err) err = svt_pingpong(&e, &theirs, !o->host, o->iters, o->size);
  if (fd >= 0) {
    if (!err) err = svt_write_all(fd, &b, 1) || svt_read_all(fd, &b, 1); /* both done */
    close(fd);
  }
  svt_close(&e);
  return err ? -1 : 0;
}

struct side {
  struct svt_ep e;
  struct svt_info peer;
  const struct opts *o;
  bool server;
  int err;
};

static void *run_side(void *arg) {
  struct side *s = arg;
  s->err = svt_pingpong(&s->e, &s->peer, s->server, s->o->iters, s->o->size);
  return NULL;
}

static int one_process(const struct opts *o) {
  struct side a = {.o = o, .server = true}, b = {.o = o};
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  struct svt_qp_opts qo = svt_defaults();
  int err = svt_open(&a.e, o->dev, o->gid, 3 * o->size, access) ||
            svt_open(&b.e, o->dev2, o->gid, 3 * o->size, access);
  if (!err) {
    svt_info(&a.e, &b.peer);
    svt_info(&b.e, &a.peer);
    err = svt_connect(&a.e, &a.peer, &qo) || svt_connect(&b.e, &b.peer, &qo);
  }
  pthread_t t;
  if (!err && !pthread_create(&t, NULL, run_side, &a)) {
    run_side(&b);
    pthread_join(t, NULL);
    err = a.err || b.err;
  }
  svt_close(&a.e);
  svt_close(&b.e);
  return err ? -1 : 0;
}

static void usage(void) {
  fprintf(
    stderr,
    "usage: sv_rc_pingpong [-d dev] [-P dev2] [-g gid] [-s size] [-n iters] [-p port] [-t] [host]\n");
  exit(2);
}

int main(int argc, char **argv) {
  struct opts o = {.dev = "mlx5_0", .gid = 3, .iters = 1000, .port = 18515, .size = 4096};
  for (int c; (c = getopt(argc, argv, "d:P:g:s:n:p:t")) != -1;) {
    switch (c) {
    case 'd': o.dev = optarg; break;
    case 'P': o.dev2 = optarg; break;
    case 'g': o.gid = atoi(optarg); break;
    case 's': o.size = (size_t)strtoul(optarg, NULL, 0); break;
    case 'n': o.iters = atoi(optarg); break;
    case 'p': o.port = atoi(optarg); break;
    case 't': o.tap = true; break;
    default: usage();
    }
  }
  if (optind < argc) o.host = argv[optind];
  if (!o.size || o.iters < 1) usage();
  double t0 = svt_now();
  int err = o.dev2 ? one_process(&o) : two_hosts(&o);
  double dt = svt_now() - t0;
  char what[256];
  snprintf(what, sizeof what, "rc pingpong %s%s%s: %d x %zu B", o.dev, o.dev2 ? " <-> " : "",
           o.dev2 ? o.dev2 : "", o.iters, o.size);
  if (o.tap) printf("%sok 1 - %s\n1..1\n", err ? "not " : "", what);
  else if (!err)
    printf("%s: %.2f s, %.1f usec/iter, %.1f Mbit/s\n", what, dt, dt * 1e6 / o.iters,
           2.0 * (double)o.size * o.iters * 8 / dt / 1e6);
  return err ? 1 : 0;
}
