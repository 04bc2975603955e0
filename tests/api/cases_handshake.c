/* SPDX-License-Identifier: Apache-2.0 */
/* The handshake and the wire: the listen handle, hello records that
 * disagree, strangers on the listening port, broken handles, peers that die. */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cases.h"
#include "transport/frame.h"
#include "transport/handle.h"
#include "transport/hello.h"

void case_handle_format(struct side *s) {
  if (side_open(s)) return;
  unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL;
  CHECK(netload_listen(&s->nl, 0, h, &lc) == 0 && lc, "listen failed");
  struct handle d;
  char why[200];
  CHECK(handle_decode(h, &d, why, sizeof(why)) == HANDLE_OK, "the handle does not decode: %s", why);
  CHECK(d.nonce != 0, "nonce is zero");
  CHECK(d.ncands >= 1 && d.cands[0].port != 0, "%d candidates, first port %u", d.ncands,
        d.cands[0].port);
  for (int i = HANDLE_STATE_OFF; i < HANDLE_STATE_OFF + 8; i++)
    CHECK(h[i] == 0, "connector-private byte %d is not zero on the wire", i);
  netload_close_listen(&s->nl, lc);
  side_close(s);
}

/* Field story 2: nodes with different NCCL versions (and an NCCL setting
 * that changes message sizes). One WARN per side, naming both hosts and each
 * differing field; the connection still works; a second connection to the
 * same peer does not repeat the WARN. */
void case_hello_mismatch(struct side *s) {
  /* Each side its own host name (a UTS namespace), so the WARN can name
   * both; without root both keep this machine's name. */
  if (is_root()) private_uts(s->role == ROLE_RECV ? "host-a" : "host-b");
  setenv("TEST_NCCL_VERSION", s->role == ROLE_RECV ? "21903" : "21403", 1);
  if (s->role == ROLE_SEND) setenv("NCCL_PROTO", "Simple", 1);
  void *comm = NULL, *comm2 = NULL;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 100000, 100000, 9) == 0, "transfer across the mismatch failed");
  if (pair_open(s, &comm2) == 0) CHECK(xfer_one(s, comm2, 10, 10, 10) == 0, "second connection");
  const char *w = log_find(NCCL_LOG_WARN, "configured differently");
  CHECK(w, "no WARN about the differing hosts");
  if (w) {
    CHECK(strstr(w, "NCCL version: 2.19.3") || strstr(w, "NCCL version: 2.14.3"),
          "no NCCL versions: %s", w);
    CHECK(strstr(w, "2.19.3") && strstr(w, "2.14.3"), "both versions must be named: %s", w);
    CHECK(strstr(w, "NCCL_PROTO: ") && strstr(w, "Simple"), "NCCL_PROTO difference not named: %s",
          w);
  }
  CHECK(log_count(NCCL_LOG_WARN, "configured differently") == 1,
        "%d WARNs, expected one per process", log_count(NCCL_LOG_WARN, "configured differently"));
  ctl_sync(s);
  if (s->role == ROLE_SEND) {
    netload_close_send(&s->nl, comm);
    if (comm2) netload_close_send(&s->nl, comm2);
  } else {
    netload_close_recv(&s->nl, comm);
    if (comm2) netload_close_recv(&s->nl, comm2);
  }
  side_close(s);
}

static int raw_connect(const struct handle *h) {
  struct sockaddr_storage ss;
  socklen_t sl = ipaddr_to_sockaddr(&h->cands[0].addr, h->cands[0].port, &ss);
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sl)) {
    printf("#   raw connect: %s\n", strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

static void raw_send(int fd, const void *p, size_t n) {
  if (send(fd, p, n, MSG_NOSIGNAL) != (ssize_t)n) printf("#   raw send short\n");
}

/* Strangers on the port: garbage, wrong magic, wrong nonce, an oversized
 * and a truncated hello, a silent peer. Each gets a WARN naming the remote
 * address; accept never fails or blocks; the real peer then connects. */
static void attack(struct side *s, const struct handle *h) {
  uint8_t buf[64];
  struct preamble p = {ROLE_CTRL, 0, h->nonce, 77};
  for (int i = 0; i < 64; i++) buf[i] = (uint8_t)(rand() & 0xff);
  int fd;
  if ((fd = raw_connect(h)) >= 0) raw_send(fd, buf, sizeof(buf)), close(fd); /* garbage */
  preamble_encode(&p, buf);
  buf[0] ^= 0xff;
  if ((fd = raw_connect(h)) >= 0) raw_send(fd, buf, PREAMBLE_LEN), close(fd); /* magic */
  p.nonce = h->nonce ^ 1;
  preamble_encode(&p, buf);
  if ((fd = raw_connect(h)) >= 0) raw_send(fd, buf, PREAMBLE_LEN), close(fd); /* nonce */
  p.nonce = h->nonce;
  preamble_encode(&p, buf);
  uint8_t hdr[HELLO_HDR_LEN] = {0x68, 0x65, 0x6c, 0x6f, 1, 0, 1, 0, 0, 0, 0x10, 0}; /* 1 MiB */
  if ((fd = raw_connect(h)) >= 0) {
    raw_send(fd, buf, PREAMBLE_LEN), raw_send(fd, hdr, sizeof(hdr));
    usleep(200000);
    close(fd);
  }
  hdr[10] = 0, hdr[8] = 200; /* 200-byte body, of which 20 arrive */
  if ((fd = raw_connect(h)) >= 0) {
    raw_send(fd, buf, PREAMBLE_LEN), raw_send(fd, hdr, sizeof(hdr)), raw_send(fd, buf, 20);
    usleep(200000);
    close(fd);
  }
  if ((fd = raw_connect(h)) >= 0) { /* silent: past the 500 ms handshake timeout */
    usleep(1200000);
    close(fd);
  }
  (void)s;
}

void case_strangers(struct side *s) {
  setenv("NCCL_DIAG_HANDSHAKE_TIMEOUT_MS", "500", 1);
  if (side_open(s)) return;
  if (s->role == ROLE_SEND) {
    unsigned char hb[NCCL_NET_HANDLE_MAXSIZE];
    struct handle h;
    char why[200];
    if (ctl_recv_int(s) != 0) return;
    ctl_recv(s, hb, sizeof(hb));
    CHECK(handle_decode(hb, &h, why, sizeof(why)) == HANDLE_OK, "handle: %s", why);
    attack(s, &h);
    ctl_send_int(s, 1); /* attacks done: now the real connect */
    void *sc = NULL;
    long long end = ms_now() + 20000;
    while (!sc && ms_now() < end)
      if (netload_connect(&s->nl, s->dev, hb, &sc)) break;
    CHECK(sc, "the real connect failed after the attacks");
    if (sc) {
      CHECK(xfer_one(s, sc, 300000, 300000, 3) == 0, "transfer after the attacks");
      netload_close_send(&s->nl, sc);
    }
  } else {
    unsigned char hb[NCCL_NET_HANDLE_MAXSIZE];
    void *lc = NULL, *rc = NULL;
    CHECK(netload_listen(&s->nl, s->dev, hb, &lc) == 0, "listen");
    ctl_send_int(s, 0);
    ctl_send(s, hb, sizeof(hb));
    long long worst = 0, end = ms_now() + 20000;
    int attacks_done = 0;
    while (!rc && ms_now() < end) {
      long long t0 = ms_now();
      int r = netload_accept(&s->nl, lc, &rc);
      if (ms_now() - t0 > worst) worst = ms_now() - t0;
      CHECK(r == 0, "accept failed (%d) while strangers connected", r);
      if (r) break;
      if (!attacks_done) {
        struct timeval tv = {0, 0};
        fd_set fs;
        FD_ZERO(&fs);
        FD_SET(s->ctl, &fs);
        if (select(s->ctl + 1, &fs, NULL, NULL, &tv) == 1) attacks_done = (int)ctl_recv_int(s);
      }
      usleep(1000);
    }
    CHECK(rc, "no connection from the real peer after the strangers");
    CHECK(worst < 200, "one accept call took %lld ms: a stranger stalled the listener", worst);
    int refused = log_count(-1, "refused connection from");
    CHECK(refused >= 6, "%d refusals logged, expected 6", refused);
    CHECK(log_count(NCCL_LOG_WARN, "refused connection from") >= 5, "refusals must be WARNs");
    CHECK(log_find(-1, "not our magic"), "garbage/magic not named");
    CHECK(log_find(-1, "nonce 0x"), "wrong nonce not named");
    CHECK(log_find(-1, "longer than the"), "oversized hello not named");
    CHECK(log_find(-1, "bytes of its hello"), "truncated hello not named");
    CHECK(log_find(-1, "of the 24 bytes"), "silent peer not named");
    if (rc) {
      CHECK(xfer_one(s, rc, 300000, 300000, 3) == 0, "transfer after the attacks");
      netload_close_recv(&s->nl, rc);
    }
    netload_close_listen(&s->nl, lc);
  }
  ctl_sync(s);
  side_close(s);
}

/* Handles that are not ours (another plugin, a version mismatch, zeros). */
void case_bad_handle(struct side *s) {
  if (side_open(s)) return;
  unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
  void *sc = (void *)0x1;
  memset(h, 0, sizeof(h));
  int r = netload_connect(&s->nl, 0, h, &sc);
  CHECK(r == ncclInvalidUsage && sc == NULL, "zero handle: %d, %p", r, sc);
  CHECK(log_find(NCCL_LOG_WARN, "not a libnccl-net-diag handle"), "zero handle not explained");
  void *lc;
  CHECK(netload_listen(&s->nl, 0, h, &lc) == 0, "listen");
  h[4] = 9; /* a future protocol version */
  r = netload_connect(&s->nl, 0, h, &sc);
  CHECK(r == ncclInvalidUsage, "version 9 handle: %d", r);
  CHECK(log_find(NCCL_LOG_WARN, "same libnccl-net-diag on every node"),
        "version mismatch not explained");
  h[4] = 1;
  h[6] = 200; /* candidate count */
  r = netload_connect(&s->nl, 0, h, &sc);
  CHECK(r == ncclInvalidUsage, "corrupt handle: %d", r);
  CHECK(log_find(NCCL_LOG_WARN, "malformed"), "corrupt handle not explained");
  netload_close_listen(&s->nl, lc);
  side_close(s);
}

/* A peer that dies mid-transfer: the survivor's test fails with
 * ncclRemoteError within seconds and names the peer, instead of hanging. */
static void peer_dies(struct side *s, int victim) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 1000, 1000, 1) == 0, "warm-up transfer");
  size_t size = 64 << 20;
  uint8_t *buf = malloc(size);
  void *mh, *req = NULL;
  netload_reg_mr(&s->nl, comm, buf, size, NCCL_PTR_HOST, &mh);
  ctl_sync(s);
  if (s->role == victim) {
    /* Over softverbs the victim's progress thread could carry all 64 MiB
     * before the exit below, and a delivered message rightly completes:
     * its writes are lost on the way instead. */
    if (s->role == ROLE_SEND) setenv("SOFTVERBS_DROP_ABOVE", "4096", 1);
    if (s->role == ROLE_SEND) netload_isend(&s->nl, comm, buf, size, 0, mh, &req);
    else {
      size_t cap = size;
      int tag = 0;
      netload_irecv(&s->nl, comm, 1, (void **)&buf, &cap, &tag, &mh, &req);
    }
    /* Gone at once, without closing anything, as a crashed rank: the
     * header is out, most of the 64 MiB is not. */
    fflush(stdout);
    syscall(SYS_exit_group, 0); /* sanitizers intercept _exit and linger */
  }
  int r = 0;
  if (s->role == ROLE_SEND) {
    /* RDMA: NULL until the receiver's clear-to-send; a dead receiver must
     * turn that wait into an error, not an endless NULL. */
    long long end0 = ms_now() + 15000;
    do r = netload_isend(&s->nl, comm, buf, size, 0, mh, &req);
    while (!r && !req && ms_now() < end0);
  } else {
    size_t cap = size;
    int tag = 0;
    r = netload_irecv(&s->nl, comm, 1, (void **)&buf, &cap, &tag, &mh, &req);
  }
  long long t0 = ms_now();
  int done = 0;
  while (!r && req && !done && ms_now() - t0 < 15000) r = netload_test(&s->nl, req, &done, NULL);
  CHECK(r == ncclRemoteError,
        "survivor's request ended with %d (done=%d), expected ncclRemoteError", r, done);
  CHECK(ms_now() - t0 < 15000, "the failure took %lld ms to surface", ms_now() - t0);
  const char *w = log_find(NCCL_LOG_WARN, "connection with");
  /* Whichever the survivor sees first: its connection closed, or the
   * peer's liveness port refusing (the process is gone). */
  CHECK(w && (strstr(w, "closed") || strstr(w, "is gone")) &&
          (strstr(w, "died") || strstr(w, "no longer runs")),
        "the WARN must say the peer closed or is gone, and died: %s", w ? w : "none");
  netload_dereg_mr(&s->nl, comm, mh);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  free(buf);
  side_close(s);
}

void case_sender_dies(struct side *s) { peer_dies(s, ROLE_SEND); }
void case_receiver_dies(struct side *s) { peer_dies(s, ROLE_RECV); }

/* A connector that dies half-way through setup: the listener says so after
 * the handshake timeout and keeps waiting; a real connect then succeeds. */
void case_connector_dies(struct side *s) {
  setenv("NCCL_DIAG_HANDSHAKE_TIMEOUT_MS", "700", 1);
  if (side_open(s)) return;
  if (s->role == ROLE_SEND) {
    unsigned char hb[NCCL_NET_HANDLE_MAXSIZE];
    struct handle h;
    char why[200];
    if (ctl_recv_int(s) != 0) return;
    ctl_recv(s, hb, sizeof(hb));
    handle_decode(hb, &h, why, sizeof(why));
    struct hello me;
    hello_fill_local(&me, HELLO_CONNECT);
    me.nonce = h.nonce;
    me.connid = 99;
    me.nsocks = 2;
    uint8_t out[PREAMBLE_LEN + HELLO_HDR_LEN + HELLO_MAX_BODY];
    struct preamble p = {ROLE_CTRL, 0, h.nonce, 99};
    preamble_encode(&p, out);
    size_t n;
    (void)hello_encode(&me, out + PREAMBLE_LEN, sizeof(out) - PREAMBLE_LEN, &n); /* it fits */
    int fd = raw_connect(&h);
    if (fd >= 0) raw_send(fd, out, PREAMBLE_LEN + n);
    usleep(100000);
    if (fd >= 0) close(fd); /* "dies" before its data sockets */
    usleep(1500000);
    void *sc = NULL;
    long long end = ms_now() + 20000;
    while (!sc && ms_now() < end)
      if (netload_connect(&s->nl, s->dev, hb, &sc)) break;
    CHECK(sc, "real connect after the dead one failed");
    if (sc) netload_close_send(&s->nl, sc);
  } else {
    void *rc = NULL;
    pair_recv(s, &rc);
    CHECK(rc, "no connection after a connector died mid-setup");
    CHECK(log_find(NCCL_LOG_WARN, "did not finish its setup"),
          "the dead connector is not reported");
    if (rc) netload_close_recv(&s->nl, rc);
  }
  ctl_sync(s);
  side_close(s);
}
