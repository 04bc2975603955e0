/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: what the host's kernel and drivers decide rather than the
 * fabric: dma-buf registration, fork safety and port/device events.
 *
 *   SOFTVERBS_DMABUF=1       ibv_reg_dmabuf_mr works, as with a GPU driver
 *                            that exports dma-bufs (the NVIDIA open kernel
 *                            modules): fd -1 fails with EBADF (the probe's
 *                            "supported" answer); a real fd (a memfd in the
 *                            tests) is mapped and registered at iova. Unset:
 *                            EOPNOTSUPP, as without a GPU.
 *   SOFTVERBS_FORK=needed    a kernel without copy-on-fork for pinned pages
 *                            (before Linux 5.13): ibv_is_fork_initialized
 *                            says DISABLED until ibv_fork_init is called,
 *                            then ENABLED. Unset: UNNEEDED.
 *   SOFTVERBS_PORT_EVENTS=FILE
 *                            (read at ibv_open_device) the context watches
 *                            FILE, which the test rewrites while it runs
 *                            (an environment variable changed then would
 *                            race with the watcher's getenv): a word
 *                            "down:mlx5_2[:1]" ("down:*": all) raises
 *                            PORT_ERR for that port when it appears and
 *                            PORT_ACTIVE when it goes, and while it is
 *                            there the port's link is down: its queue
 *                            pairs' packets are lost both ways (they time
 *                            out and resend, up to retry_cnt) and
 *                            ibv_query_port says DOWN; "fatal:mlx5_2"
 *                            ("fatal:*") raises DEVICE_FATAL once. Within
 *                            about 10 ms.
 *   SOFTVERBS_ECE=0x5        queue pairs offer enhanced connection
 *                            establishment with these options (vendor
 *                            0x02c9, as mlx5); ibv_set_ece takes options
 *                            of that vendor with comp_mask 0 (EINVAL
 *                            otherwise), RTR settles on those given &
 *                            the device's, and ibv_query_ece answers that
 *                            settled set from then on (mlx5 keeps what
 *                            the firmware returned at RTR). Unset: both
 *                            verbs EOPNOTSUPP.
 *   SOFTVERBS_ACTIVE_MTU=mlx5_0:2048,...
 *                            the active MTU ibv_query_port reports for
 *                            that device (":port" optional; "*": all), as
 *                            a subnet manager's MTU that sysfs does not
 *                            show.
 *   SOFTVERBS_NO_RELAXED_ORDERING=1
 *                            a registration asking for
 *                            IBV_ACCESS_RELAXED_ORDERING fails with EINVAL,
 *                            as on a kernel that rejects the optional flag.
 * A dma-buf mapping stays until the process ends (deregistration does not
 * know it). */
#include "sv.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

SV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
                                           uint64_t iova, int fd, int access) {
  if (!sv_env("SOFTVERBS_DMABUF")) {
    errno = EOPNOTSUPP;
    return NULL;
  }
  if (fd < 0) {
    errno = EBADF;
    return NULL;
  }
  void *p = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)offset);
  if (p == MAP_FAILED) return NULL; /* errno from mmap */
  struct ibv_mr *mr = ibv_reg_mr_iova2(pd, p, length, iova, (unsigned)access);
  if (!mr) {
    int err = errno;
    munmap(p, length);
    errno = err;
  }
  return mr;
}

bool sv_hostcaps_access_ok(unsigned access) {
  return !(access & IBV_ACCESS_RELAXED_ORDERING) || !sv_env("SOFTVERBS_NO_RELAXED_ORDERING");
}

enum ibv_mtu sv_hostcaps_active_mtu(const char *dev, int port, enum ibv_mtu mtu) {
  const char *v = sv_env("SOFTVERBS_ACTIVE_MTU");
  if (!v) return mtu;
  char list[256], *save = NULL;
  snprintf(list, sizeof list, "%s", v);
  for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *f[3] = {item, NULL, NULL};
    for (int i = 1; i < 3 && (f[i] = strchr(f[i - 1], ':')) != NULL; i++) *f[i]++ = 0;
    const char *bytes = f[2] ? f[2] : f[1];
    if (!bytes || (strcmp(f[0], "*") && strcmp(f[0], dev)) || (f[2] && atoi(f[1]) != port))
      continue;
    for (int m = IBV_MTU_4096; m >= IBV_MTU_256; m--)
      if ((128 << m) <= atoi(bytes)) return (enum ibv_mtu)m;
  }
  return mtu;
}

static atomic_bool fork_enabled;

/* Nothing is pinned, so fork needs no care unless a kernel is modelled that
 * lacks copy-on-fork. */
SV_EXPORT int ibv_fork_init(void) {
  atomic_store(&fork_enabled, true);
  return 0;
}

SV_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void) {
  const char *v = sv_env("SOFTVERBS_FORK");
  if (!v || strcmp(v, "needed")) return IBV_FORK_UNNEEDED;
  return atomic_load(&fork_enabled) ? IBV_FORK_ENABLED : IBV_FORK_DISABLED;
}

#define SV_ECE_VENDOR 0x02c9u

/* The device's offer, or -1 when it has no ECE (SOFTVERBS_ECE unset). */
static long device_ece(void) { return sv_env_long("SOFTVERBS_ECE", -1, 0, 0xffffffffL); }

void sv_ece_settle(struct sv_qp *qp) {
  long opts = device_ece();
  qp->ece_settled = qp->ece_set & (opts < 0 ? 0 : (uint32_t)opts);
  qp->has_ece_settled = true;
  sv_log("qp 0x%x: ECE settled on options 0x%x", qp->ibqp.qp_num, qp->ece_settled);
}

SV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece) {
  struct sv_qp *q = (struct sv_qp *)qp;
  long opts = device_ece();
  if (opts < 0) return EOPNOTSUPP;
  pthread_mutex_lock(&q->lock);
  ece->vendor_id = SV_ECE_VENDOR;
  ece->options = q->has_ece_settled ? q->ece_settled : (uint32_t)opts;
  ece->comp_mask = 0;
  pthread_mutex_unlock(&q->lock);
  return 0;
}

SV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece) {
  struct sv_qp *q = (struct sv_qp *)qp;
  if (device_ece() < 0) return EOPNOTSUPP;
  if (ece->vendor_id != SV_ECE_VENDOR || ece->comp_mask) return EINVAL;
  pthread_mutex_lock(&q->lock);
  q->ece_set = ece->options;
  q->has_ece_set = true;
  pthread_mutex_unlock(&q->lock);
  sv_log("qp 0x%x: ECE options 0x%x set", qp->qp_num, ece->options);
  return 0;
}

/* ---- port and device events ---- */

struct watch {
  struct sv_ctx *ctx;
  pthread_t tid;
  atomic_bool stop;
  char path[256];
  struct watch *next;
};

static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch *watches;

static void raise_port(struct sv_ctx *ctx, enum ibv_event_type type, int port) {
  sv_async_raise(ctx, type, (void *)(intptr_t)port); /* a port event carries its number */
  sv_log("device %s port %d: %s raised", ctx->dev->ibdev.name, port, ibv_event_type_str(type));
}

/* Whether the words of the watched file hold kind:dev[:port] for this
 * device and port (port 0: any). */
static bool file_says(const char *words, const char *kind, const char *dev, int port) {
  char buf[512], *save = NULL;
  snprintf(buf, sizeof buf, "%s", words);
  size_t klen = strlen(kind);
  for (char *t = strtok_r(buf, " \t\n,", &save); t; t = strtok_r(NULL, " \t\n,", &save)) {
    if (strncmp(t, kind, klen) || t[klen] != ':') continue;
    char *d = t + klen + 1, *colon = strchr(d, ':');
    if (colon) *colon = 0;
    if ((!strcmp(d, "*") || !strcmp(d, dev)) && (!colon || !port || atoi(colon + 1) == port))
      return true;
  }
  return false;
}

static void read_words(const char *path, char *buf, size_t cap) {
  buf[0] = 0;
  FILE *f = fopen(path, "re");
  if (!f) return;
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = 0;
  fclose(f);
}

static void *watch_main(void *arg) {
  struct watch *w = arg;
  struct sv_device *d = w->ctx->dev;
  bool down[SV_MAX_PORTS + 1] = {0}, is_fatal = false;
  char words[512];
  while (!atomic_load(&w->stop)) {
    read_words(w->path, words, sizeof words);
    for (int i = 0; i < d->nports; i++) {
      int num = d->ports[i].num;
      bool now = file_says(words, "down", d->ibdev.name, num);
      if (now != down[num]) {
        atomic_store(&d->ports[i].is_cut, now); /* the link goes with the event */
        raise_port(w->ctx, now ? IBV_EVENT_PORT_ERR : IBV_EVENT_PORT_ACTIVE, num);
      }
      down[num] = now;
    }
    if (!is_fatal && file_says(words, "fatal", d->ibdev.name, 0)) {
      is_fatal = true;
      raise_port(w->ctx, IBV_EVENT_DEVICE_FATAL, d->nports ? d->ports[0].num : 1);
    }
    usleep(10000);
  }
  return NULL;
}

void sv_hostcaps_open(struct sv_ctx *ctx) {
  const char *path = sv_env("SOFTVERBS_PORT_EVENTS");
  if (!path) return;
  struct watch *w = calloc(1, sizeof *w);
  if (!w) return;
  w->ctx = ctx;
  snprintf(w->path, sizeof w->path, "%s", path);
  if (pthread_create(&w->tid, NULL, watch_main, w)) {
    free(w);
    return;
  }
  pthread_mutex_lock(&watch_lock);
  w->next = watches;
  watches = w;
  pthread_mutex_unlock(&watch_lock);
}

void sv_hostcaps_close(struct sv_ctx *ctx) {
  pthread_mutex_lock(&watch_lock);
  struct watch **pp = &watches, *w = NULL;
  while (*pp && (*pp)->ctx != ctx) pp = &(*pp)->next;
  if (*pp) {
    w = *pp;
    *pp = w->next;
  }
  pthread_mutex_unlock(&watch_lock);
  if (!w) return;
  atomic_store(&w->stop, true);
  pthread_join(w->tid, NULL);
  free(w);
}
