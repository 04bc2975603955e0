/* SPDX-License-Identifier: Apache-2.0 */
/* Memory registration with a per-device cache: NCCL registers every buffer
 * of every connection, often the same pages again; a registration covering
 * the page-aligned range is reused (refcounted) instead of pinning twice.
 * dma-buf registrations share the cache, keyed by the range they map (their
 * own address and size), as NCCL 2.30 keeps them (src/transport/net_ib/
 * reg.cc ncclIbRegMrDmaBufInternal2): the same GPU buffer registered again,
 * once per connection, is pinned once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "transport/ib/dev/ib.h"
#include "transport/prefs.h"

#define MR_ACCESS                                                                                  \
  (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                     \
   IBV_ACCESS_REMOTE_ATOMIC)

/* From the auxiliary vector: no syscall, nothing worth caching. */
static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

static void mr_fail(const struct ib_dev *d, const char *what, size_t len, int err) {
  if (err == ENOMEM || err == EAGAIN)
    WARN("device %s: %s of %zu bytes failed: %s. The locked-memory limit is too low: set "
         "'ulimit -l unlimited' (containers: --ulimit memlock=-1)",
         d->label, what, len, strerror(err));
  else if (err == EFAULT)
    WARN("device %s: %s of %zu bytes failed: %s. For GPU memory this means no peer-memory "
         "support: load nvidia_peermem (or nv_peer_mem), or use dma-buf",
         d->label, what, len, strerror(err));
  else WARN("device %s: %s of %zu bytes failed: %s", d->label, what, len, strerror(err));
}

struct ibv_mr *ib_mr_plain(struct ib_dev *d, void *p, size_t len, int access, const char *what) {
  struct ibv_mr *mr = d->v->reg_mr(d->pd, p, len, access);
  if (!mr) mr_fail(d, what, len, errno);
  return mr;
}

static struct ib_mr_entry *cache_find(struct ib_dev *d, uintptr_t a, size_t len) {
  for (int i = 0; i < d->nmr; i++) {
    struct ib_mr_entry *e = &d->mrs[i];
    if (e->addr <= a && a + len <= e->addr + e->len) return e;
  }
  return NULL;
}

static struct ib_mr_entry *cache_add(struct ib_dev *d, uintptr_t a, size_t len, struct ibv_mr *mr) {
  if (d->nmr == d->cap_mr) {
    int cap = d->cap_mr ? d->cap_mr * 2 : 32;
    struct ib_mr_entry *m = realloc(d->mrs, (size_t)cap * sizeof(*m));
    if (!m) return NULL;
    d->mrs = m;
    d->cap_mr = cap;
  }
  struct ib_mr_entry *e = &d->mrs[d->nmr++];
  *e = (struct ib_mr_entry){a, len, mr, 1};
  return e;
}

bool ib_mr_relaxed_ordering(const struct verbs_ops *v) {
  return transport_prefs()->ib_relaxed_ordering != 0 && v->reg_mr_iova2;
}

/* One registration of the caller's range (host pages a..a+len, or the
 * dma-buf) with the given access; NULL with *err set. */
static struct ibv_mr *reg_once(struct ib_dev *d, uintptr_t a, size_t len, void *data, size_t size,
                               int fd, uint64_t offset, int access, int *err) {
  struct ibv_mr *mr;
  errno = 0;
  if (fd >= 0) {
    mr = d->v->reg_dmabuf_mr ? d->v->reg_dmabuf_mr(d->pd, offset, size, (uintptr_t)data, fd, access)
                             : NULL;
    if (!mr) *err = d->v->reg_dmabuf_mr ? errno : EOPNOTSUPP;
  } else if (access & IBV_ACCESS_RELAXED_ORDERING) {
    mr = d->v->reg_mr_iova2(d->pd, (void *)a, len, a, (unsigned)access);
    if (!mr) *err = errno;
  } else {
    mr = d->v->reg_mr(d->pd, (void *)a, len, access);
    if (!mr) *err = errno;
  }
  if (!mr && !*err) *err = EIO; /* a provider that set no errno */
  return mr;
}

/* With relaxed ordering where the device takes it, as NCCL registers its
 * buffers: a device or kernel that refuses the flag (EINVAL, EOPNOTSUPP)
 * gets the registration without it, and the device is used without it
 * from then on (said once). */
static struct ibv_mr *reg_ordered(struct ib_dev *d, uintptr_t a, size_t len, void *data,
                                  size_t size, int fd, uint64_t offset, int *err) {
  bool is_ro = __atomic_load_n(&d->is_ro, __ATOMIC_RELAXED);
  int access = MR_ACCESS | (is_ro ? IBV_ACCESS_RELAXED_ORDERING : 0);
  struct ibv_mr *mr = reg_once(d, a, len, data, size, fd, offset, access, err);
  if (!mr && is_ro && (*err == EINVAL || *err == EOPNOTSUPP || *err == EPROTONOSUPPORT)) {
    int ro_err = *err;
    *err = 0;
    mr = reg_once(d, a, len, data, size, fd, offset, MR_ACCESS, err);
    if (mr && __atomic_exchange_n(&d->is_ro, false, __ATOMIC_RELAXED))
      INFO(LOG_INIT,
           "device %s refuses PCIe relaxed ordering on memory registrations (%s): registering "
           "without it from now on (NCCL_IB_PCI_RELAXED_ORDERING=0 skips the attempt)",
           d->label, strerror(ro_err));
  }
  if (!mr)
    mr_fail(d, fd >= 0 ? "dma-buf registration" : "memory registration", fd >= 0 ? size : len,
            *err);
  return mr;
}

bool ib_mr_type_ok(const struct ib_dev *d, int type) {
  if (type != NCCL_PTR_CUDA || (d->ptr_support & (NCCL_PTR_CUDA | NCCL_PTR_DMABUF))) return true;
  WARN("device %s: registration of GPU memory, but this host has no peer-memory module "
       "(nvidia_peermem) and no dma-buf support: GPU Direct RDMA is not available here",
       d->label);
  return false;
}

/* The range's registration on d, shared through d's cache: NULL with
 * *err set (logged). */
static struct ibv_mr *reg_cached(struct ib_dev *d, void *data, size_t size, int dmabuf_fd,
                                 uint64_t offset, int *err) {
  struct ibv_mr *out = NULL;
  uintptr_t a = (uintptr_t)data & ~(page_size() - 1);
  size_t len = ((uintptr_t)data + size - a + page_size() - 1) & ~(page_size() - 1);
  if (!len) len = page_size();
  /* a dma-buf registration maps exactly data..data+size (iova = data) */
  uintptr_t key = dmabuf_fd < 0 ? a : (uintptr_t)data;
  size_t key_len = dmabuf_fd < 0 ? len : size;
  pthread_mutex_lock(&d->lock);
  struct ib_mr_entry *e = cache_find(d, key, key_len);
  if (e) {
    e->refs++;
    out = e->mr;
  } else {
    struct ibv_mr *mr = reg_ordered(d, a, len, data, size, dmabuf_fd, offset, err);
    if (mr && !cache_add(d, key, key_len, mr)) {
      WARN("device %s: memory registration of %zu bytes: out of memory for its cache entry",
           d->label, len);
      d->v->dereg_mr(mr);
      mr = NULL;
      *err = ENOMEM;
    }
    out = mr;
  }
  pthread_mutex_unlock(&d->lock);
  return out;
}

/* Drops a reference to mr in d's cache (deregistered with the last). */
static int dereg_cached(struct ib_dev *d, struct ibv_mr *mr) {
  int err = 0;
  pthread_mutex_lock(&d->lock);
  int i;
  for (i = 0; i < d->nmr && d->mrs[i].mr != mr; i++) {
  }
  if (i < d->nmr) {
    if (--d->mrs[i].refs == 0) {
      err = d->v->dereg_mr(d->mrs[i].mr);
      d->mrs[i] = d->mrs[--d->nmr];
    }
  } else {
    err = d->v->dereg_mr(mr); /* a handle whose entry is gone: its own registration */
  }
  pthread_mutex_unlock(&d->lock);
  if (err) WARN("device %s: deregistering memory failed: %s", d->label, strerror(err));
  return err;
}

/* On a fused port, the other member ports register the range too: a
 * connection striped over them writes through each (0, or an errno). */
static int reg_members(struct ib_dev *d, void *data, size_t size, int fd, uint64_t offset,
                       struct ib_mh *mh) {
  int err = 0;
  for (int m = 0; m < d->nmembers && m < IB_MAX_STRIPE && !err; m++) {
    mh->mrs[m] =
      d->members[m] == d ? mh->mr : reg_cached(d->members[m], data, size, fd, offset, &err);
    mh->nmembers = m + 1;
  }
  return err;
}

static void dereg_members(struct ib_mh *mh) {
  for (int m = 0; m < mh->nmembers; m++)
    if (mh->mrs[m] && mh->mrs[m] != mh->mr) (void)dereg_cached(mh->dev->members[m], mh->mrs[m]);
  mh->nmembers = 0;
}

int ib_mr_reg(struct ib_dev *d, void *data, size_t size, int dmabuf_fd, uint64_t offset,
              bool is_gpu, struct ib_mh **out) {
  *out = NULL;
  struct ib_mh *mh = calloc(1, sizeof(*mh));
  if (!mh) {
    WARN("device %s: memory registration of %zu bytes: out of memory", d->label, size);
    return ENOMEM;
  }
  int err = 0;
  mh->dev = d;
  mh->mr = reg_cached(d, data, size, dmabuf_fd, offset, &err);
  if (!err && d->nmembers > 1 && ib_stripe_offer(d))
    err = reg_members(d, data, size, dmabuf_fd, offset, mh);
  if (err) {
    dereg_members(mh);
    if (mh->mr) (void)dereg_cached(d, mh->mr);
    free(mh);
    return err;
  }
  mh->obj = OBJ_MR;
  mh->dev = d;
  mh->addr = (uintptr_t)data;
  mh->len = size;
  mh->is_gpu = is_gpu;
  *out = mh;
  return 0;
}

int ib_mr_dereg(struct ib_dev *d, struct ib_mh *mh) {
  dereg_members(mh);
  int err = dereg_cached(d, mh->mr);
  mh->obj = OBJ_DEAD;
  free(mh);
  return err;
}
