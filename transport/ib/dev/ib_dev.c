/* SPDX-License-Identifier: Apache-2.0 */
/* Opening the RDMA ports the topology chose: one verbs context, protection
 * domain and async-event thread per port. A port that verbs cannot open or
 * sees otherwise than sysfs did is dropped with its reason. Each new
 * connection re-reads the port's chosen GID entry (ib_fill_hello). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/events.h"
#include "common/knobs.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/strutil.h"
#include "topo/sysfs.h"
#include "transport/ib/dev/ib.h"

static struct ib_state st;

const struct ib_state *ib_state(void) { return &st; }

/* A port that went down is said once until it is active again, by
 * whichever sees it first: the event thread, or a failed completion that
 * asked the port (its event may still be queued when the process exits). */
static void say_port_down(struct ib_dev *d, int port) {
  if (__atomic_exchange_n(&d->port_down_said, 1, __ATOMIC_ACQ_REL)) return;
  WARN("device %s port %d: port error (the link went down: connections on this port will fail "
       "with retry errors)",
       d->td->name, port);
}

static void *async_main(void *arg) {
  struct ib_dev *d = arg;
  struct ibv_async_event ev;
  while (d->v->get_async_event(d->ctx, &ev) == 0) {
    const char *what = d->v->event_type_str(ev.event_type);
    /* Each opened port has its own context, and every context hears the
     * events of all the device's ports: a port event is this port's only
     * when it names it (another context says the others). */
    bool is_port_ev =
      ev.event_type == IBV_EVENT_PORT_ERR || ev.event_type == IBV_EVENT_PORT_ACTIVE ||
      ev.event_type == IBV_EVENT_GID_CHANGE || ev.event_type == IBV_EVENT_LID_CHANGE ||
      ev.event_type == IBV_EVENT_PKEY_CHANGE || ev.event_type == IBV_EVENT_SM_CHANGE ||
      ev.event_type == IBV_EVENT_CLIENT_REREGISTER;
    if (is_port_ev && ev.element.port_num != d->td->ib_port) {
      d->v->ack_async_event(&ev);
      continue;
    }
    if (ev.event_type == IBV_EVENT_PORT_ERR || ev.event_type == IBV_EVENT_PORT_ACTIVE)
      __atomic_store_n(&d->port_down, ev.event_type == IBV_EVENT_PORT_ERR, __ATOMIC_RELEASE);
    if (ev.event_type == IBV_EVENT_PORT_ACTIVE)
      __atomic_store_n(&d->port_down_said, 0, __ATOMIC_RELEASE);
    switch (ev.event_type) {
    case IBV_EVENT_PORT_ERR:
      ib_hooks()->port_down(d);
      say_port_down(d, ev.element.port_num);
      break;
    case IBV_EVENT_PORT_ACTIVE: ib_hooks()->port_up(d, ev.element.port_num); break;
    case IBV_EVENT_GID_CHANGE:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_PKEY_CHANGE:
    case IBV_EVENT_SM_CHANGE:
    case IBV_EVENT_CLIENT_REREGISTER:
      WARN("device %s port %d: %s%s", d->td->name, ev.element.port_num, what,
           ev.event_type == IBV_EVENT_GID_CHANGE
             ? " (the GID table changed: new connections re-read their GID entry, existing ones "
               "keep the GID they started with)"
             : "");
      break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      if (ev.event_type != IBV_EVENT_COMM_EST)
        WARN("device %s qp 0x%x: %s", d->label, ev.element.qp ? ev.element.qp->qp_num : 0, what);
      break;
    case IBV_EVENT_DEVICE_FATAL: break; /* said by the fatal_note hook */
    case IBV_EVENT_CQ_ERR:
      WARN("device %s: completion queue error: %s (a completion queue overflowed)", d->label, what);
      break;
    default: WARN("device %s: %s", d->label, what);
    }
    ib_hooks()->fatal_note(d, &ev, what);
    struct ev e;
    ev_begin(&e, "async_event");
    ev_str(&e, "device", d->td->name);
    ev_str(&e, "event", what);
    ev_end(&e);
    d->v->ack_async_event(&ev);
  }
  return NULL;
}

/* GPU memory: peer memory (nvidia_peermem, nv_peer_mem) or dma-buf, as
 * NCCL detects them (ib_gdr.c). */
static int gpu_support(struct ib_dev *d) {
  char why[600];
  int s = ib_gdr_peermem(why, sizeof(why)) ? NCCL_PTR_CUDA : 0;
  if (ib_gdr_dmabuf(d->v, d->pd, d->td->name, why, sizeof(why))) s |= NCCL_PTR_DMABUF;
  return s;
}

/* The port's active MTU as verbs report it (the subnet manager's or the
 * netdev's; sysfs does not show it), and whether it requires a GRH
 * (IBV_QPF_GRH_REQUIRED, 1 << 0 in the port's flags, rdma-core 27+). */
static void port_path_attrs(struct ib_dev *d, const struct ibv_port_attr *pa) {
  const struct topo_dev *t = d->td;
  d->mtu = verbs_mtu_bytes(pa->active_mtu);
  if (!d->mtu) d->mtu = t->mtu;
  d->is_grh_required = pa->flags & 1;
  if (d->mtu != t->mtu)
    INFO(LOG_INIT, "device %s: active MTU %d (from the port; the topology assumed %d)", d->label,
         d->mtu, t->mtu);
}

void ib_open_failure(const char *dev, int err, char *why, size_t cap) {
  snprintf(why, cap, "cannot open %s: %s%s", dev, strerror(err),
           err == ENOENT || err == EPERM || err == EACCES
             ? " (in a container, pass its /dev/infiniband/uverbs* device, e.g. "
               "--device=/dev/infiniband, and allow it in the device cgroup)"
             : "");
}

/* 0, or an errno with why filled. */
static int open_port(struct ib_dev *d, struct ibv_device *vd, char *why, size_t cap) {
  const struct topo_dev *t = d->td;
  errno = 0;
  d->ctx = d->v->open_device(vd);
  if (!d->ctx) {
    int err = errno ? errno : ENODEV;
    ib_open_failure(t->name, err, why, cap);
    return err;
  }
  struct ibv_port_attr pa;
  int err = d->v->query_device(d->ctx, &d->attr);
  if (!err) err = verbs_query_port(d->v, d->ctx, (uint8_t)t->ib_port, &pa);
  if (err) {
    snprintf(why, cap, "cannot query %s: %s", d->label, strerror(err));
    return err;
  }
  port_path_attrs(d, &pa);
  if (pa.state != IBV_PORT_ACTIVE) {
    snprintf(why, cap, "%s is %s for verbs although sysfs said ACTIVE", d->label,
             pa.state == IBV_PORT_DOWN   ? "DOWN"
             : pa.state == IBV_PORT_INIT ? "INIT"
                                         : "not active");
    return ENETDOWN;
  }
  d->pd = d->v->alloc_pd(d->ctx);
  if (!d->pd) {
    int err2 = errno ? errno : ENOMEM;
    snprintf(why, cap, "cannot allocate a protection domain on %s: %s", t->name, strerror(err2));
    return err2;
  }
  pthread_mutex_init(&d->lock, NULL);
  d->ptr_support = NCCL_PTR_HOST | gpu_support(d);
  d->is_ro = ib_mr_relaxed_ordering(d->v);
  ib_ece_probe(d);
  if (pthread_create(&d->async_tid, NULL, async_main, d) == 0) {
    pthread_detach(d->async_tid);
    d->is_async_started = true;
  }
  return 0;
}

static void close_port(struct ib_dev *d) {
  if (d->pd) d->v->dealloc_pd(d->pd);
  if (d->ctx && !d->is_async_started) d->v->close_device(d->ctx);
  d->pd = NULL;
}

/* Ports of the same device after the first are named name:port, so every
 * NCCL device name stays unique. */
static void dev_name(const struct topo_choice *c, int i, char *buf, size_t cap) {
  const struct topo_dev *t = &c->dev[i];
  int shared = 0;
  for (int j = 0; j < c->ndev; j++) shared |= j != i && !strcmp(c->dev[j].name, t->name);
  if (shared) snprintf(buf, cap, "%s:%d", t->name, t->ib_port);
  else snprintf(buf, cap, "%s", t->name);
}

static uint64_t parse_guid(const char *s) {
  uint64_t v = 0;
  for (; s && *s; s++) {
    int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
    if (d >= 0) v = (v << 4) | (uint64_t)d;
  }
  return v;
}

static void add_xp_dev(struct transport_host *host, const struct topo_choice *c, int i,
                       struct ib_dev *d) {
  const struct topo_dev *t = &c->dev[i];
  struct transport_dev *x = transport_host_add_dev(host, t->pci_path);
  if (!x) return; /* room was reserved for every chosen port */
  dev_name(c, i, x->name, sizeof(x->name));
  x->is_ib = true;
  x->ib = d;
  /* NCCL groups devices with one GUID as ports of one NIC: a virtual
   * function is not a port of its physical function. */
  const struct topo_host *h;
  topo_process(&h);
  x->guid = parse_guid(t->is_vf ? h->hcas[t->hca].node_guid : t->guid);
  if (!x->guid) x->guid = (uint64_t)x->index;
  x->speed_mbps = t->speed_mbps > 0 ? t->speed_mbps : 10000;
  x->port = t->ib_port + t->real_port;
  /* Control connections (and a fall back to TCP) use the socket interfaces. */
  if (host->choice.n) {
    const struct netif *n = &host->ifs.ifs[host->choice.idx[0]];
    x->netif = host->choice.idx[0];
    scopy(x->ifname, sizeof(x->ifname), n->name);
    x->addr = n->addr[host->choice.primary[0]];
  }
}

/* "4 RDMA ports are chosen (mlx5_2 port 1, mlx5_3 port 1, ...)" */
static void chosen_list(const struct topo_choice *c, char *buf, size_t cap) {
  size_t o =
    (size_t)snprintf(buf, cap, "%d RDMA port%s chosen (", c->ndev, c->ndev == 1 ? " is" : "s are");
  for (int i = 0; i < c->ndev && i < 4; i++)
    o = strbuf_cat(buf, cap, o, "%s%s port %d", i ? ", " : "", c->dev[i].name, c->dev[i].ib_port);
  strbuf_cat(buf, cap, o, "%s)", c->ndev > 4 ? ", ..." : "");
}

/* The whole host falls back: one WARN with the cause, the consequence and
 * the fix (the cause says what to do about it). */
static void warn_host_fallback(const struct topo_choice *c, const char *cause) {
  char chosen[256];
  chosen_list(c, chosen, sizeof(chosen));
  snprintf(st.why_none, sizeof(st.why_none), "%s but %s", chosen, cause);
  WARN("%s: every connection of this process runs over TCP, at TCP speed. To use TCP knowingly, "
       "set NCCL_IB_DISABLE=1",
       st.why_none);
  st.has_warned_none = true;
}

/* 0, or an errno (logged): no RDMA device then. */
static int load_verbs(const struct topo_choice *c, struct ibv_device ***list, int *n) {
  char why[600];
  int err = verbs_load(&st.v, why, sizeof(why));
  if (err) {
    warn_host_fallback(c, why);
    return err;
  }
  st.is_loaded = true;
  verbs_fork_init(&st.v);
  errno = 0;
  *list = st.v.get_device_list(n);
  if (!*list || *n == 0) {
    err = errno;
    snprintf(why, sizeof(why),
             "%s lists no RDMA device (%s): this kernel has no RDMA support or no driver is "
             "loaded, although sysfs shows the devices",
             st.v.lib, err ? strerror(err) : "an empty list");
    warn_host_fallback(c, why);
    if (*list) st.v.free_device_list(*list);
    return ENODEV;
  }
  return 0;
}

/* Ports that could not be opened, for one line when none could. */
struct open_failures {
  int n, same_err; /* same_err: the errno they all share, 0 when they differ */
  char labels[256], first[600];
};

static void open_failed(struct open_failures *f, const struct ib_dev *d, int err, const char *why) {
  if (!f->n) snprintf(f->first, sizeof(f->first), "%s", why), f->same_err = err;
  else if (f->same_err != err) f->same_err = 0;
  size_t o = strlen(f->labels);
  strbuf_cat(f->labels, sizeof(f->labels), o, "%s%s", f->n++ ? ", " : "", d->td->name);
}

/* Opens port i of the choice; 0, or an errno with why filled. */
static int open_chosen(struct ib_dev *d, const struct topo_choice *c, int i,
                       struct ibv_device **list, int n, char *why, size_t cap) {
  memset(d, 0, sizeof(*d));
  d->td = &c->dev[i];
  d->v = &st.v;
  snprintf(d->label, sizeof(d->label), "%s port %d", d->td->name, d->td->ib_port);
  int k;
  for (k = 0; k < n && strcmp(st.v.get_device_name(list[k]), d->td->name); k++) {
  }
  if (k == n) {
    snprintf(why, cap, "%s is in sysfs but not in %s's device list", d->td->name, st.v.lib);
    return ENODEV;
  }
  return open_port(d, list[k], why, cap);
}

static int open_all(struct transport_host *host, const struct topo_choice *c,
                    struct ibv_device **list, int n, int cap) {
  struct open_failures f = {0};
  char whys[TOPO_MAX_DEVS][600];
  int failed[TOPO_MAX_DEVS], nfailed = 0;
  for (int i = 0; i < c->ndev && st.ndev < cap; i++) {
    struct ib_dev *d = &st.devs[st.ndev];
    int err = open_chosen(d, c, i, list, n, whys[nfailed], sizeof(whys[0]));
    if (!err) {
      st.ndev++;
      add_xp_dev(host, c, i, d);
      continue;
    }
    open_failed(&f, d, err, whys[nfailed]);
    close_port(d);
    failed[nfailed++] = i;
  }
  if (!st.ndev && f.n) { /* the whole host: one line */
    char cause[1000];
    if (f.n > 1 && f.same_err)
      snprintf(cause, sizeof(cause), "none can be opened here: %s (%s alike)", f.first, f.labels);
    else snprintf(cause, sizeof(cause), "none can be opened here: %s", f.first);
    warn_host_fallback(c, cause);
    return 0;
  }
  for (int j = 0; j < nfailed; j++)
    WARN("RDMA device %s port %d is not used: %s", c->dev[failed[j]].name,
         c->dev[failed[j]].ib_port, whys[j]);
  return st.ndev;
}

int ib_host_init(struct transport_host *host) {
  const struct topo_choice *c = topo_process(NULL);
  if (c->ndev == 0) {
    snprintf(st.why_none, sizeof(st.why_none), "%s", c->why_none);
    return 0;
  }
  struct ibv_device **list = NULL;
  int n = 0;
  if (load_verbs(c, &list, &n)) return 0;
  int cap = c->ndev < TRANSPORT_MAX_DEVS ? c->ndev : TRANSPORT_MAX_DEVS;
  st.devs = calloc((size_t)cap, sizeof(*st.devs));
  if (!st.devs || transport_host_reserve(host, cap)) {
    warn_host_fallback(c, "memory ran out");
    st.v.free_device_list(list);
    free(st.devs);
    st.devs = NULL;
    return 0;
  }
  open_all(host, c, list, n, cap);
  st.v.free_device_list(list);
  ib_gdr_report(&st);
  return st.ndev;
}

int ib_ptr_support(const struct transport_dev *x) {
  return x->is_ib && x->ib ? ((const struct ib_dev *)x->ib)->ptr_support : NCCL_PTR_HOST;
}

/* The subnet of the interface address a GID carries, from the interfaces. */
static void gid_subnet(const char *netdev, const uint8_t *gid, char *buf, size_t cap) {
  static const uint8_t v4pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  bool is_v4 = !memcmp(gid, v4pfx, 12);
  struct ifaddrs *list = NULL;
  buf[0] = 0;
  if (!netdev || getifaddrs(&list)) return;
  for (struct ifaddrs *i = list; i; i = i->ifa_next) {
    struct ipaddr a;
    if (!i->ifa_addr || strcmp(i->ifa_name, netdev) ||
        ipaddr_from_sockaddr(&a, i->ifa_addr, i->ifa_netmask))
      continue;
    if (is_v4 ? a.family == AF_INET && !memcmp(a.bytes, gid + 12, 4)
              : a.family == AF_INET6 && !memcmp(a.bytes, gid, 16)) {
      ipaddr_subnet_str(&a, buf, cap);
      break;
    }
  }
  freeifaddrs(list);
}

/* Re-reads the chosen RoCE GID entry. A changed value (the address was
 * replaced) is taken, said once; an emptied entry is left to RTR, which
 * then fails with ENODATA and says so (ib_diag.c). */
bool ib_dev_port_is_up(struct ib_dev *d) {
  if (__atomic_load_n(&d->port_down, __ATOMIC_ACQUIRE)) return false;
  struct ibv_port_attr pa;
  if (verbs_query_port(d->v, d->ctx, (uint8_t)d->td->ib_port, &pa) != 0) return false;
  return pa.state == IBV_PORT_ACTIVE || pa.state == IBV_PORT_ACTIVE_DEFER;
}

bool ib_dev_check_port(struct ib_dev *d) {
  if (__atomic_load_n(&d->port_down, __ATOMIC_ACQUIRE)) return true;
  struct ibv_port_attr pa;
  if (verbs_query_port(d->v, d->ctx, (uint8_t)d->td->ib_port, &pa) != 0) return false;
  /* Not stored in port_down: only the event thread orders ERR and ACTIVE. */
  if (pa.state == IBV_PORT_ACTIVE || pa.state == IBV_PORT_ACTIVE_DEFER) return false;
  say_port_down(d, d->td->ib_port);
  return true;
}

void ib_dev_refresh_gid(struct ib_dev *d) {
  const struct topo_dev *t = d->td;
  static const uint8_t zero[16];
  union ibv_gid g;
  if (t->ll == TOPO_LL_IB || !d->ctx ||
      d->v->query_gid(d->ctx, (uint8_t)t->ib_port, t->gid_index, &g) || !memcmp(g.raw, zero, 16))
    return;
  pthread_mutex_lock(&d->lock);
  const uint8_t *before = d->has_gid_now ? d->gid_now : t->gid;
  if (memcmp(before, g.raw, 16)) {
    char was[INET6_ADDRSTRLEN], now[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, before, was, sizeof(was));
    inet_ntop(AF_INET6, g.raw, now, sizeof(now));
    d->has_gid_now = memcmp(g.raw, t->gid, 16) != 0;
    memcpy(d->gid_now, g.raw, 16);
    gid_subnet(t->netdev, g.raw, d->subnet_now, sizeof(d->subnet_now));
    WARN("device %s: GID %d changed from %s to %s (the address on %s changed): new connections "
         "use %s; connections made before keep %s and fail if it is gone",
         d->label, t->gid_index, was, now, t->netdev ? t->netdev : "its netdev", now, was);
  }
  pthread_mutex_unlock(&d->lock);
}

const uint8_t *ib_dev_gid(const struct ib_dev *d, char *subnet, size_t cap) {
  const struct topo_dev *t = d->td;
  if (d->has_gid_now) {
    snprintf(subnet, cap, "%s", d->subnet_now);
    return d->gid_now;
  }
  subnet[0] = 0;
  if (t->subnet.family) ipaddr_subnet_str(&t->subnet, subnet, cap);
  return t->gid;
}

void ib_dev_fuse(const struct transport_dev *const *devs, int n) {
  if (n > 8) n = 8;
  for (int i = 0; i < n; i++) {
    struct ib_dev *d = devs[i]->ib;
    if (!d) continue;
    d->nmembers = 0;
    for (int j = 0; j < n; j++)
      if (devs[j]->ib) d->members[d->nmembers++] = devs[j]->ib;
  }
}
