/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/probe/schedule.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void sched_free(struct sched *s) {
  free(s->pairs);
  free(s->round_start);
  memset(s, 0, sizeof(*s));
}

static int sched_alloc(struct sched *s, int npair, int nround) {
  memset(s, 0, sizeof(*s));
  s->pairs = calloc((size_t)(npair ? npair : 1), sizeof(*s->pairs));
  s->round_start = calloc((size_t)nround + 1, sizeof(int));
  if (!s->pairs || !s->round_start) {
    sched_free(s);
    return ENOMEM;
  }
  return 0;
}

static void add(struct sched *s, int x, int y, int tag) {
  s->pairs[s->npair].a = x < y ? x : y;
  s->pairs[s->npair].b = x < y ? y : x;
  s->pairs[s->npair].tag = tag;
  s->npair++;
}

/* The circle method: host m-1 stays put, the others turn one place a
 * round; with n odd a bye takes the place of host m-1. */
int sched_all(int n, struct sched *s) {
  int m = n % 2 ? n + 1 : n;
  int rounds = n > 1 ? m - 1 : 0;
  if (sched_alloc(s, n * (n - 1) / 2, rounds)) return ENOMEM;
  for (int r = 0; r < rounds; r++) {
    s->round_start[r] = s->npair;
    if (m - 1 < n) add(s, m - 1, r, 0);
    for (int k = 1; k < m / 2; k++) add(s, (r + k) % (m - 1), (r - k + (m - 1)) % (m - 1), 0);
  }
  s->nround = rounds;
  s->round_start[rounds] = s->npair;
  return 0;
}

int sched_rounds(int n, const struct sched_pair *list, int count, struct sched *s) {
  char *busy = calloc((size_t)(n ? n : 1), 1), *taken = calloc((size_t)(count ? count : 1), 1);
  if (!busy || !taken || sched_alloc(s, count, count)) {
    free(busy);
    free(taken);
    return ENOMEM;
  }
  for (int left = count; left > 0; s->nround++) {
    memset(busy, 0, (size_t)n);
    s->round_start[s->nround] = s->npair;
    for (int i = 0; i < count; i++) {
      if (taken[i] || busy[list[i].a] || busy[list[i].b]) continue;
      busy[list[i].a] = busy[list[i].b] = 1;
      taken[i] = 1;
      add(s, list[i].a, list[i].b, list[i].tag);
      left--;
    }
  }
  s->round_start[s->nround] = s->npair;
  free(busy);
  free(taken);
  return 0;
}

static int ring_list(int n, struct sched_pair *list) {
  int count = 0;
  for (int i = 0; i + 1 < n; i++) list[count++] = (struct sched_pair){i, i + 1, 0};
  if (n > 2) list[count++] = (struct sched_pair){0, n - 1, 0};
  return count;
}

int sched_ring(int n, struct sched *s) {
  struct sched_pair *list = calloc((size_t)(n ? n : 1), sizeof(*list));
  if (!list) return ENOMEM;
  int r = sched_rounds(n, list, ring_list(n, list), s);
  free(list);
  return r;
}

/* A set of pair keys (a * n + b), open addressing. */
struct pairset {
  uint64_t *keys;
  size_t cap;
};

static int pairset_add(struct pairset *p, uint64_t key) {
  size_t i = (size_t)(key * 0x9e3779b97f4a7c15ULL) & (p->cap - 1);
  while (p->keys[i]) {
    if (p->keys[i] == key + 1) return 0;
    i = (i + 1) & (p->cap - 1);
  }
  p->keys[i] = key + 1;
  return 1;
}

static uint64_t next_random(uint64_t *state) {
  uint64_t x = (*state += 0x9e3779b97f4a7c15ULL);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

int sched_sample(int n, int extra, unsigned seed, struct sched *s) {
  long long possible = (long long)n * (n - 1) / 2;
  struct sched_pair *list = calloc((size_t)n + (size_t)extra + 1, sizeof(*list));
  struct pairset set = {NULL, 64};
  while (set.cap < 2 * ((size_t)n + (size_t)extra + 1)) set.cap *= 2;
  set.keys = calloc(set.cap, sizeof(uint64_t));
  if (!list || !set.keys) {
    free(list);
    free(set.keys);
    return ENOMEM;
  }
  int count = ring_list(n, list);
  for (int i = 0; i < count; i++) pairset_add(&set, (uint64_t)list[i].a * (uint64_t)n + list[i].b);
  if (extra > possible - count) extra = (int)(possible - count);
  uint64_t state = seed;
  /* Rejection sampling: the sample is small next to the pairs left. */
  for (int want = count + extra, tries = 0; count < want && tries < 64 * want; tries++) {
    int a = (int)(next_random(&state) % (uint64_t)n), b = (int)(next_random(&state) % (uint64_t)n);
    if (a == b) continue;
    if (a > b) a ^= b, b ^= a, a ^= b;
    if (pairset_add(&set, (uint64_t)a * (uint64_t)n + b))
      list[count++] = (struct sched_pair){a, b, 0};
  }
  int r = sched_rounds(n, list, count, s);
  free(list);
  free(set.keys);
  return r;
}
