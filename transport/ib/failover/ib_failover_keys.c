/* SPDX-License-Identifier: Apache-2.0 */
/* After a port fail-over (ib_failover.c): NCCL's buffers were registered on
 * the port the connection ran on; the new port needs its own keys. Each
 * request registers its buffers there when it is posted (the device's
 * registration cache makes a buffer NCCL reuses cost one registration) and
 * releases them when it completes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "transport/ib/data/ib_comm.h"

/* r's registration k of [addr, addr + size) on the comm's port: 0, or the
 * comm's errno. */
int ib_fo_key(struct ib_comm *c, struct ib_req *r, int k, uintptr_t addr, size_t size) {
  struct ib_mh **alt = &r->alt[k];
  if (*alt && (*alt)->dev != c->dev) {
    (void)ib_mr_dereg((*alt)->dev, *alt);
    *alt = NULL;
  }
  if (*alt) return 0;
  int err = ib_mr_reg(c->dev, (void *)addr, size, -1, 0, r->is_gpu, alt);
  if (err)
    return ib_fail(c, err, true,
                   "message %u: registering its buffer on %s, the port the connection moved to, "
                   "failed: %s",
                   r->seq, c->dev->label, strerror(err));
  return 0;
}

int ib_fo_send_keys(struct ib_comm *c, struct ib_slot *sl) {
  for (int i = 0; i < sl->n; i++) {
    struct ib_req *r = sl->reqs[i];
    if (!r || !r->sizes[0]) continue;
    int err = ib_fo_key(c, r, 0, (uintptr_t)sl->bufs[i], (size_t)r->sizes[0]);
    if (err) return err;
    sl->lkeys[i] = r->alt[0]->mr->lkey;
  }
  return 0;
}

int ib_fo_recv_keys(struct ib_comm *c, struct ib_req *r, int slot, int n) {
  if (!c->fo.is_moved) return 0;
  for (int i = 0; i < n && i < IB_MAX_RECVS; i++) {
    struct ib_cts *e = ib_fifo_at(c, slot, i);
    if (!e->size) continue; /* nothing is written there */
    int err = ib_fo_key(c, r, i, (uintptr_t)e->addr, e->size);
    if (err) return err;
    e->rkey = r->alt[i]->mr->rkey;
  }
  return 0;
}

void ib_fo_unstripe(struct ib_comm *c, struct ib_dev *to) {
  if (c->stripe < 2) return;
  /* the other ports' completion queues go with their queue pairs (gone);
   * their registrations of the control memory stay until close */
  for (int k = 1; k < IB_MAX_STRIPE; k++) {
    ib_qp_destroy(&c->flush_qps[k]); /* made again for the new port's only (ib_flush_setup) */
    if (c->flush_mrs[k]) c->dev->v->dereg_mr(c->flush_mrs[k]);
    c->flush_mrs[k] = NULL;
    if (c->cqs[k]) c->dev->v->destroy_cq(c->cqs[k]);
    c->cqs[k] = NULL;
  }
  c->cqs[0] = c->cq;
  c->stripe = c->ndevs = c->nrdevs = 1; /* the entries keep their width (c->cts_w) */
  c->fo.failed = NULL;
  c->devs[0] = to;
  for (int m = 0; m < to->nmembers; m++)
    if (to->members[m] == to) c->members[0] = m;
}

void ib_fo_req_done(struct ib_comm *c, struct ib_req *r) {
  (void)c;
  for (int i = 0; i < IB_MAX_RECVS; i++)
    if (r->alt[i]) {
      (void)ib_mr_dereg(r->alt[i]->dev, r->alt[i]);
      r->alt[i] = NULL;
    }
}

bool ib_fo_owns(const struct ib_comm *c, const struct ib_mh *mh) {
  if (mh->dev == c->dev) return true;
  for (int i = 0; i < c->fo.nused; i++)
    if (mh->dev == c->fo.used[i]) return true;
  return false;
}

void ib_fo_close(struct ib_comm *c) {
  struct ib_fo *f = &c->fo;
  ib_res_release(f->to, &f->standby);
  for (int i = 0; i < IB_SEND_REQS; i++)
    if (c->reqs[i].base.obj == OBJ_REQ) ib_fo_req_done(c, &c->reqs[i]);
}
