/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: protection domains and memory regions.
 *
 * A key (lkey == rkey, as on mlx5) is the MR's table index shifted left by
 * 8 plus an 8-bit generation, so a stale or forged key is caught the way a
 * HCA catches it: the responder checks rkey, PD, access flags and bounds
 * before it touches memory. */
#include "sv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

SV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context) {
  static atomic_uint handles;
  struct sv_pd *pd = calloc(1, sizeof *pd);
  if (!pd) return NULL;
  pd->ibpd.context = context;
  pd->ibpd.handle = atomic_fetch_add(&handles, 1);
  atomic_init(&pd->refs, 0);
  return &pd->ibpd;
}

SV_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd) {
  struct sv_pd *pd = (struct sv_pd *)ibpd;
  if (atomic_load(&pd->refs)) return EBUSY;
  free(pd);
  return 0;
}

static int mr_insert(struct sv_ctx *ctx, struct sv_mr *mr) {
  pthread_rwlock_wrlock(&ctx->mr_lock);
  uint32_t i = ctx->mr_next ? ctx->mr_next : 1;
  while (i < ctx->mr_cap && ctx->mrs[i]) i++;
  if (i >= ctx->mr_cap) {
    uint32_t cap = ctx->mr_cap ? ctx->mr_cap * 2 : 64;
    struct sv_mr **grown = cap < (1u << 24) ? realloc(ctx->mrs, cap * sizeof *grown) : NULL;
    if (!grown) {
      pthread_rwlock_unlock(&ctx->mr_lock);
      return ENOMEM;
    }
    memset(grown + ctx->mr_cap, 0, (cap - ctx->mr_cap) * sizeof *grown);
    ctx->mrs = grown;
    ctx->mr_cap = cap;
  }
  ctx->mrs[i] = mr;
  ctx->mr_next = i + 1;
  mr->index = i;
  mr->ibmr.lkey = mr->ibmr.rkey = i << 8 | ++ctx->mr_gen;
  pthread_rwlock_unlock(&ctx->mr_lock);
  return 0;
}

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                          uint64_t iova, unsigned int access) {
  const unsigned known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                         IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
                         IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE;
  /* Remote write or atomic access requires local write (verbs rule). */
  bool needs_local = access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  if (!length || (access & ~known) || (needs_local && !(access & IBV_ACCESS_LOCAL_WRITE)) ||
      !sv_hostcaps_access_ok(access)) {
    errno = EINVAL;
    return NULL;
  }
  if (!addr) {
    errno = EFAULT;
    return NULL;
  }
  struct sv_mr *mr = calloc(1, sizeof *mr);
  if (!mr) return NULL;
  mr->ibmr.context = pd->context;
  mr->ibmr.pd = pd;
  mr->ibmr.addr = addr;
  mr->ibmr.length = length;
  mr->iova = access & IBV_ACCESS_ZERO_BASED ? 0 : iova;
  mr->access = (int)access;
  int err = mr_insert(sv_ctx_of(pd->context), mr);
  if (err) {
    free(mr);
    errno = err;
    return NULL;
  }
  mr->ibmr.handle = mr->index;
  atomic_fetch_add(&((struct sv_pd *)pd)->refs, 1);
  return &mr->ibmr;
}

SV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
                                         uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

SV_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr) {
  struct sv_mr *mr = (struct sv_mr *)ibmr;
  struct sv_ctx *ctx = sv_ctx_of(ibmr->context);
  pthread_rwlock_wrlock(&ctx->mr_lock);
  if (mr->index < ctx->mr_cap && ctx->mrs[mr->index] == mr) ctx->mrs[mr->index] = NULL;
  if (mr->index < ctx->mr_next) ctx->mr_next = mr->index;
  pthread_rwlock_unlock(&ctx->mr_lock);
  atomic_fetch_sub(&((struct sv_pd *)ibmr->pd)->refs, 1);
  free(mr);
  return 0;
}

/* Checks that [addr, addr+len) lies in the MR named by key, in pd, with the
 * access flags asked for; gives the host address. EINVAL: no such key;
 * EACCES: wrong PD or flags; EFAULT: out of bounds. */
int sv_mr_check(struct sv_ctx *ctx, struct ibv_pd *pd, uint32_t key, uint64_t addr, uint64_t len,
                int access, void **host) {
  int err = 0;
  pthread_rwlock_rdlock(&ctx->mr_lock);
  uint32_t i = key >> 8;
  struct sv_mr *mr = i < ctx->mr_cap ? ctx->mrs[i] : NULL;
  if (!mr || mr->ibmr.lkey != key) err = EINVAL;
  else if (mr->ibmr.pd != pd || (mr->access & access) != access) err = EACCES;
  else if (addr < mr->iova || len > mr->ibmr.length || addr - mr->iova > mr->ibmr.length - len)
    err = EFAULT;
  else *host = (char *)mr->ibmr.addr + (addr - mr->iova);
  pthread_rwlock_unlock(&ctx->mr_lock);
  return err;
}
