/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: a QP's queue sizes, checked and rounded as rdma-core's mlx5
 * provider does at create time (providers/mlx5/verbs.c, mlx5_calc_sq_size
 * and mlx5_calc_rq_size), so an application sees the caps a ConnectX
 * would give it and is held to them.
 *
 * Send queue: a WQE holds the RC control part (SV_SQ_OVERHEAD, sized for
 * the largest opcode a plain ibv_create_qp allows, memory windows
 * included), then max_send_sge data segments of 16 bytes, or the inline
 * data behind a 4-byte header, whichever is larger, in 64-byte blocks. The
 * queue is that WQE size times max_send_wr, rounded up to a power of two,
 * so max_send_wr and max_inline_data come back at least as large as asked;
 * max_send_sge comes back as asked.
 *
 * Receive queue: a WQE is max_recv_sge segments rounded up to a power of
 * two, the queue max_recv_wr rounded up to a power of two and at least one
 * 64-byte block; both come back rounded.
 *
 * A request above ibv_query_device's limits (max_qp_wr, max_sge) or a WQE
 * larger than the device takes is EINVAL. */
#include "sv.h"

#include <errno.h>
#include <string.h>

static uint64_t pow2_up(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

static uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

static int size_sq(struct ibv_qp_cap *c) {
  if (!c->max_send_wr) return 0;
  uint32_t size = SV_SQ_OVERHEAD + c->max_send_sge * 16u, inl = 0;
  if (c->max_inline_data) {
    if (c->max_inline_data > SV_SQ_DESC_MAX) return EINVAL;
    inl = SV_SQ_OVERHEAD + align_up(4 + c->max_inline_data, 16);
  }
  uint32_t tot = size > inl ? size : inl;
  if (tot > SV_SQ_DESC_MAX) return EINVAL;
  uint32_t wqe = align_up(tot, SV_SEND_BB);
  uint64_t wq = pow2_up((uint64_t)c->max_send_wr * wqe);
  if (wq / SV_SEND_BB > SV_SEND_WQEBB_MAX) return EINVAL;
  /* mlx5's arithmetic goes below zero for a WQE of the overhead alone (no
   * SGE, no inline): that is no inline data. */
  c->max_inline_data = wqe >= SV_SQ_OVERHEAD + 4 ? wqe - SV_SQ_OVERHEAD - 4 : 0;
  c->max_send_wr = (uint32_t)(wq / wqe);
  return 0;
}

static int size_rq(struct ibv_qp_cap *c) {
  if (!c->max_recv_wr) {
    c->max_recv_sge = 0; /* no receive queue: mlx5 reports no SGEs */
    return 0;
  }
  uint32_t wqe = (uint32_t)pow2_up(16u * (c->max_recv_sge ? c->max_recv_sge : 1));
  if (wqe > SV_RQ_DESC_MAX) return EINVAL;
  uint64_t wq = pow2_up(c->max_recv_wr) * wqe;
  if (wq < SV_SEND_BB) wq = SV_SEND_BB;
  c->max_recv_wr = (uint32_t)(wq / wqe);
  c->max_recv_sge = wqe / 16;
  return 0;
}

int sv_caps_size(struct ibv_qp_cap *c) {
  if (c->max_send_wr > SV_MAX_WR || c->max_recv_wr > SV_MAX_WR || c->max_send_sge > SV_MAX_SGE ||
      c->max_recv_sge > SV_MAX_SGE)
    return EINVAL;
  struct ibv_qp_cap out = *c;
  int err = size_sq(&out);
  if (!err) err = size_rq(&out);
  if (!err) *c = out;
  return err;
}

/* The relaxed rule, for a test that wants rxe's behaviour: a send slot is
 * free once its WR is acknowledged, polled or not. */
bool sv_sq_free_on_ack(void) {
  const char *v = sv_env("SOFTVERBS_SQ_FREE");
  return v && !strcmp(v, "ack");
}
