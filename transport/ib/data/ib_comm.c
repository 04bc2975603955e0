/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA comm lifetime, memory registration and the request pool. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/events.h"
#include "common/knobs.h"
#include "common/log.h"
#include "transport/ib/data/ib_comm.h"
#include "transport/ib/setup/ib_setup.h"
#include "transport/ib/setup/ib_wire.h"
#include "transport/prof.h"
#include "transport/report.h"
#include "transport/run/port_state.h"
#include "transport/sock.h"

struct ib_req *ib_req_get(struct ib_comm *c) {
  int cap = c->is_send ? IB_SEND_REQS : IB_MAX_REQS;
  for (int i = 0; i < cap; i++) {
    struct ib_req *r = &c->reqs[i];
    if (r->base.obj == OBJ_REQ) continue;
    memset(r, 0, sizeof(*r));
    r->base.obj = OBJ_REQ;
    r->base.comm = &c->base;
    prof_req_new(&r->base); /* NCCL profiler handles armed for this call */
    c->inflight++;
    return r;
  }
  return NULL;
}

void ib_req_put(struct ib_comm *c, struct ib_req *r) {
  prof_req_done(&r->base); /* its NCCL profiler events end with it */
  r->base.obj = OBJ_DEAD;
  c->inflight--;
}

int ib_fail(struct ib_comm *c, int err, bool notify, const char *fmt, ...) {
  if (c->is_failed) return c->fail_err;
  char msg[3000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  ev_count(C_DATA_ERRORS, 1);
  struct ev e;
  ev_begin(&e, "connection_failed");
  ev_str(&e, "transport", "ib");
  ev_str(&e, "device", c->dev->td->name);
  ev_str(&e, "peer", c->base.peer.desc);
  ev_str(&e, "direction", c->is_send ? "send" : "recv");
  ev_str(&e, "error", msg);
  ev_end(&e);
  WARN("%s connection with %s on %s (RDMA): %s", c->is_send ? "send" : "receive", c->base.peer.desc,
       c->dev->label, msg);
  if (notify) ctrl_send_abort(&c->ctrl, 0, msg);
  for (int k = 0; k < (c->ndevs > 1 ? c->ndevs : 1); k++) { /* what the port's return tells */
    struct ib_dev *d = k ? c->devs[k] : c->dev;
    if (run_port_is_down(d->td->name, d->td->ib_port) ||
        __atomic_load_n(&d->port_down_said, __ATOMIC_ACQUIRE)) /* its event may come later */
      __atomic_fetch_add(&d->flap_failed, 1, __ATOMIC_RELAXED);
  }
  c->is_failed = true;
  c->fail_err = err;
  return err;
}

static ncclResult_t ib_reg_mr(struct transport_comm *xc, void *data, size_t size, int type,
                              void **mh) {
  struct ib_comm *c = (struct ib_comm *)xc;
  *mh = NULL;
  if (!ib_mr_type_ok(c->dev, type)) return ncclInternalError;
  return ib_mr_reg(c->dev, data, size, -1, 0, type == NCCL_PTR_CUDA, (struct ib_mh **)mh)
           ? ncclSystemError
           : ncclSuccess;
}

static ncclResult_t ib_reg_mr_dmabuf(struct transport_comm *xc, void *data, size_t size, int type,
                                     uint64_t offset, int fd, void **mh) {
  struct ib_comm *c = (struct ib_comm *)xc;
  *mh = NULL;
  if (!ib_mr_type_ok(c->dev, type)) return ncclInternalError;
  return ib_mr_reg(c->dev, data, size, fd, offset, type == NCCL_PTR_CUDA, (struct ib_mh **)mh)
           ? ncclSystemError
           : ncclSuccess;
}

static ncclResult_t ib_dereg_mr(struct transport_comm *xc, void *mhandle) {
  struct ib_comm *c = (struct ib_comm *)xc;
  struct ib_mh *mh = mhandle;
  if (!mh) return ncclSuccess;
  if (mh->obj != OBJ_MR || !ib_fo_owns(c, mh)) {
    WARN("device %s: deregMr of %p, which is not a registration of this device (already "
         "deregistered?)",
         c->dev->label, mhandle);
    return ncclInternalError;
  }
  return ib_mr_dereg(mh->dev, mh) ? ncclSystemError : ncclSuccess;
}

static ncclResult_t ib_close(struct transport_comm *xc) {
  struct ib_comm *c = (struct ib_comm *)xc;
  const struct verbs_ops *v = c->dev->v;
  ib_fo_close(c);
  for (int i = 0; i < c->nqps; i++) ib_qp_destroy(&c->qps[i]);
  ib_qp_destroy(&c->flush_qp);
  if (c->cq) v->destroy_cq(c->cq);
  struct ibv_mr *mrs[] = {c->fifo_mr, c->sizes_mr, c->shadow_mr, c->cr_mr, c->flush_mr};
  for (size_t i = 0; i < sizeof(mrs) / sizeof(mrs[0]); i++)
    if (mrs[i]) v->dereg_mr(mrs[i]);
  for (int k = 1; k < IB_MAX_STRIPE; k++) { /* striped: the other ports' ([0] went above) */
    ib_qp_destroy(&c->flush_qps[k]);
    if (c->flush_mrs[k]) v->dereg_mr(c->flush_mrs[k]);
    if (c->cqs[k]) v->destroy_cq(c->cqs[k]);
    if (c->cr_mrs[k]) v->dereg_mr(c->cr_mrs[k]);
    if (c->sizes_mrs[k]) v->dereg_mr(c->sizes_mrs[k]);
  }
  free(c->fifo);
  free(c->sizes_out);
  free(c->settings_diff);
  free(c->shadow);
  free(c->cr);
  free(c->flush_buf);
  free(c->verdict_diag);
  if (c->ctrl.fd >= 0) {
    (void)ctrl_flush(&c->ctrl); /* best effort: the notice behind a message cut short */
    close(c->ctrl.fd);
  }
  for (int i = 0; i < IB_SEND_REQS; i++) prof_req_done(&c->reqs[i].base); /* never completed */
  c->base.obj = OBJ_DEAD;
  free(c);
  return ncclSuccess;
}

static const struct transport_comm_ops ib_ops = {
  .name = "ib",
  .reg_mr = ib_reg_mr,
  .reg_mr_dmabuf = ib_reg_mr_dmabuf,
  .dereg_mr = ib_dereg_mr,
  .isend = ib_isend,
  .irecv = ib_irecv,
  .iflush = ib_iflush,
  .test = ib_test,
  .close = ib_close,
};

void ib_comm_adopt(struct ib_comm *c, struct ib_res *r) {
  c->cq = r->cq;
  c->nqps = r->nqps;
  memcpy(c->qps, r->qps, sizeof(c->qps));
  struct ibv_mr **to[] = {&c->fifo_mr, &c->sizes_mr, &c->cr_mr, &c->shadow_mr};
  struct ibv_mr *from[] = {r->fifo_mr, r->sizes_mr, r->cr_mr, r->shadow_mr};
  for (size_t i = 0; i < sizeof(to) / sizeof(to[0]); i++)
    if (from[i]) *to[i] = from[i];
  memset(r, 0, sizeof(*r));
}

void ib_res_release(struct ib_dev *dev, struct ib_res *r) {
  for (int i = 0; i < IB_MAX_QPS; i++) ib_qp_destroy(&r->qps[i]);
  struct ibv_mr *mrs[] = {r->fifo_mr, r->sizes_mr, r->cr_mr, r->shadow_mr};
  for (size_t i = 0; i < sizeof(mrs) / sizeof(mrs[0]); i++)
    if (dev && mrs[i]) dev->v->dereg_mr(mrs[i]);
  if (dev && r->cq) dev->v->destroy_cq(r->cq);
  memset(r, 0, sizeof(*r));
}

/* The setup's resources move into the comm. */
static void take_resources(struct ib_comm *c, struct ib_setup *s) {
  struct ib_res r = {s->cq, s->nqps, {{0}}, s->fifo_mr, NULL, s->cr_mr, s->shadow_mr};
  memcpy(r.qps, s->qps, sizeof(r.qps));
  ib_comm_adopt(c, &r);
  c->fifo = s->fifo;
  c->shadow = s->shadow;
  c->cr = s->cr;
  c->peer_cr_addr = s->peer_info.cr_addr;
  c->peer_cr_rkey = s->peer_info.cr_rkey;
  c->peer_fifo_addr = s->peer_info.fifo_addr;
  c->peer_fifo_rkey = s->peer_info.fifo_rkey;
  /* The sender's setting rules both sides: they must post alike. */
  c->is_split = s->is_send ? transport_prefs()->is_split_data_on_qps
                           : (s->peer_info.flags & IBREC_F_SPLIT) != 0;
  int64_t ar = transport_prefs()->ib_adaptive_routing;
  c->is_ar = ar == -2 ? s->dev->td->ll == TOPO_LL_IB : ar == 1;
  c->ar_threshold = (uint64_t)transport_prefs()->ib_ar_threshold;
  c->ndevs = s->ndevs;
  c->nrdevs = s->ndevs > 1 ? s->peer_info.nports : 1;
  c->stripe = c->ndevs > c->nrdevs ? c->ndevs : c->nrdevs;
  c->cts_w = c->stripe > 1 ? 2 : 1;
  for (int k = 0; k < IB_MAX_STRIPE; k++) {
    c->devs[k] = s->devs[k];
    c->members[k] = s->members[k];
    c->cqs[k] = s->cqs[k];
    c->cr_mrs[k] = s->cr_mrs[k];
    c->peer_cr_rkeys[k] = k < c->nrdevs && c->stripe > 1 ? s->peer_info.ports[k].cr_rkey : 0;
    s->cqs[k] = NULL;
    s->cr_mrs[k] = NULL;
  }
  c->gid_dev = s->dev;
  c->gid_index = s->mine.ib.gid_index;
  memcpy(c->gid, s->mine.ib.gid, 16);
  s->cq = NULL;
  s->nqps = 0;
  s->fifo = s->shadow = NULL;
  s->cr = NULL;
  s->fifo_mr = s->shadow_mr = s->cr_mr = NULL;
}

/* ", each message striped over mlx5_0 port 1 and mlx5_1 port 1 (the
 * peer's 2 ports)", or "" for a connection on one port. */
static void stripe_words(const struct ib_comm *c, char *striped, size_t cap) {
  striped[0] = 0;
  if (c->stripe < 2) return;
  size_t o = (size_t)snprintf(striped, cap, ", each message striped over");
  for (int k = 0; k < c->ndevs && o < cap; k++)
    o += (size_t)snprintf(striped + o, cap - o, "%s %s", k ? " and" : "", c->devs[k]->label);
  if (o < cap) snprintf(striped + o, cap - o, " (the peer's %d ports)", c->nrdevs);
}

int ib_comm_create(struct ib_setup *s, struct transport_setup *x, struct transport_comm **out) {
  struct ib_comm *c = calloc(1, sizeof(*c));
  if (!c) {
    WARN("connection with %s on %s: out of memory", x->peer.desc, s->dev->label);
    ib_setup_free(s);
    close(x->ctrl_fd);
    return ENOMEM;
  }
  c->base.obj = x->is_send ? OBJ_SEND : OBJ_RECV;
  c->base.ops = &ib_ops;
  c->base.dev = x->dev;
  c->base.peer = x->peer;
  c->peer_hello = x->peer_hello;
  c->base.max_recvs = IB_MAX_RECVS;
  c->is_send = x->is_send;
  c->dev = s->dev;
  c->fatal_born = __atomic_load_n(&c->dev->fatal_gen, __ATOMIC_ACQUIRE);
  for (int k = 1; k < s->ndevs; k++) /* striped: the other ports' */
    c->fatal_born_m[k] = c->fatal_seen_m[k] =
      __atomic_load_n(&s->devs[k]->fatal_gen, __ATOMIC_ACQUIRE);
  ctrl_init(&c->ctrl, x->ctrl_fd);
  take_resources(c, s);
  ib_setup_free(s);
  int err = 0;
  /* The sender detects a message larger than the receive (ib_send.c). */
  if (c->is_send) c->settings_diff = report_settings_diff(&x->mine, &x->peer_hello, &err);
  if (err) WARN("connection with %s on %s: out of memory", x->peer.desc, c->dev->label);
  if (err) {
    /* nothing more to set up */
  } else if (c->is_send) {
    c->sizes_out = calloc(IB_SLOTS * IB_MAX_RECVS, sizeof(uint32_t));
    if (!c->sizes_out) WARN("connection with %s on %s: out of memory", x->peer.desc, c->dev->label);
    for (int k = 0; c->sizes_out && k < c->ndevs; k++) /* written through each port */
      c->sizes_mrs[k] =
        ib_mr_plain(c->devs[k], c->sizes_out, IB_SLOTS * IB_MAX_RECVS * sizeof(uint32_t),
                    IBV_ACCESS_LOCAL_WRITE, "grouped sizes");
    c->sizes_mr = c->sizes_mrs[0];
    c->sizes_mrs[0] = NULL; /* the plain field owns it (a move to another port replaces it) */
    for (int k = 0; k < c->ndevs; k++)
      if (!(k ? c->sizes_mrs[k] : c->sizes_mr)) err = ENOMEM;
  } else if (ib_dev_wants_flush(c->dev)) {
    err = ib_flush_setup(c);
  }
  if (err) {
    ib_close(&c->base);
    return err;
  }
  ev_count(C_COMMS_IB, 1);
  struct ev e;
  ev_begin(&e, "connection");
  ev_str(&e, "transport", "ib");
  ev_str(&e, "direction", c->is_send ? "send" : "recv");
  ev_str(&e, "device", c->dev->td->name);
  ev_str(&e, "peer", x->peer.desc);
  ev_int(&e, "qps", c->nqps);
  ev_int(&e, "stripe", c->stripe);
  ev_end(&e);
  char same[160] = "";
  int port = ib_local_port_of(x->peer_hello.ib.gid);
  if (port >= 0) { /* both ends on this host: NCCL sends this node's own traffic over the network */
    const struct topo_host *h;
    topo_process(&h);
    char label[80];
    topo_port_label(h, port, label, sizeof(label));
    if (port == c->dev->td->port) snprintf(same, sizeof(same), "; both ends on this port");
    else
      snprintf(same, sizeof(same), "; both ends are NICs of this host (%s and %s)", c->dev->label,
               label);
  }
  char striped[160];
  stripe_words(c, striped, sizeof(striped));
  INFO(LOG_NET, "%s connection with %s on %s: RDMA, %d queue pair%s%s%s%s",
       c->is_send ? "send" : "receive", x->peer.desc, c->dev->label, c->nqps,
       c->nqps == 1 ? "" : "s", striped, c->has_flush ? ", flush queue pair" : "", same);
  *out = &c->base;
  return 0;
}
