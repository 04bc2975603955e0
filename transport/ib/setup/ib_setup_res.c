/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA resources of one connection: a completion queue, the RC queue
 * pairs, and the memory the peer writes into (the sender's clear-to-send
 * FIFO; the receiver's completion records) or reads from (the receiver's
 * outgoing CTS entries). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/knobs.h"
#include "transport/ib/setup/ib_setup.h"

#define CQ_MIN_DEPTH 1024
/* room for striped entries (a key per port before each entry, ib.h) */
#define FIFO_BYTES (2 * sizeof(struct ib_cts) * IB_SLOTS * IB_MAX_RECVS)
#define CR_BYTES (sizeof(uint32_t) * IB_SLOTS * IB_MAX_RECVS)

static void *zalloc_pages(size_t n) {
  void *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
  if (p) memset(p, 0, n);
  return p;
}

static int cap_wr(const struct ib_dev *d, int want) {
  return d->attr.max_qp_wr > 0 && want > d->attr.max_qp_wr ? d->attr.max_qp_wr : want;
}

static int make_memory(struct ib_setup *s, char *why, size_t cap) {
  struct ib_dev *d = s->dev;
  if (s->is_send) {
    s->fifo = zalloc_pages(FIFO_BYTES);
    if (s->fifo)
      s->fifo_mr = ib_mr_plain(d, s->fifo, FIFO_BYTES,
                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, "the CTS FIFO");
    if (!s->fifo_mr) goto fail;
  } else {
    s->shadow = zalloc_pages(FIFO_BYTES);
    s->cr = zalloc_pages(CR_BYTES);
    if (s->shadow)
      s->shadow_mr = ib_mr_plain(d, s->shadow, FIFO_BYTES, IBV_ACCESS_LOCAL_WRITE, "CTS entries");
    /* the sender writes them through each of its queue pairs' ports */
    for (int k = 0; s->cr && k < s->ndevs; k++) {
      s->cr_mrs[k] =
        ib_mr_plain(s->devs[k], s->cr, CR_BYTES, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                    "completion records");
      if (!s->cr_mrs[k]) goto fail;
    }
    s->cr_mr = s->cr_mrs[0];
    if (!s->shadow_mr || !s->cr_mr) goto fail;
  }
  return 0;
fail:
  snprintf(why, cap, "%s: cannot register the connection's control memory (see the warning above)",
           d->label);
  return ENOMEM;
}

/* Every work request of every queue pair may complete at once (an error
 * flushes the unsignaled ones too): a CQ that overruns stops and takes its
 * queue pairs to the error state, so it holds them all, as NCCL sizes its
 * CQ by the queue pairs of a connection. */
static int cq_depth(const struct ib_dev *d, int nqps, int send_wr, int recv_wr) {
  long want = (long)nqps * (send_wr + recv_wr);
  if (want < CQ_MIN_DEPTH) want = CQ_MIN_DEPTH;
  if (d->attr.max_cqe > 0 && want > d->attr.max_cqe) want = d->attr.max_cqe;
  return (int)want;
}

int ib_res_create(struct ib_setup *s, int nqps, char *why, size_t cap) {
  struct ib_dev *d = s->dev;
  int send_wr = cap_wr(d, s->is_send ? IB_MAX_REQS * (IB_MAX_RECVS + 2) : 2 * IB_SLOTS);
  int recv_wr = cap_wr(d, s->is_send ? 1 : 2 * IB_MAX_REQS);
  for (int k = 0; k < s->ndevs; k++) { /* one per port: a CQ belongs to one device */
    struct ib_dev *dk = s->devs[k];
    s->cqs[k] = dk->v->create_cq(dk->ctx, cq_depth(dk, nqps, send_wr, recv_wr), NULL, NULL, 0);
    if (!s->cqs[k]) {
      int err = errno ? errno : ENOMEM;
      snprintf(why, cap, "%s: creating a completion queue failed: %s%s", dk->label, strerror(err),
               err == ENOMEM ? " (raise the locked-memory limit: ulimit -l unlimited)" : "");
      return err;
    }
  }
  s->cq = s->cqs[0];
  int err = make_memory(s, why, cap);
  if (err) return err;
  int access = IBV_ACCESS_REMOTE_WRITE | (s->is_send ? 0 : IBV_ACCESS_REMOTE_READ);
  for (int i = 0; i < nqps; i++) {
    char detail[512];
    int k = i % s->ndevs; /* striped: queue pair i on this side's port i % ndevs */
    err = ib_qp_create(&s->qps[i], s->devs[k], s->cqs[k], send_wr, recv_wr, s->peer_desc, detail,
                       sizeof(detail));
    if (!err) s->nqps = i + 1;
    if (!err) err = ib_qp_init(&s->qps[i], access, detail, sizeof(detail));
    if (err) {
      snprintf(why, cap, "queue pair %d of %d: %s", i, nqps, detail);
      return err;
    }
  }
  return 0;
}

/* The sender decides SL and traffic class (NCCL's rule): the knob, else
 * the communicator's traffic class, else 0. */
void ib_choose_sl_tc(int traffic_class, int *sl, int *tc) {
  int ksl = (int)transport_prefs()->ib_sl, ktc = (int)transport_prefs()->ib_tc;
  int cls = traffic_class == NCCL_NET_TRAFFIC_CLASS_UNDEF ? -1 : traffic_class;
  *sl = ksl >= 0 ? ksl : cls >= 0 ? cls & 0xf : 0;
  *tc = ktc >= 0 ? ktc : cls >= 0 ? cls & 0xff : 0;
}

void ib_res_free(struct ib_setup *s) {
  const struct verbs_ops *v = s->dev->v;
  for (int i = 0; i < s->nqps; i++) ib_qp_destroy(&s->qps[i]);
  s->nqps = 0;
  for (int k = 0; k < IB_MAX_STRIPE; k++) {
    if (s->cqs[k]) v->destroy_cq(s->cqs[k]);
    if (s->cr_mrs[k]) v->dereg_mr(s->cr_mrs[k]);
    s->cqs[k] = NULL;
    s->cr_mrs[k] = NULL;
  }
  s->cq = NULL;
  s->cr_mr = NULL;
  struct ibv_mr **mrs[] = {&s->fifo_mr, &s->shadow_mr};
  for (int i = 0; i < 2; i++)
    if (*mrs[i]) v->dereg_mr(*mrs[i]), *mrs[i] = NULL;
  free(s->fifo);
  free(s->shadow);
  free(s->cr);
  s->fifo = s->shadow = NULL;
  s->cr = NULL;
}
