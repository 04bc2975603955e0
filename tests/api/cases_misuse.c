/* SPDX-License-Identifier: Apache-2.0 */
/* What the ABI must survive: handles that are stale, another connection's,
 * or not handles at all, and requests tested after they completed. Each is
 * refused with a named error and no crash; under the sanitizer build no
 * report either (nothing behind a bad handle is read). And the 0-byte edge
 * cases, which both transports must treat alike. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"

/* Drives one message from sc to rc (both in this process) to completion:
 * 0, or the first failing call's result. */
static int move(struct side *s, void *sc, void *rc, void *out, void *mo, void *in, void *mi,
                size_t size, void **send_req, void **recv_req) {
  size_t cap = size;
  int tag = 3, ds = 0, dr = 0, r;
  *send_req = *recv_req = NULL;
  if ((r = netload_irecv(&s->nl, rc, 1, &in, &cap, &tag, &mi, recv_req)) || !*recv_req)
    return r ? r : -1;
  for (long long end = ms_now() + 10000; !*send_req && ms_now() < end;)
    if ((r = netload_isend(&s->nl, sc, out, size, 3, mo, send_req))) return r;
  for (long long end = ms_now() + 20000; *send_req && (!ds || !dr) && ms_now() < end;) {
    if (!ds && (r = netload_test(&s->nl, *send_req, &ds, NULL))) return r;
    if (!dr && (r = netload_test(&s->nl, *recv_req, &dr, NULL))) return r;
  }
  return ds && dr ? 0 : -2;
}

static void misuse_registrations(struct side *s, void *sc1, void *sc2, void *rc1) {
  char buf[256];
  void *m1 = NULL, *m2 = NULL, *req = NULL;
  CHECK(netload_reg_mr(&s->nl, sc1, buf, sizeof(buf), NCCL_PTR_HOST, &m1) == 0 && m1, "regMr");
  CHECK(netload_dereg_mr(&s->nl, sc1, m1) == 0, "deregMr");
  log_clear();
  CHECK(netload_dereg_mr(&s->nl, sc1, m1) == ncclInternalError, "a second deregMr succeeded");
  CHECK(log_find(NCCL_LOG_WARN, "deregistered already"), "double deregMr not named");
  CHECK(netload_isend(&s->nl, sc1, buf, 8, 0, m1, &req) == ncclInternalError && !req,
        "isend with a deregistered handle was taken");
  CHECK(netload_reg_mr(&s->nl, sc2, buf, sizeof(buf), NCCL_PTR_HOST, &m2) == 0, "regMr");
  log_clear();
  CHECK(netload_dereg_mr(&s->nl, sc1, m2) == ncclInternalError, "deregMr of another comm's taken");
  CHECK(log_find(NCCL_LOG_WARN, "is a registration of the send connection with"),
        "a foreign handle not named as another connection's");
  CHECK(netload_dereg_mr(&s->nl, rc1, m2) == ncclInternalError, "deregMr on a receive comm taken");
  CHECK(netload_dereg_mr(&s->nl, sc2, m2) == 0, "the owner's deregMr failed after a refusal");
  /* Wild values: small integers, a freed heap block, garbage. None is read. */
  void *block = malloc(64);
  volatile uintptr_t freed = (uintptr_t)block; /* its address, kept past the free */
  free(block);
  void *wild[] = {(void *)0x1234, (void *)freed, (void *)buf, (void *)~0ull};
  for (size_t i = 0; i < sizeof(wild) / sizeof(wild[0]); i++) {
    log_clear();
    CHECK(netload_dereg_mr(&s->nl, sc1, wild[i]) == ncclInternalError, "deregMr of %p taken",
          wild[i]);
    CHECK(log_find(NCCL_LOG_WARN, "not a registration of this plugin"), "wild %p not named",
          wild[i]);
  }
}

static void misuse_requests(struct side *s, void *sc, void *rc) {
  uint8_t out[64], in[64];
  void *mo = NULL, *mi = NULL, *sr, *rr, *old_sr;
  fill_pattern(out, sizeof(out), 9);
  netload_reg_mr(&s->nl, sc, out, sizeof(out), NCCL_PTR_HOST, &mo);
  netload_reg_mr(&s->nl, rc, in, sizeof(in), NCCL_PTR_HOST, &mi);
  CHECK(move(s, sc, rc, out, mo, in, mi, sizeof(out), &sr, &rr) == 0, "first message");
  old_sr = sr;
  /* The next message takes the freed request slot again. */
  memset(in, 0, sizeof(in));
  CHECK(move(s, sc, rc, out, mo, in, mi, 0, &sr, &rr) == 0, "second message");
  int done = 0;
  log_clear();
  CHECK(netload_test(&s->nl, old_sr, &done, NULL) == ncclInternalError && !done,
        "a stale request was tested as live");
  CHECK(log_find(NCCL_LOG_WARN, "not a live request"), "stale request not named");
  CHECK(netload_test(&s->nl, (void *)0xdeadbeef, &done, NULL) == ncclInternalError,
        "a wild request was tested");
  CHECK(netload_test(&s->nl, mo, &done, NULL) == ncclInternalError, "a registration tested");
  netload_dereg_mr(&s->nl, sc, mo);
  netload_dereg_mr(&s->nl, rc, mi);
}

/* Two loopback pairs in one process: handles of one used with the other,
 * stale, and wild; then comms closed twice and used after close. */
void case_misuse(struct side *s) {
  void *sc1 = NULL, *rc1 = NULL, *sc2 = NULL, *rc2 = NULL;
  if (side_open(s)) return;
  CHECK(netload_connect_pair(&s->nl, 0, &sc1, &rc1, 20000) == 0 && sc1 && rc1, "first pair");
  CHECK(netload_connect_pair(&s->nl, 0, &sc2, &rc2, 20000) == 0 && sc2 && rc2, "second pair");
  if (!sc1 || !rc1 || !sc2 || !rc2) return;
  misuse_registrations(s, sc1, sc2, rc1);
  misuse_requests(s, sc1, rc1);
  log_clear();
  CHECK(netload_close_recv(&s->nl, sc1) == ncclInternalError, "closeRecv of a send comm");
  CHECK(log_find(NCCL_LOG_WARN, "is a send comm of this plugin, not a receive comm"),
        "wrong kind of comm not named");
  CHECK(netload_close_send(&s->nl, sc1) == 0, "closeSend");
  log_clear();
  CHECK(netload_close_send(&s->nl, sc1) == ncclInternalError, "a second closeSend succeeded");
  CHECK(log_find(NCCL_LOG_WARN, "already closed"), "double close not named");
  char b[8];
  void *mh = NULL, *req = NULL;
  CHECK(netload_reg_mr(&s->nl, sc1, b, sizeof(b), NCCL_PTR_HOST, &mh) == ncclInternalError && !mh,
        "regMr on a closed comm");
  CHECK(netload_isend(&s->nl, sc1, b, 0, 0, NULL, &req) == ncclInternalError && !req,
        "isend on a closed comm");
  netload_close_recv(&s->nl, rc1);
  netload_close_send(&s->nl, sc2);
  netload_close_recv(&s->nl, rc2);
  side_close(s);
}

/* 0 bytes: a registration of NULL or of 0 bytes succeeds and covers
 * nothing; a 0-byte message needs no buffer and no registration; a
 * registration of 0 bytes carries no byte more. The same on every
 * transport. */
void case_zero_bytes(struct side *s) {
  void *sc = NULL, *rc = NULL, *m0 = NULL, *mnull = NULL, *sr, *rr;
  char buf[16];
  if (side_open(s)) return;
  CHECK(netload_connect_pair(&s->nl, 0, &sc, &rc, 20000) == 0 && sc && rc, "loopback pair");
  if (!sc || !rc) return;
  CHECK(netload_reg_mr(&s->nl, sc, NULL, 0, NCCL_PTR_HOST, &mnull) == 0 && mnull,
        "regMr of NULL, 0 bytes");
  CHECK(netload_reg_mr(&s->nl, rc, buf, 0, NCCL_PTR_HOST, &m0) == 0 && m0, "regMr of 0 bytes");
  CHECK(move(s, sc, rc, NULL, NULL, NULL, NULL, 0, &sr, &rr) == 0,
        "0 bytes, NULL buffers and no registration");
  CHECK(move(s, sc, rc, NULL, mnull, buf, m0, 0, &sr, &rr) == 0,
        "0 bytes with the 0-byte registrations");
  void *req = NULL;
  log_clear();
  CHECK(netload_isend(&s->nl, sc, buf, 8, 0, mnull, &req) == ncclInternalError && !req,
        "8 bytes through a 0-byte registration");
  CHECK(log_find(NCCL_LOG_WARN, "outside its registration"), "not named");
  log_clear();
  CHECK(netload_isend(&s->nl, sc, buf, 8, 0, NULL, &req) == ncclInternalError && !req,
        "8 bytes without a registration");
  CHECK(log_find(NCCL_LOG_WARN, "no registration"), "not named");
  CHECK(netload_dereg_mr(&s->nl, sc, mnull) == 0 && netload_dereg_mr(&s->nl, rc, m0) == 0,
        "deregMr of 0-byte registrations");
  CHECK(netload_dereg_mr(&s->nl, sc, NULL) == 0, "deregMr of NULL (NCCL's transports take it)");
  netload_close_send(&s->nl, sc);
  netload_close_recv(&s->nl, rc);
  side_close(s);
}

/* A connector with a stale handle (the nonce of a listen that is gone) is
 * told why by the listener and fails at once, naming the listener and the
 * reason; the listener refuses it and still takes its real peer. */
void case_stale_handle(struct side *s) {
  if (side_open(s)) return;
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  if (s->role == ROLE_RECV) {
    void *lc = NULL, *rc = NULL;
    CHECK(netload_listen(&s->nl, s->dev, handle, &lc) == 0 && lc, "listen");
    if (!lc) return;
    unsigned char stale[NCCL_NET_HANDLE_MAXSIZE];
    memcpy(stale, handle, sizeof(stale));
    stale[16] ^= 0x5a; /* the nonce: another listen's */
    ctl_send(s, stale, sizeof(stale));
    ctl_send(s, handle, sizeof(handle));
    long long end = ms_now() + 30000;
    while (!rc && ms_now() < end) {
      if (netload_accept(&s->nl, lc, &rc)) break;
      usleep(1000);
    }
    CHECK(rc, "the listener took no connection after refusing the stale one");
    CHECK(log_find(NCCL_LOG_WARN, "refused connection from"), "the refusal is not logged here");
    if (rc) netload_close_recv(&s->nl, rc);
    netload_close_listen(&s->nl, lc);
  } else {
    unsigned char good[NCCL_NET_HANDLE_MAXSIZE];
    ctl_recv(s, handle, sizeof(handle));
    ctl_recv(s, good, sizeof(good));
    void *sc = NULL;
    int r = 0;
    long long t0 = ms_now();
    while (!r && !sc && ms_now() - t0 < 30000) r = netload_connect(&s->nl, s->dev, handle, &sc);
    long long took = ms_now() - t0;
    CHECK(r == ncclInvalidUsage && !sc, "connect with a stale handle: %d, comm %p", r, sc);
    CHECK(took < 10000, "the refusal took %lld ms to surface", took);
    const char *w = log_find(NCCL_LOG_WARN, "refused this connection");
    CHECK(w && strstr(w, "no listen on port") && strstr(w, "stale"),
          "the WARN must carry the listener's reason: %s", w ? w : "none");
    sc = NULL;
    r = 0;
    for (long long end = ms_now() + 20000; !r && !sc && ms_now() < end;)
      r = netload_connect(&s->nl, s->dev, good, &sc);
    CHECK(r == 0 && sc, "connect with the real handle after a refusal: %d", r);
    if (sc) netload_close_send(&s->nl, sc);
  }
  ctl_sync(s);
  side_close(s);
}
