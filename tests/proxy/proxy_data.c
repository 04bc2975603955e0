/* SPDX-License-Identifier: Apache-2.0 */
/* The data path of one connection, one round at a time: what NCCL's
 * sendProxyProgress and recvProxyProgress do per call, on host memory. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "proxy.h"

#define POISON 0xa5
#define GUARD 64 /* bytes past a message that must stay untouched */

long long proxy_ms(void) { return clock_mono_ns() / 1000000; }

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t proxy_msg_seed(const struct proxy_opts *o, int src, int ch, int step, int tag) {
  return mix(o->seed ^ mix(((uint64_t)src << 56) ^ ((uint64_t)ch << 40) ^ ((uint64_t)tag << 32) ^
                           (uint32_t)step));
}

/* 0 B, the largest, and a log-uniform spread between. */
size_t proxy_msg_size(const struct proxy_opts *o, int src, int ch, int step, int tag) {
  uint64_t h = mix(proxy_msg_seed(o, src, ch, step, tag));
  unsigned pick = (unsigned)(h % 100);
  if (pick < 5 || o->max_size == 0) return 0;
  if (pick < 8) return o->max_size;
  int bits = 1;
  while (bits < 63 && ((size_t)1 << bits) <= o->max_size) bits++;
  int b = 1 + (int)((h >> 8) % (uint64_t)bits);
  size_t lo = (size_t)1 << (b - 1);
  size_t n = lo + (size_t)((h >> 16) % lo);
  return n > o->max_size ? o->max_size : n;
}

void proxy_fill(uint8_t *p, size_t n, uint64_t seed) {
  uint64_t x = seed;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t w = x ^ (x >> 29);
    memcpy(p + i, &w, 8);
  }
  for (; i < n; i++) p[i] = (uint8_t)(seed >> (8 * (i & 7))) ^ (uint8_t)i;
}

size_t proxy_check(const uint8_t *p, size_t n, uint64_t seed) {
  uint64_t x = seed;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t w = x ^ (x >> 29);
    if (memcmp(p + i, &w, 8)) {
      const uint8_t *want = (const uint8_t *)&w;
      size_t j = 0;
      while (p[i + j] == want[j]) j++;
      return i + j;
    }
  }
  for (; i < n; i++)
    if (p[i] != ((uint8_t)(seed >> (8 * (i & 7))) ^ (uint8_t)i)) return i;
  return n;
}

const char *proxy_res_name(int res) {
  static const char *names[] = {"ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
                                "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
                                "ncclRemoteError",   "ncclInProgress"};
  return res >= 0 && res < 8 ? names[res] : "unknown";
}

void proxy_fail(struct proxy_rank *r, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (r->o->rounds > 1) {
    char tmp[1024];
    snprintf(tmp, sizeof(tmp), "round %d: %s", r->round + 1, msg);
    snprintf(msg, sizeof(msg), "%s", tmp);
  }
  printf("#   rank %d: %s (after %lld ms)\n", r->rank, msg, proxy_ms() - r->t0);
  fflush(stdout);
  if (!r->failed) snprintf(r->first_fault, sizeof(r->first_fault), "%s", msg);
  r->failed = 1;
}

static uint8_t *slot_of(struct proxy_rank *r, uint8_t *buf, int step, int tag) {
  return buf + ((size_t)(step % r->depth) * (size_t)r->group + (size_t)tag) * r->slot;
}

static uint32_t rng_next(struct proxy_rank *r) {
  r->rng = mix(r->rng);
  return (uint32_t)r->rng;
}

/* ---- send ---- */

static int send_hello(struct proxy_rank *r, struct proxy_send *s) {
  uint8_t *hello = s->buf + s->bytes - GUARD;
  int done = 0, size = -1, res;
  if (s->hello == 0) {
    uint32_t ch = (uint32_t)s->ch;
    memcpy(hello, &ch, 4);
    res = netload_isend(&r->nl, s->comm, hello, 4, PROXY_HELLO_TAG, s->mh, &s->hello_req);
    if (res)
      return proxy_fail(r, "send channel %d hello tag %d: isend returned %d (%s)", s->ch,
                        PROXY_HELLO_TAG, res, proxy_res_name(res)),
             -1;
    if (!s->hello_req) return r->nulls_send++, 0;
    s->hello = 1;
    return 1;
  }
  res = netload_test(&r->nl, s->hello_req, &done, &size);
  if (res)
    return proxy_fail(r, "send channel %d hello tag %d: test returned %d (%s)", s->ch,
                      PROXY_HELLO_TAG, res, proxy_res_name(res)),
           -1;
  if (!done) return 0;
  s->hello = 2;
  if (size != 4)
    proxy_fail(r, "send channel %d hello: test reported %d bytes, sent 4", s->ch, size);
  return 1;
}

static int sub_post(struct proxy_rank *r, struct proxy_send *s, int tag) {
  struct proxy_sub *u = &s->subs[tag];
  if (u->posted >= r->o->steps || u->posted >= u->done + r->depth) return 0;
  for (int t = 0; r->o->in_step && t < r->group; t++)
    if (s->subs[t].posted < u->posted) return 0; /* every tag posts step n before any posts n+1 */
  size_t n = proxy_msg_size(r->o, r->rank, s->ch, u->posted, tag);
  uint8_t *p = slot_of(r, s->buf, u->posted, tag);
  if (u->filled != u->posted + 1) {
    proxy_fill(p, n, proxy_msg_seed(r->o, r->rank, s->ch, u->posted, tag));
    u->filled = u->posted + 1;
  }
  void **req = &u->reqs[u->posted % r->depth];
  int res = netload_isend(&r->nl, s->comm, p, n, tag, s->mh, req);
  if (res)
    return proxy_fail(r, "send channel %d step %d tag %d: isend of %zu bytes returned %d (%s)",
                      s->ch, u->posted, tag, n, res, proxy_res_name(res)),
           -1;
  if (!*req) return r->nulls_send++, 0; /* busy: NCCL tries again next round */
  if (++u->posted == r->o->steps) u->last_posted_ms = proxy_ms();
  return 1;
}

/* A busy proxy thread: rank 1 comes back to a connection's last requests
 * (the last NCCL_STEPS) only a while after it posted the final one, when
 * its peer may have closed already. */
static int slow(const struct proxy_rank *r, int step, long long last_posted_ms) {
  if (r->rank != 1 || !r->o->slow_last_ms || step < r->o->steps - r->depth) return 0;
  return !last_posted_ms || proxy_ms() < last_posted_ms + r->o->slow_last_ms;
}

static int sub_test(struct proxy_rank *r, struct proxy_send *s, int tag) {
  struct proxy_sub *u = &s->subs[tag];
  if (u->done >= u->posted || slow(r, u->done, u->last_posted_ms)) return 0;
  int done = 0, size = -1;
  int res = netload_test(&r->nl, u->reqs[u->done % r->depth], &done, &size);
  if (res)
    return proxy_fail(r, "send channel %d step %d tag %d: test returned %d (%s)", s->ch, u->done,
                      tag, res, proxy_res_name(res)),
           -1;
  if (!done) return 0;
  size_t n = proxy_msg_size(r->o, r->rank, s->ch, u->done, tag);
  if ((size_t)size != n)
    proxy_fail(r, "send channel %d step %d tag %d: test reported %d bytes, isend posted %zu", s->ch,
               u->done, tag, size, n);
  u->reqs[u->done % r->depth] = NULL;
  u->done++;
  return 1;
}

int proxy_send_round(struct proxy_rank *r, struct proxy_send *s) {
  if (!s->comm || s->closed || s->finished_ms) return 0;
  int moved = 0, x;
  if (s->hello < 2 && (x = send_hello(r, s)) != 0) {
    if (x < 0) return -1;
    moved = 1;
  }
  if (s->hello == 0) return moved; /* the hello goes first */
  /* The tags start in a rotating order, and a tag sits out a round now and
   * then, so a group's sends run ahead of one another as NCCL's subs do. */
  int first = (int)(rng_next(r) % (uint32_t)r->group), all_done = 1;
  for (int k = 0; k < r->group; k++) {
    int tag = (first + k) % r->group;
    if (r->group > 1 && rng_next(r) % 4 == 0) {
      all_done = 0;
      continue;
    }
    if ((x = sub_post(r, s, tag)) < 0 || (x |= sub_test(r, s, tag)) < 0) return -1;
    moved |= x;
    if (s->subs[tag].done < r->o->steps) all_done = 0;
  }
  if (all_done && s->hello == 2) s->finished_ms = proxy_ms();
  return moved || s->finished_ms;
}

/* ---- receive ---- */

static int recv_hello(struct proxy_rank *r, struct proxy_recv *v) {
  uint8_t *hello = v->buf + v->bytes - GUARD;
  int done = 0, size = -1, res, tag = PROXY_HELLO_TAG;
  if (v->hello == 0) {
    size_t cap = GUARD;
    void *data = hello;
    res = netload_irecv(&r->nl, v->comm, 1, &data, &cap, &tag, &v->mh, &v->hello_req);
    if (res)
      return proxy_fail(r, "recv comm %p hello tag %d: irecv returned %d (%s)", v->comm, tag, res,
                        proxy_res_name(res)),
             -1;
    if (!v->hello_req) return r->nulls_recv++, 0;
    v->hello = 1;
    return 1;
  }
  res = netload_test(&r->nl, v->hello_req, &done, &size);
  if (res)
    return proxy_fail(r, "recv comm %p hello tag %d: test returned %d (%s)", v->comm, tag, res,
                      proxy_res_name(res)),
           -1;
  if (!done) return 0;
  uint32_t ch;
  memcpy(&ch, hello, 4);
  v->hello = 2;
  if (size != 4 || ch >= (uint32_t)r->o->channels || (v->ch >= 0 && (uint32_t)v->ch != ch))
    return proxy_fail(r, "recv hello: %d bytes naming channel %u, expected 4 bytes naming %d", size,
                      ch, v->ch),
           -1;
  v->ch = (int)ch;
  return 1;
}

static int recv_post(struct proxy_rank *r, struct proxy_recv *v) {
  if (v->posted >= r->o->steps || v->posted >= v->received + r->depth) return 0;
  int g = r->group, *tags = v->tags[v->posted % r->depth];
  void *ptrs[PROXY_MAX_GROUP], *mhs[PROXY_MAX_GROUP];
  size_t caps[PROXY_MAX_GROUP];
  /* The tags in a group in a per-step order: data[i] belongs to tags[i]. */
  uint64_t h = mix(r->o->seed ^ (uint64_t)v->posted);
  for (int i = 0; i < g; i++) tags[i] = i;
  for (int i = g - 1; i > 0; i--) {
    int j = (int)((h >> (i * 3)) % (uint64_t)(i + 1)), t = tags[i];
    tags[i] = tags[j], tags[j] = t;
  }
  for (int i = 0; i < g; i++) {
    ptrs[i] = slot_of(r, v->buf, v->posted, tags[i]);
    caps[i] = r->slot;
    mhs[i] = v->mh;
  }
  void **req = &v->reqs[v->posted % r->depth];
  int res = netload_irecv(&r->nl, v->comm, g, ptrs, caps, tags, mhs, req);
  if (res)
    return proxy_fail(r, "recv channel %d step %d tags %d..%d: irecv of %d returned %d (%s)", v->ch,
                      v->posted, 0, g - 1, g, res, proxy_res_name(res)),
           -1;
  if (!*req) return r->nulls_recv++, 0;
  if (++v->posted == r->o->steps) v->last_posted_ms = proxy_ms();
  return 1;
}

static int verify_step(struct proxy_rank *r, struct proxy_recv *v, const int *sizes) {
  int step = v->received, bad = 0, *tags = v->tags[step % r->depth];
  for (int i = 0; i < r->group; i++) {
    size_t n = proxy_msg_size(r->o, r->peer, v->ch, step, tags[i]);
    uint8_t *p = slot_of(r, v->buf, step, tags[i]);
    if (sizes[i] < 0 || (size_t)sizes[i] != n) {
      proxy_fail(r,
                 "recv channel %d step %d tag %d: test reported %d bytes for buffer %d, the "
                 "sender posted %zu",
                 v->ch, step, tags[i], sizes[i], i, n);
      bad = 1;
      continue;
    }
    size_t at = proxy_check(p, n, proxy_msg_seed(r->o, r->peer, v->ch, step, tags[i]));
    size_t guard = r->slot - n < GUARD ? r->slot - n : GUARD, g = 0;
    while (g < guard && p[n + g] == POISON) g++;
    if (at != n || g != guard) {
      proxy_fail(r, "recv channel %d step %d tag %d: %zu bytes, %s at byte %zu", v->ch, step,
                 tags[i], n, at != n ? "data differs" : "written past the message",
                 at != n ? at : n + g);
      bad = 1;
    }
    memset(p, POISON, n + guard);
  }
  return bad ? -1 : 0;
}

static int step_flush(struct proxy_rank *r, struct proxy_recv *v, const int *sizes) {
  int step = v->received, *tags = v->tags[step % r->depth], total = 0;
  void *ptrs[PROXY_MAX_GROUP], *mhs[PROXY_MAX_GROUP];
  int sz[PROXY_MAX_GROUP];
  for (int i = 0; i < r->group; i++) {
    ptrs[i] = slot_of(r, v->buf, step, tags[i]);
    mhs[i] = v->mh;
    sz[i] = sizes[i];
    total += sizes[i];
  }
  if (!r->o->flush || total == 0) return 0;
  int res = netload_iflush(&r->nl, v->comm, r->group, ptrs, sz, mhs, &v->flush_req);
  if (res)
    return proxy_fail(r, "recv channel %d step %d: iflush returned %d (%s)", v->ch, step, res,
                      proxy_res_name(res)),
           -1;
  v->flushing = v->flush_req != NULL;
  return 0;
}

/* irecvConsumed, where the table has the slot filled (v7 on). */
static int consumed(struct proxy_rank *r, struct proxy_recv *v, void *req) {
  const struct netload *nl = &r->nl;
  ncclResult_t (*fn)(void *, int, void *) = nl->version == 7    ? nl->v7->irecvConsumed
                                            : nl->version == 8  ? nl->v8->irecvConsumed
                                            : nl->version == 9  ? nl->v9->irecvConsumed
                                            : nl->version == 10 ? nl->v10->irecvConsumed
                                            : nl->version == 11 ? nl->v11->irecvConsumed
                                            : nl->version == 12 ? nl->v12->irecvConsumed
                                                                : NULL;
  if (!fn) return 0;
  int res = fn(v->comm, r->group, req);
  if (res)
    return proxy_fail(r, "recv channel %d step %d: irecvConsumed returned %d (%s)", v->ch,
                      v->received, res, proxy_res_name(res)),
           -1;
  return 0;
}

static int recv_test(struct proxy_rank *r, struct proxy_recv *v) {
  int done = 0, res, step = v->received;
  if (v->flushing) {
    res = netload_test(&r->nl, v->flush_req, &done, NULL);
    if (res)
      return proxy_fail(r, "recv channel %d step %d: test of its iflush returned %d (%s)", v->ch,
                        step, res, proxy_res_name(res)),
             -1;
    if (!done) return 0;
    v->flushing = 0;
  } else {
    if (v->received >= v->posted || v->hello < 2 || slow(r, step, v->last_posted_ms)) return 0;
    int sizes[64]; /* NCCL_PROXY_MAX_SUBS ints, zeroed */
    memset(sizes, 0, sizeof(sizes));
    res = netload_test(&r->nl, v->reqs[step % r->depth], &done, sizes);
    if (res)
      return proxy_fail(r, "recv channel %d step %d tags 0..%d: test returned %d (%s)", v->ch, step,
                        r->group - 1, res, proxy_res_name(res)),
             -1;
    if (!done) return 0;
    if (verify_step(r, v, sizes) || step_flush(r, v, sizes)) return -1;
    if (v->flushing) return 1;
  }
  if (consumed(r, v, v->reqs[step % r->depth])) return -1;
  v->reqs[step % r->depth] = NULL;
  v->received++;
  if (v->received == r->o->steps) v->finished_ms = proxy_ms();
  return 1;
}

int proxy_recv_round(struct proxy_rank *r, struct proxy_recv *v) {
  if (!v->comm || v->closed || v->finished_ms) return 0;
  int moved = 0, x;
  if (v->hello < 2 && (x = recv_hello(r, v)) != 0) {
    if (x < 0) return -1;
    moved = 1;
  }
  if (v->hello == 0) return moved;
  if ((x = recv_post(r, v)) < 0) return -1;
  moved |= x;
  if ((x = recv_test(r, v)) < 0) return -1;
  return moved | x;
}
