/* SPDX-License-Identifier: Apache-2.0 */
/* Fatal asynchronous events, as NCCL handles them since 2.23
 * (NCCL_IB_RETURN_ASYNC_EVENTS, default 1): a device-fatal event fails
 * every connection on the device, a fatal completion queue or queue pair
 * event the connection that owns it, at that connection's next call, with
 * a WARN naming the device and port; the peer hears why on the control
 * connection. The device's event thread records the event and bumps a
 * generation; a connection compares that generation on every call (one
 * atomic load) and reads the records only when it moved. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "transport/ib/data/ib_comm.h"
#include "transport/prefs.h"
#include "transport/sock.h"

/* A queue pair or completion queue error usually has a cause the peer
 * diagnoses better from its own failed completion (a wrong rkey, a
 * registration): its reason gets this long to arrive before the event
 * itself is the failure. */
#define QP_EVENT_GRACE_NS (250 * 1000000LL)

static void record(struct ib_dev *d, const struct ibv_async_event *ev, const char *what) {
  struct ib_fatal_rec r = {0};
  switch (ev->event_type) {
  case IBV_EVENT_DEVICE_FATAL: r.kind = IB_FATAL_DEVICE; break;
  case IBV_EVENT_CQ_ERR:
    r.kind = IB_FATAL_CQ;
    r.obj = ev->element.cq;
    break;
  case IBV_EVENT_QP_FATAL:
  case IBV_EVENT_QP_REQ_ERR:
  case IBV_EVENT_QP_ACCESS_ERR:
    r.kind = IB_FATAL_QP;
    r.obj = ev->element.qp;
    r.qpn = ev->element.qp ? ev->element.qp->qp_num : 0;
    break;
  default: return;
  }
  if (!transport_prefs()->is_async_events_returned) return;
  snprintf(r.what, sizeof(r.what), "%s", what);
  r.at_ns = now_ns();
  pthread_mutex_lock(&d->lock);
  if (d->nfatal < IB_MAX_FATALS) {
    r.gen = d->fatal_gen + 1;
    d->fatals[d->nfatal++] = r;
    __atomic_store_n(&d->fatal_gen, r.gen, __ATOMIC_RELEASE);
  } else if (r.kind == IB_FATAL_DEVICE) { /* the one that must not be lost */
    r.gen = d->fatal_gen + 1;
    d->fatals[IB_MAX_FATALS - 1] = r;
    __atomic_store_n(&d->fatal_gen, r.gen, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&d->lock);
}

/* Recorded first, said after: a caller that reads the WARN finds the
 * connections failing already. */
static void say(const struct ib_dev *d, const struct ibv_async_event *ev, const char *what) {
  if (ev->event_type != IBV_EVENT_DEVICE_FATAL) return;
  WARN("device %s: %s (a fatal device error): the NIC or its driver stopped working, so every "
       "connection on it fails. Look for the cause in the kernel log (dmesg: mlx5_core health "
       "or PCIe AER errors), then restart the job without this node or after resetting the NIC",
       d->label, what);
}

void ib_fatal_note(struct ib_dev *d, const struct ibv_async_event *ev, const char *what) {
  record(d, ev, what);
  say(d, ev, what);
}

/* The record that affects c, if any: a device event always; a CQ or QP
 * event only when it came after c was made (a later object may reuse the
 * address). */
static bool affects(const struct ib_comm *c, const struct ib_fatal_rec *r, unsigned born,
                    const struct ibv_cq *cq) {
  if (r->kind == IB_FATAL_DEVICE) return true;
  if (r->gen <= born) return false;
  if (r->kind == IB_FATAL_CQ) return r->obj == cq;
  for (int i = 0; i < c->nqps; i++)
    if (r->obj == c->qps[i].qp) return true;
  for (int k = 1; c->has_flush && k < c->ndevs; k++)
    if (r->obj == c->flush_qps[k].qp) return true;
  return c->has_flush && r->obj == c->flush_qp.qp;
}

/* Port k of the connection (0: c->dev; striped, devs[k]) at generation gen. */
static int check_port(struct ib_comm *c, int k, unsigned gen) {
  struct ib_dev *d = k ? c->devs[k] : c->dev;
  unsigned *seen = k ? &c->fatal_seen_m[k] : &c->fatal_seen;
  unsigned born = k ? c->fatal_born_m[k] : c->fatal_born;
  *seen = gen;
  struct ib_fatal_rec hit;
  bool found = false;
  pthread_mutex_lock(&d->lock);
  for (int i = 0; i < d->nfatal && !found; i++)
    if (affects(c, &d->fatals[i], born, k ? c->cqs[k] : c->cq)) hit = d->fatals[i], found = true;
  pthread_mutex_unlock(&d->lock);
  if (!found) return 0;
  if (hit.kind != IB_FATAL_DEVICE && now_ns() - hit.at_ns < QP_EVENT_GRACE_NS) {
    *seen = gen - 1; /* look again at the next call */
    return ib_check_peer(c, now_ns());
  }
  const struct topo_dev *t = d->td;
  char host[64] = "this node";
  gethostname(host, sizeof(host) - 1);
  if (hit.kind == IB_FATAL_DEVICE)
    return ib_fail(c, EIO, true,
                   "device %s port %d on %s reported a fatal error (%s): the NIC or its driver "
                   "stopped working; check the kernel log there (dmesg) and restart the job "
                   "without that node or after resetting the NIC",
                   t->name, t->ib_port, host, hit.what);
  if (hit.kind == IB_FATAL_CQ)
    return ib_fail(c, EIO, true,
                   "the completion queue of this connection on device %s port %d failed (%s): "
                   "completions were lost, so the connection cannot continue",
                   t->name, t->ib_port, hit.what);
  return ib_fail(c, EIO, true,
                 "qp 0x%x of this connection on device %s port %d reported %s: the queue pair is "
                 "in error and the connection cannot continue",
                 hit.qpn, t->name, t->ib_port, hit.what);
}

int ib_fatal_check(struct ib_comm *c, unsigned gen) {
  if (c->is_failed) return c->fail_err;
  int err = gen != c->fatal_seen ? check_port(c, 0, gen) : 0;
  for (int k = 1; !err && k < c->ndevs; k++) {
    unsigned g = __atomic_load_n(&c->devs[k]->fatal_gen, __ATOMIC_ACQUIRE);
    if (g != c->fatal_seen_m[k]) err = check_port(c, k, g);
  }
  return err;
}
