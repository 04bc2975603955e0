/* SPDX-License-Identifier: Apache-2.0 */
/* A message on an RDMA connection's control connection that arrives cut
 * short (a peer stuck mid-write, a stalled path between the hosts) must
 * not hold the receiver's calls: NCCL's proxy thread, shared by every
 * connection of the process, makes them. The sending process writes part
 * of a fail-over message onto its own control socket, as a peer stopped
 * mid-write would leave it, and stops there; the receiver keeps testing a
 * posted receive. Every call returns at once, and after a second the
 * connection fails with one WARN that says how much of the message came. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "transport/frame.h"

#define CUT_CALL_LIMIT_MS 100 /* the old reads waited 200 ms to 1 s for the rest */

static int sock_port(const struct sockaddr_storage *a) {
  if (a->ss_family == AF_INET) return ntohs(((const struct sockaddr_in *)a)->sin_port);
  if (a->ss_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
  return -1;
}

/* This process's TCP sockets connected to port: how many; *fd the last. */
static int sockets_to(int port, int *fd) {
  int n = 0;
  for (int i = 3; i < 4096; i++) {
    struct sockaddr_storage a;
    socklen_t len = sizeof(a);
    int type = 0;
    socklen_t tl = sizeof(type);
    if (getsockopt(i, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_STREAM) continue;
    if (getpeername(i, (struct sockaddr *)&a, &len) || sock_port(&a) != port) continue;
    *fd = i;
    n++;
  }
  return n;
}

/* The port the receiver's plugin listens on, from its log. */
static int listen_port(void) {
  const char *l = log_find(NCCL_LOG_INFO, "listening for device");
  const char *p = l ? strstr(l, " on port ") : NULL;
  return p ? atoi(p + 9) : -1;
}

static void cut_short(struct side *s, size_t keep) {
  if (use_fixture(s, ROLE_RECV, "roce-dual-port") || use_fixture(s, ROLE_SEND, "roce-dual-port") ||
      side_open(s))
    return;
  void *comm = NULL;
  if (pair_open(s, &comm)) return;
  if (s->role == ROLE_RECV) ctl_send_int(s, listen_port());
  if (s->role == ROLE_SEND) {
    int fd = -1, port = (int)ctl_recv_int(s);
    CHECK(sockets_to(port, &fd) == 1, "the control connection to port %d not found", port);
    /* A fail-over message of 600 bytes, of which only keep arrive. */
    uint8_t msg[MSG_HDR_LEN + 600];
    memset(msg, 0, sizeof(msg));
    struct msg_hdr h = {MSG_F_FAILOVER, 0, 0, 0, 600};
    msg_hdr_encode(&h, msg);
    CHECK(fd >= 0 && write(fd, msg, keep) == (ssize_t)keep, "writing %zu bytes", keep);
    ctl_sync(s); /* the receiver tests its receive now */
    ctl_sync(s);
    netload_close_send(&s->nl, comm);
    side_close(s);
    return;
  }
  uint8_t mem[64];
  void *buf = mem, *mh = NULL, *req = NULL;
  size_t cap = sizeof(mem);
  int tag = 7, done = 0, got = -1, r = 0;
  CHECK(netload_reg_mr(&s->nl, comm, mem, sizeof(mem), NCCL_PTR_HOST, &mh) == 0, "regMr");
  CHECK(netload_irecv(&s->nl, comm, 1, &buf, &cap, &tag, &mh, &req) == 0 && req, "irecv");
  ctl_sync(s);
  /* A long call that gave up the CPU of its own accord waited (a poll
   * loop); one that was only preempted (a loaded host) did not. */
  long long t0 = ms_now(), longest = 0, calls = 0, waited = 0;
  while (!r && !done && ms_now() < t0 + 10000) {
    struct rusage u0, u1;
    getrusage(RUSAGE_THREAD, &u0);
    long long c0 = ms_now();
    r = netload_test(&s->nl, req, &done, &got);
    long long took = ms_now() - c0;
    calls++;
    if (took > longest) longest = took;
    if (took >= CUT_CALL_LIMIT_MS && !getrusage(RUSAGE_THREAD, &u1) && u1.ru_nvcsw != u0.ru_nvcsw &&
        took > waited)
      waited = took;
  }
  long long t = ms_now() - t0;
  tap_diag("%zu bytes of the message: test() failed after %lld ms, %lld calls, the longest %lld ms "
           "(the longest that waited: %lld ms)",
           keep, t, calls, longest, waited);
  CHECK(r != 0 && !done, "the receive did not fail: result %d, done %d", r, done);
  CHECK(!waited, "a test() call waited %lld ms", waited);
  CHECK(t >= 900 && t < 5000, "it failed after %lld ms, expected about 1 s", t);
  char want[80];
  snprintf(want, sizeof(want), "stopped after %zu of %d bytes", keep,
           keep < MSG_HDR_LEN ? MSG_HDR_LEN : MSG_HDR_LEN + 600);
  const char *w = log_find(NCCL_LOG_WARN, want);
  CHECK(w && strstr(w, "control connection"), "the WARN says how much came (%s): %s", want,
        w                             ? w
        : log_find(NCCL_LOG_WARN, "") ? log_find(NCCL_LOG_WARN, "")
                                      : "none");
  ctl_sync(s);
  netload_dereg_mr(&s->nl, comm, mh);
  netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* Part of the message's header. */
void case_ib_ctrl_cut_header(struct side *s) { cut_short(s, 10); }

/* The whole header, part of the body. */
void case_ib_ctrl_cut_body(struct side *s) { cut_short(s, MSG_HDR_LEN + 40); }
