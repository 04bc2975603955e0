/* SPDX-License-Identifier: Apache-2.0 */
/* The connection phase as NCCL's net transport runs it (src/transport/net.cc):
 * the receiver listens and its proxy calls accept until it returns a comm,
 * the sender calls connect until it returns one (either may come first;
 * NULL means "call again"); the listen comm is closed once accepted;
 * buffers are registered, messages posted, request tests polled; at the
 * end deregMr, then closeSend and closeRecv. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "replay.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int pair(struct replay *rp, int dev, void **sc, void **rc) {
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
  void *lc = NULL;
  const char *name = rp->props[dev].name;
  if (netload_listen(&rp->nl, dev, handle, &lc) || !lc) {
    replay_fail(rp, "listen on %s failed", name);
    return -1;
  }
  double end = now_s() + 10;
  while ((!*sc || !*rc) && now_s() < end) {
    if (!*rc && netload_accept(&rp->nl, lc, rc)) break; /* accept first: NCCL may */
    if (!*sc && netload_connect(&rp->nl, dev, handle, sc)) break;
  }
  if (netload_close_listen(&rp->nl, lc)) replay_fail(rp, "closeListen on %s failed", name);
  if (!*sc || !*rc) {
    replay_fail_as(rp, "CONNECT", "connect/accept on %s did not complete within 10 s", name);
    return -1;
  }
  return 0;
}

static int wait_done(struct replay *rp, void *req, double end) {
  int done = 0, size = 0;
  while (!done && now_s() < end)
    if (netload_test(&rp->nl, req, &done, &size)) return -1;
  return done ? 0 : -1;
}

/* Three messages, each checked byte for byte. */
static void messages(struct replay *rp, int dev, void *sc, void *rc) {
  size_t size = 256 << 10;
  char *a = malloc(size), *b = malloc(size);
  void *ma = NULL, *mb = NULL;
  const char *name = rp->props[dev].name;
  if (netload_reg_mr(&rp->nl, sc, a, size, NCCL_PTR_HOST, &ma) ||
      netload_reg_mr(&rp->nl, rc, b, size, NCCL_PTR_HOST, &mb)) {
    replay_fail(rp, "regMr on %s failed", name);
    goto out;
  }
  for (int m = 0; m < 3 && !rp->fail[0]; m++) {
    for (size_t i = 0; i < size; i++) a[i] = (char)(i * 13 + (size_t)m + 1);
    memset(b, 0, size);
    void *rq = NULL, *sq = NULL, *bp = b;
    size_t sizes[1] = {size};
    int tags[1] = {m};
    double end = now_s() + 10;
    while (!rq && now_s() < end)
      if (netload_irecv(&rp->nl, rc, 1, &bp, sizes, tags, &mb, &rq)) break;
    while (rq && !sq && now_s() < end)
      if (netload_isend(&rp->nl, sc, a, size, m, ma, &sq)) break;
    if (!rq || !sq || wait_done(rp, sq, end) || wait_done(rp, rq, end))
      replay_fail_as(rp, "DATA", "message %d on %s did not complete", m, name);
    else if (memcmp(a, b, size))
      replay_fail_as(rp, "DATA", "message %d on %s arrived changed", m, name);
  }
out:
  if (ma) netload_dereg_mr(&rp->nl, sc, ma);
  if (mb) netload_dereg_mr(&rp->nl, rc, mb);
  free(a);
  free(b);
}

void replay_traffic(struct replay *rp) {
  for (int i = 0; i < rp->nvisible && i < REPLAY_TRAFFIC_DEVS && !rp->fail[0]; i++) {
    int dev = rp->visible[i];
    void *sc = NULL, *rc = NULL;
    if (!pair(rp, dev, &sc, &rc)) messages(rp, dev, sc, rc);
    if (sc && netload_close_send(&rp->nl, sc)) replay_fail(rp, "closeSend failed");
    if (rc && netload_close_recv(&rp->nl, rc)) replay_fail(rp, "closeRecv failed");
  }
}
