/* SPDX-License-Identifier: Apache-2.0 */
/* Virtual devices: see vdev.h. What NCCL asks (src/graph/topo.cc,
 * ncclTopoAutoMerge): 2.24 to 2.26 pass every group, a lone device too;
 * 2.27 on only groups of two or more. 2.24/2.25 fail init on a refusal,
 * 2.26 unplaces the group and rescans, which spins forever when a lone
 * device is refused. So a group of one is always made (TCP included), and
 * a group is refused only when it cannot be fused: no members, a member
 * that is not a physical device or is named twice, RDMA ports beside TCP
 * interfaces, ports of different link layers, or RDMA ports with
 * NCCL_IB_MERGE_NICS=0 (NCCL's IB transport refuses those the same way).
 * TCP interfaces fuse like ports: each connection takes the next member. */
#include "plugin/vdev.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/events.h"
#include "common/log.h"
#include "common/ncclver.h"
#include "transport/handle.h"
#include "transport/prefs.h"

static pthread_mutex_t vdev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct diag_vdev *vdevs; /* room for as many as the host has devices */
static atomic_int nvdevs;       /* entries made, published after the entry is written */
static atomic_int nshown;       /* the first entries devices() reports (see diag_vdev_forget) */

int diag_vdev_count(void) { return atomic_load(&nshown); }

/* A call on a virtual device devices() no longer reports (after
 * diag_vdev_forget): NCCL kept the library loaded and uses the indices it
 * has, so devices() reports them again, as every other rank's does. */
static void vdev_in_use(int k) {
  int shown = atomic_load(&nshown);
  if (k < shown) return;
  pthread_mutex_lock(&vdev_lock);
  bool is_restored = atomic_load(&nshown) <= k;
  if (is_restored) atomic_store(&nshown, atomic_load(&nvdevs));
  pthread_mutex_unlock(&vdev_lock);
  if (is_restored)
    INFO(LOG_INIT | LOG_NET,
         "virtual device [%d] is used again without being made again: NCCL kept this plugin "
         "loaded, so devices() reports the %d virtual devices again",
         transport_host()->ndev + k, atomic_load(&nvdevs));
}

const struct diag_vdev *diag_vdev_get(int dev) {
  int k = dev - transport_host()->ndev;
  if (k < 0 || k >= atomic_load(&nvdevs)) return NULL;
  vdev_in_use(k);
  return &vdevs[k];
}

const struct transport_dev *diag_vdev_member(const struct diag_vdev *v) {
  const struct transport_host *h = transport_host();
  for (int i = 0; i < v->ndevs; i++)
    if (!transport_dev_is_down(&h->devs[v->devs[i]])) return &h->devs[v->devs[i]];
  return &h->devs[v->devs[0]];
}

const struct transport_dev *diag_vdev_pick(int dev, const void *handle) {
  const struct diag_vdev *cv = diag_vdev_get(dev);
  if (!cv) return NULL;
  struct diag_vdev *v = &vdevs[cv - vdevs];
  const struct transport_host *h = transport_host();
  if (!handle) {
    unsigned k = __atomic_fetch_add(&v->next_listen, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < v->ndevs; i++) {
      const struct transport_dev *d = &h->devs[v->devs[(k + (unsigned)i) % (unsigned)v->ndevs]];
      if (!transport_dev_is_down(d)) return d;
    }
    return &h->devs[v->devs[k % (unsigned)v->ndevs]];
  }
  struct handle hd;
  char why[256];
  if (handle_decode(handle, &hd, why, sizeof(why)) == HANDLE_OK)
    for (int i = 0; i < v->ndevs; i++)
      if ((uint32_t)v->devs[i] == hd.dev && !transport_dev_is_down(&h->devs[v->devs[i]]))
        return &h->devs[v->devs[i]];
  return diag_vdev_member(v); /* a bad handle: transport_connect names it */
}

/* What the running NCCL does with a refusal, for the refusal's message. */
static const char *refusal_cost(void) {
  int v = nccl_version_code();
  if (v >= 22400 && v < 22600)
    return "; this NCCL fails init on a refusal: set NCCL_NET_MERGE_LEVEL=LOC to use the ports "
           "unfused";
  if (v >= 22600 && v < 22700)
    return "; this NCCL may then leave its first device out: set NCCL_NET_MERGE_LEVEL=LOC to use "
           "the ports unfused";
  return "; NCCL uses each on its own";
}

static int check_member(const struct transport_host *h, int i, const int *devs) {
  if (devs[i] < 0 || devs[i] >= h->ndev) {
    WARN("makeVDevice: device %d is not a physical device of this plugin (it has %d)%s", devs[i],
         h->ndev, refusal_cost());
    return EINVAL;
  }
  const struct transport_dev *d = &h->devs[devs[i]], *d0 = &h->devs[devs[0]];
  for (int j = 0; j < i; j++)
    if (devs[j] == devs[i]) {
      WARN("makeVDevice: device %s is named twice; a virtual device takes each port once%s",
           d->name, refusal_cost());
      return EINVAL;
    }
  if (d->is_ib != d0->is_ib) {
    WARN("makeVDevice: cannot fuse %s (%s) with %s (%s): a connection cannot move between RDMA "
         "and TCP%s",
         d0->name, transport_dev_kind(d0), d->name, transport_dev_kind(d), refusal_cost());
    return EINVAL;
  }
  if (d->is_ib && transport_dev_ll(d) != transport_dev_ll(d0)) {
    WARN("makeVDevice: cannot fuse %s (%s) with %s (%s): their link layers differ; select ports "
         "of one link layer with NCCL_IB_HCA, or set NCCL_IB_MERGE_NICS=0%s",
         d0->name, topo_ll_name(transport_dev_ll(d0)), d->name, topo_ll_name(transport_dev_ll(d)),
         refusal_cost());
    return EINVAL;
  }
  return 0;
}

/* 0, or a WARN (an INFO when NCCL_IB_MERGE_NICS=0 says no) and EINVAL. */
static int check_members(const struct transport_host *h, int ndevs, const int *devs, int cap) {
  if (cap > DIAG_VDEV_MAX_DEVS) cap = DIAG_VDEV_MAX_DEVS;
  if (ndevs < 1 || ndevs > cap) {
    WARN("makeVDevice with %d devices: a virtual device takes 1 to %d%s", ndevs, cap,
         refusal_cost());
    return EINVAL;
  }
  for (int i = 0; i < ndevs; i++)
    if (check_member(h, i, devs)) return EINVAL;
  if (ndevs > 1 && h->devs[devs[0]].is_ib && !transport_prefs()->is_merge_nics) {
    INFO(LOG_NET, "makeVDevice: not fusing %d ports into one because NCCL_IB_MERGE_NICS=0%s", ndevs,
         refusal_cost());
    return EINVAL;
  }
  return 0;
}

static bool same_members(const struct diag_vdev *v, int ndevs, const int *devs) {
  if (v->ndevs != ndevs) return false;
  for (int i = 0; i < ndevs; i++)
    if (v->devs[i] != devs[i]) return false;
  return true;
}

void diag_dev_rail_plane(const struct transport_dev *d, int *rail, int *plane) {
  transport_dev_rail_plane(d, rail, plane);
}

/* NCCL 2.30 (src/transport/net_ib/init.cc ncclIbGetPlaneIndex): a plane's
 * index in the list of distinct planes in device order, index 0 being the
 * undefined plane. */
static int plane_index(const struct transport_host *h, int plane) {
  int planes[16] = {-1}, n = 1;
  for (int d = 0; d < h->ndev && n < 15; d++) {
    int r, p, k = 0;
    diag_dev_rail_plane(&h->devs[d], &r, &p);
    while (k < n && planes[k] != p) k++;
    if (k == n) planes[n++] = p;
  }
  for (int k = 0; k < n; k++)
    if (planes[k] == plane) return k;
  return 0;
}

/* As ncclIbMakeVDeviceInternal (2.30): the members' common rail, else
 * undefined; a group of one keeps its plane, a larger group gets bit 14
 * (virtual) and one bit per member's plane index. */
static void fuse_rail_plane(struct diag_vdev *v, const struct transport_host *h) {
  int rail0, plane0;
  diag_dev_rail_plane(&h->devs[v->devs[0]], &rail0, &plane0);
  v->rail_id = rail0;
  v->plane_id = v->ndevs > 1 ? 1 << 14 : plane0;
  for (int i = 0; i < v->ndevs; i++) {
    int rail, plane;
    diag_dev_rail_plane(&h->devs[v->devs[i]], &rail, &plane);
    if (rail < 0 || rail != v->rail_id) v->rail_id = -1;
    if (v->ndevs > 1) v->plane_id |= 1 << plane_index(h, plane);
  }
}

void diag_rails_note(void) {
  static atomic_bool has_said;
  if (atomic_exchange(&has_said, true)) return;
  const struct transport_host *h = transport_host();
  char line[1024];
  size_t o = 0;
  int known = 0;
  for (int d = 0; d < h->ndev && o < sizeof(line); d++) {
    int rail, plane;
    diag_dev_rail_plane(&h->devs[d], &rail, &plane);
    known += rail >= 0 || plane >= 0;
    o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s rail %d plane %d", d ? ", " : "",
                          h->devs[d].name, rail, plane);
  }
  if (known)
    INFO(LOG_INIT | LOG_NET,
         "rails and planes NCCL reads (from NCCL_IB_HCA name:port:rail:plane; -1 = not given): %s",
         line);
  else if (h->ndev)
    INFO(LOG_INIT | LOG_NET,
         "no device has a rail or plane (-1 to NCCL): NCCL's rail- and plane-aware search and "
         "NCCL_NET_MERGE_POLICY=RAIL need them in NCCL_IB_HCA=name:port:rail:plane");
}

static void fill(struct diag_vdev *v, const struct transport_host *h, int ndevs, const int *devs) {
  memset(v, 0, sizeof(*v));
  v->ndevs = ndevs;
  v->ptr_support = ~0;
  size_t o = 0;
  for (int i = 0; i < ndevs; i++) {
    const struct transport_dev *d = &h->devs[devs[i]];
    v->devs[i] = devs[i];
    v->speed_mbps += d->speed_mbps;
    v->ptr_support &= transport_dev_ptr_support(d);
    int n = snprintf(v->name + o, sizeof(v->name) - o, "%s%s", i ? "+" : "", d->name);
    if (n > 0 && (size_t)n < sizeof(v->name) - o) o += (size_t)n;
  }
  fuse_rail_plane(v, h);
}

static void log_made(int dev, const struct diag_vdev *v) {
  const struct transport_dev *m = diag_vdev_member(v);
  INFO(LOG_INIT | LOG_NET,
       "made virtual device [%d] %s over %d ports (%d Mb/s together, rail %d, plane 0x%x): its "
       "connections take the ports in turn (%s first), each striping its messages over all the "
       "ports when the peer's device is fused too",
       dev, v->name, v->ndevs, v->speed_mbps, v->rail_id, (unsigned)v->plane_id, m->name);
  struct ev e;
  ev_begin(&e, "vdevice");
  ev_int(&e, "index", dev);
  ev_str(&e, "name", v->name);
  ev_int(&e, "ndevs", v->ndevs);
  ev_int(&e, "speed_mbps", v->speed_mbps);
  ev_end(&e);
}

ncclResult_t diag_make_vdevice(int *dev, int ndevs, const int *devs, int cap) {
  int ndev = 0;
  diag_devices(&ndev); /* init, once */
  const struct transport_host *h = transport_host();
  if (!devs || check_members(h, ndevs, devs, cap)) return ncclInvalidUsage;
  pthread_mutex_lock(&vdev_lock);
  int k = atomic_load(&nshown); /* below nvdevs only after diag_vdev_forget */
  if (!vdevs) vdevs = calloc((size_t)h->ndev, sizeof(*vdevs));
  if (!vdevs || k >= h->ndev) {
    pthread_mutex_unlock(&vdev_lock);
    WARN("makeVDevice: no room for virtual device %d (this host has %d devices, so at most %d "
         "virtual ones)",
         k, h->ndev, h->ndev);
    return ncclInvalidUsage;
  }
  bool is_again = k < atomic_load(&nvdevs) && same_members(&vdevs[k], ndevs, devs);
  if (!is_again) {
    fill(&vdevs[k], h, ndevs, devs);
    const struct transport_dev *members[DIAG_VDEV_MAX_DEVS];
    for (int i = 0; i < ndevs; i++) members[i] = &h->devs[devs[i]];
    transport_dev_fuse(members, ndevs);
    atomic_store(&nvdevs, k + 1);
  }
  *dev = h->ndev + k;
  atomic_store(&nshown, k + 1);
  pthread_mutex_unlock(&vdev_lock);
  if (!is_again) log_made(*dev, &vdevs[k]);
  return ncclSuccess;
}

void diag_vdev_forget(void) {
  pthread_mutex_lock(&vdev_lock);
  int n = atomic_exchange(&nshown, 0);
  pthread_mutex_unlock(&vdev_lock);
  if (n)
    INFO(LOG_INIT | LOG_NET,
         "last communicator finalized: devices() now reports the %d physical devices only, as "
         "NCCL counts them afresh when it loads this plugin again (the %d virtual devices "
         "stay usable and are made again on request)",
         transport_host()->ndev, n);
}

void diag_vdev_failover_note(int dev, const struct transport_dev *d) {
  static atomic_bool has_said;
  if (!d->is_ib || !transport_prefs()->is_port_failover) return;
  const struct diag_vdev *v = diag_vdev_get(dev);
  if ((v && v->ndevs > 1) || atomic_exchange(&has_said, true)) return;
  const struct transport_host *h = transport_host();
  int others = 0;
  for (int i = 0; i < h->ndev; i++) others += h->devs[i].is_ib && &h->devs[i] != d;
  if (others)
    INFO(LOG_INIT | LOG_NET,
         "NCCL_IB_RESILIENCY_PORT_FAILOVER=1 on device %s, a single port: a connection whose "
         "port fails moves to another of this host's %d other RDMA ports that is on the peer's "
         "subnet; the ports of a virtual device (NCCL_IB_MERGE_NICS=1) would be tried first",
         v ? v->name : d->name, others);
  else
    INFO(LOG_INIT | LOG_NET,
         "NCCL_IB_RESILIENCY_PORT_FAILOVER=1 has no effect on device %s: it is a single port and "
         "this host offers NCCL no other RDMA port, so its connections have nowhere to move",
         v ? v->name : d->name);
}
