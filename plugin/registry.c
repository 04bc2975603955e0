/* SPDX-License-Identifier: Apache-2.0 */
/* See registry.h. Lookups read a slot's sequence (acquire), its fields,
 * and the sequence again: a slot retired and reused meanwhile reads as
 * stale, never as someone else's object. The fields are stored with
 * release and loaded with acquire (no fence, which ThreadSanitizer does
 * not model): a field a reuse wrote brings the retirement's sequence
 * with it, so the second read of the sequence sees the change. On x86
 * these are plain moves. */
#include "plugin/registry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

_Static_assert(sizeof(void *) == 8, "ids are 64-bit values");

#define ID_MARK 0xd1ull
#define MARK_SHIFT 56
#define KIND_SHIFT 53
#define SLOT_SHIFT 29
#define SLOT_MASK ((1u << 24) - 1)
#define GEN_MASK ((1u << 29) - 1)
#define REQ_GEN_BITS 21
#define REQ_GEN_MASK ((1u << REQ_GEN_BITS) - 1)

#define CHUNK 1024
#define COMM_CHUNKS 1024 /* a million comms */
#define MR_CHUNKS 4096   /* four million registrations */

_Static_assert(REGISTRY_REQS_PER_COMM <= 256, "a request id has 8 bits for its slot");

/* A comm's request slots come in chunks, added as its requests in flight
 * grow: an idle comm holds one chunk, not the most it could use. */
#define REQ_CHUNK 16
#define REQ_CHUNKS (REGISTRY_REQS_PER_COMM / REQ_CHUNK)

struct req_slot {
  _Atomic uint32_t seq; /* odd while live */
  _Atomic(void *) req;
  int next_free;
};

struct comm_entry {
  _Atomic uint32_t seq; /* odd while live */
  _Atomic unsigned kind;
  _Atomic(void *) obj;
  /* Allocated as the comm's requests first need them and kept across
   * reuse, so the generations of its requests keep counting. */
  _Atomic(struct req_slot *) req_chunks[REQ_CHUNKS];
  int req_used;  /* slots handed out at least once: the comm's driving thread */
  int req_free;  /* freed slots to reuse first, -1 none: the same thread */
  int next_free; /* free comm slots: under the lock */
};

struct mr_entry {
  _Atomic uint32_t seq; /* odd while live */
  _Atomic(void *) mh;
  _Atomic uintptr_t base;
  _Atomic size_t len;
  _Atomic(const void *) comm;
  int next_free;
};

struct table {
  int nchunks;
  size_t entry_size;
  _Atomic(void *) *chunks;
  _Atomic int used; /* slots handed out at least once */
  int free_head;    /* -1: none */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(void *) comm_chunks[COMM_CHUNKS];
static _Atomic(void *) mr_chunks[MR_CHUNKS];
static struct table comms = {COMM_CHUNKS, sizeof(struct comm_entry), comm_chunks, 0, -1};
static struct table mrs = {MR_CHUNKS, sizeof(struct mr_entry), mr_chunks, 0, -1};

static void *make_id(enum registry_kind kind, uint32_t slot, uint32_t low) {
  uint64_t v = ID_MARK << MARK_SHIFT | (uint64_t)kind << KIND_SHIFT |
               (uint64_t)(slot & SLOT_MASK) << SLOT_SHIFT | (low & GEN_MASK);
  return (void *)(uintptr_t)v;
}

/* Whether id is one of ours of this kind: its slot and low bits. */
static inline __attribute__((always_inline)) enum registry_miss
split_id(const void *id, unsigned kinds, unsigned *kind, uint32_t *slot, uint32_t *low) {
  uint64_t v = (uint64_t)(uintptr_t)id;
  unsigned k = (unsigned)(v >> KIND_SHIFT) & 7;
  *kind = k;
  if (v >> MARK_SHIFT != ID_MARK || k < RK_LISTEN || k > RK_REQ) return RM_NOT_OURS;
  *slot = (uint32_t)(v >> SLOT_SHIFT) & SLOT_MASK;
  *low = (uint32_t)v & GEN_MASK;
  return RK_BIT(k) & kinds ? RM_NONE : RM_KIND;
}

/* Inlined with the entry's size known: the data path's lookups multiply
 * by a constant. */
static inline __attribute__((always_inline)) void *table_at(struct table *t, uint32_t slot,
                                                            size_t size) {
  if ((int)slot >= atomic_load_explicit(&t->used, memory_order_acquire)) return NULL;
  char *chunk = atomic_load_explicit(&t->chunks[slot / CHUNK], memory_order_acquire);
  return chunk ? chunk + (slot % CHUNK) * size : NULL;
}
#define comm_at(slot) ((struct comm_entry *)table_at(&comms, (slot), sizeof(struct comm_entry)))
#define mr_at(slot) ((struct mr_entry *)table_at(&mrs, (slot), sizeof(struct mr_entry)))

static void *entry(struct table *t, uint32_t slot) { return table_at(t, slot, t->entry_size); }

static int *next_free(struct table *t, void *e) {
  return t == &comms ? &((struct comm_entry *)e)->next_free : &((struct mr_entry *)e)->next_free;
}

/* A slot to fill, under the lock: -1 when the table is full or out of memory. */
static int slot_alloc(struct table *t) {
  if (t->free_head >= 0) {
    int s = t->free_head;
    t->free_head = *next_free(t, entry(t, (uint32_t)s));
    return s;
  }
  int s = atomic_load_explicit(&t->used, memory_order_relaxed);
  if (s >= t->nchunks * CHUNK) return -1;
  if (!atomic_load_explicit(&t->chunks[s / CHUNK], memory_order_relaxed)) {
    void *chunk = calloc(CHUNK, t->entry_size);
    if (!chunk) return -1;
    atomic_store_explicit(&t->chunks[s / CHUNK], chunk, memory_order_release);
  }
  atomic_store_explicit(&t->used, s + 1, memory_order_release);
  return s;
}

static void slot_free(struct table *t, int s) {
  *next_free(t, entry(t, (uint32_t)s)) = t->free_head;
  t->free_head = s;
}

/* The sequence a live slot has for an id's generation: 0 when not live. */
static bool seq_matches(uint32_t seq, uint32_t gen, uint32_t mask) {
  return (seq & 1) && (seq & mask) == gen;
}

/* Request slot i of a comm: NULL when its chunk was never needed. */
static inline struct req_slot *req_at(struct comm_entry *e, uint32_t i) {
  struct req_slot *c = i < REGISTRY_REQS_PER_COMM
                         ? atomic_load_explicit(&e->req_chunks[i / REQ_CHUNK], memory_order_acquire)
                         : NULL;
  return c ? &c[i % REQ_CHUNK] : NULL;
}

static void reset_requests(struct comm_entry *e) {
  for (int i = 0; i < e->req_used; i++) {
    struct req_slot *r = req_at(e, (uint32_t)i);
    uint32_t s = atomic_load_explicit(&r->seq, memory_order_relaxed);
    if (s & 1) atomic_store_explicit(&r->seq, s + 1, memory_order_release);
    r->next_free = i + 1 < e->req_used ? i + 1 : -1;
  }
  e->req_free = e->req_used ? 0 : -1;
}

enum registry_miss registry_comm_add(enum registry_kind kind, void *obj, void **id) {
  *id = NULL;
  pthread_mutex_lock(&lock);
  int s = slot_alloc(&comms);
  struct comm_entry *e = s >= 0 ? entry(&comms, (uint32_t)s) : NULL;
  if (e) {
    reset_requests(e);
    atomic_store_explicit(&e->kind, (unsigned)kind, memory_order_relaxed);
    atomic_store_explicit(&e->obj, obj, memory_order_release);
    uint32_t seq = atomic_load_explicit(&e->seq, memory_order_relaxed) + 1;
    atomic_store_explicit(&e->seq, seq, memory_order_release);
    *id = make_id(kind, (uint32_t)s, seq & GEN_MASK);
  }
  pthread_mutex_unlock(&lock);
  return e ? RM_NONE : RM_EXHAUSTED;
}

static inline __attribute__((always_inline)) struct comm_entry *
comm_entry_of(const void *id, unsigned kinds, enum registry_kind *kind, void **obj,
              enum registry_miss *miss) {
  unsigned k = 0;
  uint32_t slot = 0, gen = 0;
  *miss = split_id(id, RK_BIT(RK_LISTEN) | RK_COMMS, &k, &slot, &gen);
  if (kind) *kind = (enum registry_kind)k;
  if (*miss) return NULL;
  struct comm_entry *e = comm_at(slot);
  uint32_t seq = e ? atomic_load_explicit(&e->seq, memory_order_acquire) : 0;
  if (!e || !(gen & 1)) {
    *miss = RM_NOT_OURS;
    return NULL;
  }
  *obj = atomic_load_explicit(&e->obj, memory_order_acquire);
  if (!seq_matches(seq, gen, GEN_MASK) ||
      atomic_load_explicit(&e->seq, memory_order_relaxed) != seq) {
    *miss = RM_STALE;
    return NULL;
  }
  *miss = RK_BIT(k) & kinds ? RM_NONE : RM_KIND;
  return *miss ? NULL : e;
}

void *registry_comm_get(const void *id, unsigned kinds, enum registry_kind *kind,
                        enum registry_miss *miss) {
  void *obj = NULL;
  return comm_entry_of(id, kinds, kind, &obj, miss) ? obj : NULL;
}

void *registry_comm_take(const void *id, unsigned kinds, enum registry_kind *kind,
                         enum registry_miss *miss) {
  void *obj = NULL;
  pthread_mutex_lock(&lock);
  struct comm_entry *e = comm_entry_of(id, kinds, kind, &obj, miss);
  if (e) {
    atomic_store_explicit(&e->seq, atomic_load_explicit(&e->seq, memory_order_relaxed) + 1,
                          memory_order_release);
    reset_requests(e);
    slot_free(&comms, (int)(((uint64_t)(uintptr_t)id >> SLOT_SHIFT) & SLOT_MASK));
  }
  pthread_mutex_unlock(&lock);
  return e ? obj : NULL;
}

enum registry_miss registry_mr_add(const void *comm, const struct registry_mr *mr, void **id) {
  *id = NULL;
  pthread_mutex_lock(&lock);
  int s = slot_alloc(&mrs);
  if (s >= 0) {
    struct mr_entry *e = entry(&mrs, (uint32_t)s);
    atomic_store_explicit(&e->mh, mr->mh, memory_order_release);
    atomic_store_explicit(&e->base, mr->base, memory_order_release);
    atomic_store_explicit(&e->len, mr->len, memory_order_release);
    atomic_store_explicit(&e->comm, comm, memory_order_release);
    uint32_t seq = atomic_load_explicit(&e->seq, memory_order_relaxed) + 1;
    atomic_store_explicit(&e->seq, seq, memory_order_release);
    *id = make_id(RK_MR, (uint32_t)s, seq & GEN_MASK);
  }
  pthread_mutex_unlock(&lock);
  return s >= 0 ? RM_NONE : RM_EXHAUSTED;
}

static inline __attribute__((always_inline)) struct mr_entry *
mr_entry_of(const void *comm, const void *id, struct registry_mr *out, enum registry_miss *miss) {
  unsigned k;
  uint32_t slot = 0, gen = 0;
  *miss = split_id(id, RK_BIT(RK_MR), &k, &slot, &gen);
  if (*miss) return NULL;
  struct mr_entry *e = mr_at(slot);
  uint32_t seq = e ? atomic_load_explicit(&e->seq, memory_order_acquire) : 0;
  if (!e || !(gen & 1)) {
    *miss = RM_NOT_OURS;
    return NULL;
  }
  out->mh = atomic_load_explicit(&e->mh, memory_order_acquire);
  out->base = atomic_load_explicit(&e->base, memory_order_acquire);
  out->len = atomic_load_explicit(&e->len, memory_order_acquire);
  out->comm = atomic_load_explicit(&e->comm, memory_order_acquire);
  if (!seq_matches(seq, gen, GEN_MASK) ||
      atomic_load_explicit(&e->seq, memory_order_relaxed) != seq) {
    *miss = RM_STALE;
    return NULL;
  }
  *miss = out->comm == comm ? RM_NONE : RM_FOREIGN;
  return e;
}

enum registry_miss registry_mr_get(const void *comm, const void *id, struct registry_mr *out) {
  enum registry_miss miss;
  mr_entry_of(comm, id, out, &miss);
  return miss;
}

enum registry_miss registry_mr_take(const void *comm, const void *id, struct registry_mr *out) {
  enum registry_miss miss;
  pthread_mutex_lock(&lock);
  struct mr_entry *e = mr_entry_of(comm, id, out, &miss);
  if (e && miss == RM_NONE) {
    atomic_store_explicit(&e->seq, atomic_load_explicit(&e->seq, memory_order_relaxed) + 1,
                          memory_order_release);
    slot_free(&mrs, (int)(((uint64_t)(uintptr_t)id >> SLOT_SHIFT) & SLOT_MASK));
  }
  pthread_mutex_unlock(&lock);
  return miss;
}

/* A request slot for the comm's driving thread: a freed one, else the
 * next never used, with its chunk added when it is the first of one; -1
 * when all are in flight or memory is short. */
static int req_slot_alloc(struct comm_entry *e) {
  if (e->req_free >= 0) {
    int i = e->req_free;
    e->req_free = req_at(e, (uint32_t)i)->next_free;
    return i;
  }
  int i = e->req_used;
  if (i >= REGISTRY_REQS_PER_COMM) return -1;
  if (!req_at(e, (uint32_t)i)) {
    struct req_slot *c = calloc(REQ_CHUNK, sizeof(*c));
    if (!c) return -1;
    atomic_store_explicit(&e->req_chunks[i / REQ_CHUNK], c, memory_order_release);
  }
  e->req_used = i + 1;
  return i;
}

enum registry_miss registry_req_add(const void *comm, void *req, void **id) {
  uint32_t cslot = (uint32_t)((uint64_t)(uintptr_t)comm >> SLOT_SHIFT) & SLOT_MASK;
  struct comm_entry *e = comm_at(cslot);
  *id = NULL;
  int i = e ? req_slot_alloc(e) : -1;
  if (i < 0) return RM_EXHAUSTED;
  struct req_slot *r = req_at(e, (uint32_t)i);
  atomic_store_explicit(&r->req, req, memory_order_release);
  uint32_t seq = atomic_load_explicit(&r->seq, memory_order_relaxed) + 1;
  atomic_store_explicit(&r->seq, seq, memory_order_release);
  *id = make_id(RK_REQ, cslot, (uint32_t)i << REQ_GEN_BITS | (seq & REQ_GEN_MASK));
  return RM_NONE;
}

/* A request id's miss, off the fast path: what it is instead. */
static enum registry_miss req_miss(const void *id) {
  unsigned k;
  uint32_t slot = 0, low = 0;
  enum registry_miss miss = split_id(id, RK_BIT(RK_REQ), &k, &slot, &low);
  return miss ? miss : RM_NOT_OURS;
}

/* One lookup per test(): the id's bits checked at once, the comm's entry,
 * the slot's sequence, the request, and the sequence again. */
void *registry_req_get(const void *id, struct registry_req_ref *ref, enum registry_miss *miss) {
  uint64_t v = (uint64_t)(uintptr_t)id;
  uint32_t slot = (uint32_t)(v >> SLOT_SHIFT) & SLOT_MASK, low = (uint32_t)v & GEN_MASK;
  uint32_t i = low >> REQ_GEN_BITS, gen = low & REQ_GEN_MASK;
  if (v >> KIND_SHIFT != (ID_MARK << (MARK_SHIFT - KIND_SHIFT) | RK_REQ) || !(gen & 1) ||
      i >= REGISTRY_REQS_PER_COMM)
    goto miss;
  struct comm_entry *e = comm_at(slot);
  if (!e) goto miss;
  struct req_slot *c = atomic_load_explicit(&e->req_chunks[i / REQ_CHUNK], memory_order_acquire);
  if (!c) goto miss;
  struct req_slot *r = &c[i % REQ_CHUNK];
  uint32_t seq = atomic_load_explicit(&r->seq, memory_order_acquire);
  void *req = atomic_load_explicit(&r->req, memory_order_acquire);
  if (!seq_matches(seq, gen, REQ_GEN_MASK) ||
      atomic_load_explicit(&r->seq, memory_order_relaxed) != seq) {
    *miss = RM_STALE;
    return NULL;
  }
  *ref = (struct registry_req_ref){e, r, i, seq};
  *miss = RM_NONE;
  return req;
miss:
  *miss = req_miss(id);
  return NULL;
}

void registry_req_done(const struct registry_req_ref *ref) {
  struct comm_entry *e = ref->entry;
  struct req_slot *r = ref->slot;
  atomic_store_explicit(&r->seq, ref->seq + 1, memory_order_release);
  r->next_free = e->req_free;
  e->req_free = (int)ref->index;
}
