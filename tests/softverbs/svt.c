/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the softverbs tests (see svt.h). */
#include "svt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double svt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct ibv_context *open_by_name(const char *name) {
  int n = 0;
  struct ibv_device **list = ibv_get_device_list(&n);
  struct ibv_context *ctx = NULL;
  for (int i = 0; list && i < n && !ctx; i++)
    if (!strcmp(ibv_get_device_name(list[i]), name)) ctx = ibv_open_device(list[i]);
  if (list) ibv_free_device_list(list);
  if (!ctx) fprintf(stderr, "svt: no device %s under %s\n", name, getenv("NCCL_DIAG_SYSFS_ROOT"));
  return ctx;
}

int svt_open(struct svt_ep *e, const char *dev, int gid_index, size_t size, int mr_access) {
  memset(e, 0, sizeof *e);
  e->port = 1;
  e->gid_index = gid_index;
  e->size = size;
  if (!(e->ctx = open_by_name(dev))) return -1;
  if (ibv_query_port(e->ctx, 1, &e->pa)) return -1;
  e->pd = ibv_alloc_pd(e->ctx);
  e->cq = e->pd ? ibv_create_cq(e->ctx, 512, NULL, NULL, 0) : NULL;
  e->buf = aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (!e->cq || !e->buf) return -1;
  memset(e->buf, 0, size);
  e->mr = ibv_reg_mr(e->pd, e->buf, size, mr_access);
  struct ibv_qp_init_attr ia = {.send_cq = e->cq,
                                .recv_cq = e->cq,
                                .qp_type = IBV_QPT_RC,
                                .cap = {.max_send_wr = 256,
                                        .max_recv_wr = 256,
                                        .max_send_sge = 4,
                                        .max_recv_sge = 4,
                                        .max_inline_data = 64}};
  e->qp = e->mr ? ibv_create_qp(e->pd, &ia) : NULL;
  return e->qp ? 0 : -1;
}

void svt_close(struct svt_ep *e) {
  if (e->qp) ibv_destroy_qp(e->qp);
  if (e->mr) ibv_dereg_mr(e->mr);
  if (e->cq) ibv_destroy_cq(e->cq);
  if (e->pd) ibv_dealloc_pd(e->pd);
  if (e->ctx) ibv_close_device(e->ctx);
  free(e->buf);
  memset(e, 0, sizeof *e);
}

void svt_info(const struct svt_ep *e, struct svt_info *info) {
  memset(info, 0, sizeof *info);
  info->qpn = e->qp->qp_num;
  info->rkey = e->mr->rkey;
  info->addr = (uintptr_t)e->buf;
  info->lid = e->pa.lid;
  info->mtu = (uint8_t)e->pa.active_mtu;
  if (e->gid_index >= 0) ibv_query_gid(e->ctx, (uint8_t)e->port, e->gid_index, &info->gid);
}

/* NCCL's choices: min_rnr_timer 12, timeout 14 here (tests want it short),
 * retry_cnt 7, rnr_retry 7 (forever). */
struct svt_qp_opts svt_defaults(void) {
  struct svt_qp_opts o = {.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                    IBV_ACCESS_REMOTE_READ,
                          .timeout = 14,
                          .retry_cnt = 7,
                          .rnr_retry = 7,
                          .min_rnr_timer = 12};
  return o;
}

int svt_init(struct svt_ep *e, const struct svt_qp_opts *o) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                          .pkey_index = 0,
                          .port_num = (uint8_t)e->port,
                          .qp_access_flags = (unsigned)o->access};
  return ibv_modify_qp(e->qp, &a,
                       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int svt_rtr(struct svt_ep *e, const struct svt_info *r, const struct svt_qp_opts *o) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
                          .dest_qp_num = r->qpn,
                          .rq_psn = o->rq_psn,
                          .max_dest_rd_atomic = 1,
                          .min_rnr_timer = o->min_rnr_timer};
  a.path_mtu = r->mtu && r->mtu < e->pa.active_mtu ? (enum ibv_mtu)r->mtu : e->pa.active_mtu;
  a.ah_attr.dlid = r->lid;
  a.ah_attr.port_num = (uint8_t)e->port;
  if (e->pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = r->gid;
    a.ah_attr.grh.sgid_index = (uint8_t)e->gid_index;
    a.ah_attr.grh.hop_limit = 255;
  }
  return ibv_modify_qp(e->qp, &a,
                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                         IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

int svt_rts(struct svt_ep *e, const struct svt_qp_opts *o) {
  struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS,
                          .timeout = o->timeout,
                          .retry_cnt = o->retry_cnt,
                          .rnr_retry = o->rnr_retry,
                          .sq_psn = o->sq_psn,
                          .max_rd_atomic = 1};
  return ibv_modify_qp(e->qp, &a,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

int svt_connect(struct svt_ep *e, const struct svt_info *remote, const struct svt_qp_opts *o) {
  int err = svt_init(e, o);
  if (!err) err = svt_rtr(e, remote, o);
  if (!err) err = svt_rts(e, o);
  return err;
}

int svt_pair_open(struct svt_pair *p, const char *dev_a, const char *dev_b, int gid, size_t size,
                  int mr_access, const struct svt_qp_opts *oa, const struct svt_qp_opts *ob) {
  memset(p, 0, sizeof *p);
  if (svt_open(&p->a, dev_a, gid, size, mr_access) || svt_open(&p->b, dev_b, gid, size, mr_access))
    return -1;
  svt_info(&p->a, &p->ia);
  svt_info(&p->b, &p->ib);
  int err = svt_connect(&p->a, &p->ib, oa);
  return err ? err : svt_connect(&p->b, &p->ia, ob);
}

void svt_pair_close(struct svt_pair *p) {
  svt_close(&p->a);
  svt_close(&p->b);
}

int svt_post(struct ibv_qp *qp, enum ibv_wr_opcode op, void *addr, uint32_t len, uint32_t lkey,
             uint64_t raddr, uint32_t rkey, uint32_t imm, unsigned flags, uint64_t wr_id) {
  struct ibv_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
  struct ibv_send_wr wr = {.wr_id = wr_id,
                           .sg_list = &sge,
                           .num_sge = len ? 1 : 0,
                           .opcode = op,
                           .send_flags = flags,
                           .imm_data = htonl(imm)},
                     *bad;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return ibv_post_send(qp, &wr, &bad);
}

int svt_post_recv(struct ibv_qp *qp, void *addr, uint32_t len, uint32_t lkey, uint64_t wr_id) {
  struct ibv_sge sge = {.addr = (uintptr_t)addr, .length = len, .lkey = lkey};
  struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0}, *bad;
  return ibv_post_recv(qp, &wr, &bad);
}

/* 1 with a completion, 0 after timeout_ms without one, -1 on a poll error. */
int svt_wait(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms) {
  double end = svt_now() + timeout_ms / 1000.0;
  for (;;) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n) return n;
    if (svt_now() > end) return 0;
    usleep(50);
  }
}

int svt_write_all(int fd, const void *p, size_t n) {
  for (size_t off = 0; off < n;) {
    ssize_t k = write(fd, (const char *)p + off, n - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    off += (size_t)k;
  }
  return 0;
}

int svt_read_all(int fd, void *p, size_t n) {
  for (size_t off = 0; off < n;) {
    ssize_t k = read(fd, (char *)p + off, n - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    off += (size_t)k;
  }
  return 0;
}

static int expect(struct svt_ep *e, enum ibv_wc_opcode op, uint64_t wr_id, struct ibv_wc *wc) {
  if (svt_wait(e->cq, wc, 10000) != 1) {
    fprintf(stderr, "svt: no completion for wr %llu within 10 s\n", (unsigned long long)wr_id);
    return -1;
  }
  if (wc->status != IBV_WC_SUCCESS || wc->opcode != op || wc->wr_id != wr_id) {
    fprintf(stderr, "svt: wr %llu: got wr %llu status %s opcode %d, want opcode %d\n",
            (unsigned long long)wr_id, (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status),
            wc->opcode, op);
    return -1;
  }
  return 0;
}

static void fill(uint8_t *p, size_t n, int seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 7 + (size_t)seed * 13 + 1);
}

static int check(const uint8_t *p, size_t n, int seed, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (uint8_t)(i * 7 + (size_t)seed * 13 + 1)) {
      fprintf(stderr, "svt: %s: byte %zu of iteration %d is wrong\n", what, i, seed);
      return -1;
    }
  return 0;
}

/* Buffer layout: [0, size) pings land here, [size, 2 size) pongs, [2 size,
 * 3 size) scratch. The server's pong (a SEND) completes when the client
 * ACKs it, which may come after the client's next ping. */
static int serve_round(struct svt_ep *e, int it, size_t size) {
  struct ibv_wc wc;
  uint8_t *ping = e->buf, *pong = e->buf + size;
  bool ping_seen = false, pong_done = it == 0;
  while (!ping_seen || !pong_done) {
    if (svt_wait(e->cq, &wc, 10000) != 1 || wc.status != IBV_WC_SUCCESS) {
      fprintf(stderr, "svt: server round %d: completion missing or failed\n", it);
      return -1;
    }
    if (wc.opcode == IBV_WC_SEND) pong_done = true;
    else if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.wr_id == (uint64_t)it &&
             ntohl(wc.imm_data) == (uint32_t)it)
      ping_seen = true;
    else return -1;
  }
  if (check(ping, size, it, "ping")) return -1;
  if (svt_post_recv(e->qp, NULL, 0, 0, (uint64_t)it + 1)) return -1;
  fill(pong, size, it + 1000);
  return svt_post(e->qp, IBV_WR_SEND, pong, (uint32_t)size, e->mr->lkey, 0, 0, 0, IBV_SEND_SIGNALED,
                  1u << 30);
}

static int client_round(struct svt_ep *e, const struct svt_info *r, int it, size_t size) {
  struct ibv_wc wc;
  uint8_t *ping = e->buf, *pong = e->buf + size, *scratch = e->buf + 2 * size;
  fill(ping, size, it);
  if (svt_post_recv(e->qp, pong, (uint32_t)size, e->mr->lkey, (uint64_t)it + 2000000)) return -1;
  if (svt_post(e->qp, IBV_WR_RDMA_WRITE, ping, (uint32_t)size, e->mr->lkey, r->addr, r->rkey, 0, 0,
               1) ||
      svt_post(e->qp, IBV_WR_RDMA_WRITE_WITH_IMM, NULL, 0, 0, r->addr, r->rkey, (uint32_t)it,
               IBV_SEND_SIGNALED, (uint64_t)it))
    return -1;
  /* The WRITE's ACK and the pong come on different connections, in either order. */
  for (int got = 0; got < 2; got++) {
    if (svt_wait(e->cq, &wc, 10000) != 1 || wc.status != IBV_WC_SUCCESS) {
      fprintf(stderr, "svt: client round %d: completion %d missing or failed\n", it, got);
      return -1;
    }
    if (wc.opcode == IBV_WC_RECV && (wc.wr_id != (uint64_t)it + 2000000 || wc.byte_len != size))
      return -1;
    if (wc.opcode != IBV_WC_RECV && (wc.opcode != IBV_WC_RDMA_WRITE || wc.wr_id != (uint64_t)it))
      return -1;
  }
  if (check(pong, size, it + 1000, "pong")) return -1;
  if (it % 16) return 0;
  memset(scratch, 0, size);
  if (svt_post(e->qp, IBV_WR_RDMA_READ, scratch, (uint32_t)size, e->mr->lkey, r->addr, r->rkey, 0,
               IBV_SEND_SIGNALED, 3000000))
    return -1;
  if (expect(e, IBV_WC_RDMA_READ, 3000000, &wc)) return -1;
  return check(scratch, size, it, "read back");
}

int svt_pingpong(struct svt_ep *e, const struct svt_info *remote, bool server, int iters,
                 size_t size) {
  if (3 * size > e->size) {
    fprintf(stderr, "svt: buffer of %zu bytes is too small for %zu-byte ping-pongs\n", e->size,
            size);
    return -1;
  }
  if (server && svt_post_recv(e->qp, NULL, 0, 0, 0)) return -1;
  for (int it = 0; it < iters; it++) {
    int err = server ? serve_round(e, it, size) : client_round(e, remote, it, size);
    if (err) {
      fprintf(stderr, "svt: %s failed at iteration %d\n", server ? "server" : "client", it);
      return -1;
    }
  }
  struct ibv_wc wc;
  return server && iters ? expect(e, IBV_WC_SEND, 1u << 30, &wc) : 0;
}
