/* SPDX-License-Identifier: Apache-2.0 */
/* A TCP peer's abort notice that arrives in pieces: no call waits for the
 * rest (NCCL's proxy thread serves every connection of the process), and
 * the connection still fails with the peer's words, or says the notice
 * stopped half-way.
 *
 * The case plays the peer's half-sent notice by writing part of one onto
 * the plugin's own control socket in that process: the socket that has
 * carried the most bytes, after a run of inline messages. */
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "transport/frame.h"

static long long us_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

/* The connected TCP socket of this process that moved the most bytes in
 * the direction asked, or -1. */
static int busiest_socket(int is_sent) {
  DIR *d = opendir("/proc/self/fd");
  int best = -1;
  unsigned long long most = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    int fd = atoi(e->d_name);
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    if (fd <= 2 || getpeername(fd, (struct sockaddr *)&sa, &len)) continue;
    if (sa.ss_family != AF_INET && sa.ss_family != AF_INET6) continue;
    struct tcp_info ti;
    socklen_t tl = sizeof(ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl)) continue;
    unsigned long long n = is_sent ? ti.tcpi_bytes_acked : ti.tcpi_bytes_received;
    if (n > most) {
      most = n;
      best = fd;
    }
  }
  if (d) closedir(d);
  return best;
}

/* Inline messages: the control socket outgrows every other socket. */
static int warm_up(struct side *s, void *comm) {
  for (unsigned i = 0; i < 20; i++) {
    int r = xfer_one(s, comm, 3000, 3000, i);
    if (r) return r;
  }
  return 0;
}

static void abort_header(uint32_t seq, size_t len, uint8_t out[MSG_HDR_LEN]) {
  struct msg_hdr h = {MSG_F_ABORT, seq, 0, 0, len};
  msg_hdr_encode(&h, out);
}

/* Both sides done with the case: each closes its end. */
static void close_pair(struct side *s, void *comm) {
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* Drives req with test() until done or failed, for at most limit_ms: the
 * result and the longest single call. */
static int drive(struct side *s, void *req, int limit_ms, long long *longest_us) {
  long long end = ms_now() + limit_ms;
  int done = 0, r = 0;
  *longest_us = 0;
  while (!done && !r && ms_now() < end) {
    long long t0 = us_now();
    r = netload_test(&s->nl, req, &done, NULL);
    long long dt = us_now() - t0;
    if (dt > *longest_us) *longest_us = dt;
  }
  return done ? 0 : r ? r : -2;
}

/* The receiver's notice stops after half its header: the sender's calls
 * return at once; after the control channel's 1 s bound its next send
 * fails, naming a notice begun and not finished. */
void case_notice_cut_at_sender(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(warm_up(s, comm) == 0, "20 inline messages before the notice");
  if (s->role == ROLE_RECV) {
    int fd = busiest_socket(0);
    CHECK(fd >= 0, "found the control socket");
    uint8_t h[MSG_HDR_LEN];
    abort_header(20, 40, h);
    if (fd >= 0) CHECK(write(fd, h, MSG_HDR_LEN / 2) == MSG_HDR_LEN / 2, "half a header written");
    ctl_sync(s);
    ctl_sync(s);
  } else {
    ctl_sync(s);
    static uint8_t buf[64];
    void *mh = NULL, *req = NULL;
    netload_reg_mr(&s->nl, comm, buf, sizeof(buf), NCCL_PTR_HOST, &mh);
    /* Small sends complete at once: they go on until one fails. */
    long long longest = 0, end = ms_now() + 5000;
    int r = 0;
    while (!r && ms_now() < end) {
      long long t0 = us_now(), in_test = 0;
      req = NULL;
      r = netload_isend(&s->nl, comm, buf, sizeof(buf), 7, mh, &req);
      if (us_now() - t0 > longest) longest = us_now() - t0;
      if (!r && req) r = drive(s, req, 5000, &in_test);
      if (in_test > longest) longest = in_test;
    }
    CHECK(r == ncclRemoteError, "the send returned %d, ncclRemoteError expected", r);
    /* waiting for the rest would take the 1 s a stalled message is given;
     * a loaded host under ThreadSanitizer preempts a call for 0.1 s */
    CHECK(longest < 500000, "a call took %lld us: it waited for the rest of the notice", longest);
    const char *w = log_find(NCCL_LOG_WARN, "began a notice");
    CHECK(w && strstr(w, "sent no more of it"), "the sender names the notice cut short: %s",
          w ? w : "no WARN");
    netload_dereg_mr(&s->nl, comm, mh);
    ctl_sync(s);
  }
  close_pair(s, comm);
}

/* The sender's notice: its header whole, its reason half there, then
 * nothing. The receiver's calls return at once, and its receive fails
 * with the part of the reason that came. */
void case_notice_cut_at_receiver(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(warm_up(s, comm) == 0, "20 inline messages before the notice");
  static const char why[] = "the sender's disk is on fire; the rest of this text never comes";
  if (s->role == ROLE_SEND) {
    int fd = busiest_socket(1);
    CHECK(fd >= 0, "found the control socket");
    uint8_t h[MSG_HDR_LEN];
    abort_header(20, sizeof(why) - 1, h);
    if (fd >= 0) {
      CHECK(write(fd, h, MSG_HDR_LEN) == MSG_HDR_LEN, "header written");
      CHECK(write(fd, why, 26) == 26, "part of the reason written");
    }
    ctl_sync(s);
    ctl_sync(s);
  } else {
    ctl_sync(s);
    static uint8_t buf[64];
    void *mh = NULL, *req = NULL, *p = buf;
    size_t cap = sizeof(buf);
    int tag = 7;
    netload_reg_mr(&s->nl, comm, buf, sizeof(buf), NCCL_PTR_HOST, &mh);
    long long t0 = us_now();
    int r = netload_irecv(&s->nl, comm, 1, &p, &cap, &tag, &mh, &req);
    long long longest = us_now() - t0, in_test = 0;
    if (!r && req) r = drive(s, req, 5000, &in_test);
    if (in_test > longest) longest = in_test;
    CHECK(r == ncclRemoteError, "the receive returned %d, ncclRemoteError expected", r);
    CHECK(longest < 500000, "a call took %lld us: it waited for the rest of the reason", longest);
    const char *w = log_find(NCCL_LOG_WARN, "the sending side ended the connection");
    CHECK(w && strstr(w, "disk is on fi"),
          "the receiver names the part of the reason that came: %s", w ? w : "no WARN");
    netload_dereg_mr(&s->nl, comm, mh);
    ctl_sync(s);
  }
  close_pair(s, comm);
}
