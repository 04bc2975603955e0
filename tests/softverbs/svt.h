/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the softverbs tests and sv_rc_pingpong: one RC
 * endpoint (device, PD, CQ, QP, one registered buffer), its address as the
 * peer needs it, the INIT/RTR/RTS steps with NCCL's attributes, and a
 * ping-pong. Programs link the softverbs library directly, so the verbs
 * header's inline wrappers and macros are exercised as an application
 * built against libibverbs uses them. */
#ifndef SVT_H
#define SVT_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct svt_ep {
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  struct ibv_cq *cq;
  struct ibv_qp *qp;
  struct ibv_mr *mr;
  uint8_t *buf;
  size_t size;
  int port, gid_index;
  struct ibv_port_attr pa;
};

/* What the peer needs to connect (exchanged out of band). */
struct svt_info {
  uint32_t qpn, rkey;
  uint16_t lid;
  uint8_t mtu;
  uint64_t addr;
  union ibv_gid gid;
};

struct svt_qp_opts {
  int access; /* QP access flags */
  uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
  uint32_t sq_psn, rq_psn;
};

const char *svt_host_dir(const char *host); /* a fixture host's folder, found in $SV_FIXTURES */
const char *svt_fixture(const char *host);  /* its sysfs root */
void svt_use_host(const char *host);        /* that host, loopback wire */
double svt_now(void);

int svt_open(struct svt_ep *e, const char *dev, int gid_index, size_t size, int mr_access);
void svt_close(struct svt_ep *e);
void svt_info(const struct svt_ep *e, struct svt_info *info);
struct svt_qp_opts svt_defaults(void);
int svt_init(struct svt_ep *e, const struct svt_qp_opts *o);
int svt_rtr(struct svt_ep *e, const struct svt_info *remote, const struct svt_qp_opts *o);
int svt_rts(struct svt_ep *e, const struct svt_qp_opts *o);
int svt_connect(struct svt_ep *e, const struct svt_info *remote, const struct svt_qp_opts *o);

/* Two endpoints connected to each other (a <-> b), e.g. two devices of one
 * host in one process. */
struct svt_pair {
  struct svt_ep a, b;
  struct svt_info ia, ib; /* a's and b's addresses */
};
int svt_pair_open(struct svt_pair *p, const char *dev_a, const char *dev_b, int gid, size_t size,
                  int mr_access, const struct svt_qp_opts *oa, const struct svt_qp_opts *ob);
void svt_pair_close(struct svt_pair *p);

int svt_post(struct ibv_qp *qp, enum ibv_wr_opcode op, void *addr, uint32_t len, uint32_t lkey,
             uint64_t raddr, uint32_t rkey, uint32_t imm, unsigned flags, uint64_t wr_id);
int svt_post_recv(struct ibv_qp *qp, void *addr, uint32_t len, uint32_t lkey, uint64_t wr_id);
int svt_wait(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms);

int svt_write_all(int fd, const void *p, size_t n);
int svt_read_all(int fd, void *p, size_t n);

/* Ping-pong of `iters` round trips of `size` bytes: each ping is an RDMA
 * WRITE of the data plus a WRITE_WITH_IMM carrying the iteration, the pong
 * a SEND back; every 16th round trip the client also READs the server's
 * buffer. Data is checked on both sides. 0 on success, else prints why. */
int svt_pingpong(struct svt_ep *e, const struct svt_info *remote, bool server, int iters,
                 size_t size);

#endif
