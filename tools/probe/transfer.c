/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/probe/transfer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"

#define PING_BYTES 8
#define PING_WARMUP 3
#define STOP_CHECK_NS 1000000 /* look at the rendezvous and the clock once a millisecond */
/* A round trip of one full-size message takes milliseconds even on a slow
 * link; one that has not arrived after this never will (a path MTU black
 * hole drops every frame above the hop's MTU). */
#define SIZE_CHECK_NS (10LL * 1000000000)
#define SIZE_CHECK_BYTES (64u << 10) /* fills full-size frames at any MTU */

static const char *nccl_result_name(ncclResult_t r) {
  switch (r) {
  case ncclSystemError: return "a system error";
  case ncclInternalError: return "an internal error";
  case ncclInvalidArgument: return "an invalid argument";
  case ncclInvalidUsage: return "invalid usage";
  case ncclRemoteError: return "a remote error";
  default: return "an error";
  }
}

static void fail(struct xfer *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct xfer *x, const char *fmt, ...) {
  if (x->error[0]) return; /* the first failure is the cause */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->error, sizeof(x->error), fmt, ap);
  va_end(ap);
}

/* 1 when the task must stop: the deadline passed, or the caller says so. */
static int must_stop(struct xfer *x, int64_t *next_check) {
  int64_t now = clock_mono_ns();
  if (now < *next_check) return 0;
  *next_check = now + STOP_CHECK_NS;
  if (x->watch_bytes && now > x->stall_at) {
    x->stall_bytes = (int)x->watch_bytes;
    fail(x,
         "%zu-byte messages between this host and %s stall (none moved in %lld s) while %d-byte "
         "messages pass",
         x->watch_bytes, x->peer, SIZE_CHECK_NS / 1000000000, PING_BYTES);
    return 1;
  }
  if (now > x->deadline_ns) {
    fail(x, "the test with %s did not finish in the time rank 0 allowed for it", x->peer);
    return 1;
  }
  char why[512];
  if (x->stop && x->stop(x->stop_arg, why, sizeof(why))) {
    fail(x, "%s", why);
    return 1;
  }
  return 0;
}

static uint64_t pattern(uint64_t seed, size_t word) {
  uint64_t v = seed * 0x9e3779b97f4a7c15ULL ^ (word * 0xbf58476d1ce4e5b9ULL);
  return v ^ (v >> 31);
}

int xfer_init(struct xfer *x, struct netload *nl, int dev, size_t chunk, const char *peer) {
  memset(x, 0, sizeof(*x));
  snprintf(x->peer, sizeof(x->peer), "%s", peer);
  x->nl = nl;
  x->dev = dev;
  x->chunk = chunk < 64 ? 64 : (chunk + 7) & ~(size_t)7;
  for (int i = 0; i < XFER_INFLIGHT; i++) {
    x->sbuf[i] = aligned_alloc(4096, (x->chunk + 4095) & ~(size_t)4095);
    x->rbuf[i] = aligned_alloc(4096, (x->chunk + 4095) & ~(size_t)4095);
    x->ref[i] = malloc(x->chunk);
    if (!x->sbuf[i] || !x->rbuf[i] || !x->ref[i]) {
      fail(x, "out of memory for %zu-byte buffers", x->chunk);
      return ENOMEM;
    }
  }
  return 0;
}

int xfer_listen(struct xfer *x, void *handle) {
  ncclResult_t r = netload_listen(x->nl, x->dev, handle, &x->lc);
  if (r != ncclSuccess || !x->lc) {
    fail(x, "listen on device %d failed with %s", x->dev, nccl_result_name(r));
    return EIO;
  }
  return 0;
}

static int register_all(struct xfer *x) {
  for (int i = 0; i < XFER_INFLIGHT; i++) {
    if (netload_reg_mr(x->nl, x->sc, x->sbuf[i], x->chunk, NCCL_PTR_HOST, &x->smh[i]) ||
        netload_reg_mr(x->nl, x->rc, x->rbuf[i], x->chunk, NCCL_PTR_HOST, &x->rmh[i])) {
      fail(x, "registering %zu bytes of host memory failed", x->chunk);
      return EIO;
    }
  }
  return 0;
}

int xfer_connect(struct xfer *x, void *peer_handle) {
  int64_t next = 0;
  while (!x->sc || !x->rc) {
    ncclResult_t r = ncclSuccess;
    if (!x->sc) r = netload_connect(x->nl, x->dev, peer_handle, &x->sc);
    if (r != ncclSuccess) {
      fail(x, "connecting to %s failed with %s", x->peer, nccl_result_name(r));
      return EIO;
    }
    if (!x->rc) r = netload_accept(x->nl, x->lc, &x->rc);
    if (r != ncclSuccess) {
      fail(x, "accepting the connection of %s failed with %s", x->peer, nccl_result_name(r));
      return EIO;
    }
    if ((!x->sc || !x->rc) && must_stop(x, &next)) return ETIMEDOUT;
  }
  return register_all(x);
}

/* Waits for one request; 0, or EIO / ETIMEDOUT with x->error set. */
static int wait_req(struct xfer *x, void *req, int *size, const char *what, int64_t *next) {
  int done = 0;
  while (!done) {
    ncclResult_t r = netload_test(x->nl, req, &done, size);
    if (r != ncclSuccess) {
      fail(x, "%s %s failed with %s", what, x->peer, nccl_result_name(r));
      return EIO;
    }
    if (!done && must_stop(x, next)) return ETIMEDOUT;
  }
  if (x->watch_bytes) x->stall_at = clock_mono_ns() + SIZE_CHECK_NS;
  return 0;
}

static void watch(struct xfer *x, size_t bytes) {
  x->watch_bytes = bytes;
  x->stall_at = clock_mono_ns() + SIZE_CHECK_NS;
}

/* Posts until a request comes back (the plugin may ask to retry). */
static int post(struct xfer *x, int send, int slot, size_t size, void **req, int64_t *next) {
  *req = NULL;
  while (!*req) {
    ncclResult_t r;
    if (send) {
      r = netload_isend(x->nl, x->sc, x->sbuf[slot], size, 0, x->smh[slot], req);
    } else {
      int tag = 0;
      size_t cap = size;
      r = netload_irecv(x->nl, x->rc, 1, (void **)&x->rbuf[slot], &cap, &tag, &x->rmh[slot], req);
    }
    if (r != ncclSuccess) {
      fail(x, "posting a %s %s failed with %s", send ? "send to" : "receive from", x->peer,
           nccl_result_name(r));
      return EIO;
    }
    if (!*req && must_stop(x, next)) return ETIMEDOUT;
  }
  return 0;
}

static void fill_slots(struct xfer *x, uint8_t **bufs, uint64_t seed) {
  for (int s = 0; s < XFER_INFLIGHT; s++) {
    uint64_t *w = (uint64_t *)bufs[s];
    for (size_t i = 0; i < x->chunk / 8; i++) w[i] = pattern(seed + (uint64_t)s, i);
  }
}

static uint64_t messages(const struct xfer *x, uint64_t bytes) {
  uint64_t n = bytes / x->chunk;
  return n ? n : 1;
}

/* Message i is slot i % XFER_INFLIGHT's pattern with its index in word 0,
 * so a lost, repeated or reordered message is caught as well as a bad byte. */
int xfer_send_stream(struct xfer *x, uint64_t bytes, uint64_t seed) {
  fill_slots(x, x->sbuf, seed);
  uint64_t n = messages(x, bytes), posted = 0, completed = 0;
  void *req[XFER_INFLIGHT] = {0};
  int64_t next = 0;
  while (completed < n) {
    if (posted < n && posted - completed < XFER_INFLIGHT) {
      int slot = (int)(posted % XFER_INFLIGHT);
      ((uint64_t *)x->sbuf[slot])[0] = posted;
      if (post(x, 1, slot, x->chunk, &req[slot], &next)) return EIO;
      posted++;
      continue;
    }
    int size = 0;
    if (wait_req(x, req[completed % XFER_INFLIGHT], &size, "a send to", &next)) return EIO;
    completed++;
  }
  return 0;
}

static int verify(struct xfer *x, int slot, uint64_t index, int size) {
  const uint64_t *w = (const uint64_t *)x->rbuf[slot];
  if ((size_t)size != x->chunk) {
    fail(x, "message %llu arrived with %d bytes, %zu were sent", (unsigned long long)index, size,
         x->chunk);
    return EIO;
  }
  if (w[0] != index || memcmp(x->rbuf[slot] + 8, x->ref[slot] + 8, x->chunk - 8)) {
    size_t off = 8;
    while (off < x->chunk && x->rbuf[slot][off] == x->ref[slot][off]) off++;
    fail(x, "data corrupted: message %llu %s", (unsigned long long)index,
         w[0] != index ? "arrived out of order or was lost" : "differs from what was sent");
    if (w[0] == index) {
      size_t o = strlen(x->error);
      snprintf(x->error + o, sizeof(x->error) - o, " at byte %zu", off);
    }
    return EIO;
  }
  return 0;
}

int xfer_recv_stream(struct xfer *x, uint64_t bytes, uint64_t seed, uint64_t *ns) {
  fill_slots(x, x->ref, seed);
  uint64_t n = messages(x, bytes), posted = 0, completed = 0;
  void *req[XFER_INFLIGHT] = {0};
  int64_t next = 0, t0 = clock_mono_ns();
  while (completed < n) {
    if (posted < n && posted - completed < XFER_INFLIGHT) {
      if (post(x, 0, (int)(posted % XFER_INFLIGHT), x->chunk, &req[posted % XFER_INFLIGHT], &next))
        return EIO;
      posted++;
      continue;
    }
    int slot = (int)(completed % XFER_INFLIGHT), size = 0;
    if (wait_req(x, req[slot], &size, "a receive from", &next)) return EIO;
    if (verify(x, slot, completed, size)) return EIO;
    completed++;
  }
  *ns = (uint64_t)(clock_mono_ns() - t0);
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int one_way(struct xfer *x, int send, size_t bytes, int64_t *next) {
  void *req;
  int size = 0;
  if (post(x, send, 0, bytes, &req, next)) return EIO;
  return wait_req(x, req, &size, send ? "a ping to" : "a ping from", next);
}

int xfer_pingpong(struct xfer *x, int first, int pings, uint64_t *rtt_ns) {
  uint64_t *rtt = calloc((size_t)pings + 1, sizeof(uint64_t));
  if (!rtt) return ENOMEM;
  int64_t next = 0;
  for (int i = 0; i < pings + PING_WARMUP; i++) {
    int64_t t0 = clock_mono_ns();
    if (one_way(x, first, PING_BYTES, &next) || one_way(x, !first, PING_BYTES, &next)) {
      free(rtt);
      return EIO;
    }
    if (i >= PING_WARMUP) rtt[i - PING_WARMUP] = (uint64_t)(clock_mono_ns() - t0);
  }
  qsort(rtt, (size_t)pings, sizeof(uint64_t), cmp_u64);
  *rtt_ns = pings ? rtt[pings / 2] : 0;
  free(rtt);
  return 0;
}

int xfer_size_check(struct xfer *x, int first) {
  int64_t next = 0;
  if (one_way(x, first, PING_BYTES, &next) || one_way(x, !first, PING_BYTES, &next)) return EIO;
  size_t big = x->chunk < SIZE_CHECK_BYTES ? x->chunk : SIZE_CHECK_BYTES;
  if (big <= PING_BYTES) return 0;
  watch(x, big);
  int r = one_way(x, first, big, &next) || one_way(x, !first, big, &next) ? EIO : 0;
  watch(x, 0);
  return r;
}

/* Closing with requests in flight (a stopped transfer) is allowed: the
 * plugin then frees them and never touches the buffers again, as the api
 * suite's close-in-flight case checks. */
void xfer_done(struct xfer *x) {
  for (int i = 0; i < XFER_INFLIGHT; i++) {
    if (x->smh[i]) netload_dereg_mr(x->nl, x->sc, x->smh[i]);
    if (x->rmh[i]) netload_dereg_mr(x->nl, x->rc, x->rmh[i]);
  }
  if (x->sc) netload_close_send(x->nl, x->sc);
  if (x->rc) netload_close_recv(x->nl, x->rc);
  if (x->lc) netload_close_listen(x->nl, x->lc);
  for (int i = 0; i < XFER_INFLIGHT; i++) free(x->sbuf[i]), free(x->rbuf[i]), free(x->ref[i]);
  memset(x, 0, sizeof(*x));
}
