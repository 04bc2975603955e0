/* SPDX-License-Identifier: Apache-2.0 */
/* libibverbs, opened with dlopen behind one ops table (NCCL_DIAG_IBVERBS_LIB
 * names another library: tests name softverbs). The plugin never links
 * libibverbs: <infiniband/verbs.h> gives only the ABI's types, and its
 * inline helpers that reach exported symbols are replaced by these. */
#ifndef DIAG_TRANSPORT_IB_VERBS_H
#define DIAG_TRANSPORT_IB_VERBS_H

#include <infiniband/verbs.h>
#include <stddef.h>

struct verbs_ops {
  void *dl;
  char lib[256];
  struct ibv_device **(*get_device_list)(int *num);
  void (*free_device_list)(struct ibv_device **list);
  const char *(*get_device_name)(struct ibv_device *dev);
  struct ibv_context *(*open_device)(struct ibv_device *dev);
  int (*close_device)(struct ibv_context *ctx);
  int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
  int (*query_port_compat)(struct ibv_context *ctx, uint8_t port, void *attr);
  int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
  int (*query_pkey)(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey);
  struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
  int (*dealloc_pd)(struct ibv_pd *pd);
  struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
  struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
                                  int fd, int access); /* optional (IBVERBS_1.12) */
  struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
                                 unsigned int access); /* optional (IBVERBS_1.8) */
  int (*dereg_mr)(struct ibv_mr *mr);
  struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_ctx,
                              struct ibv_comp_channel *ch, int vector);
  int (*destroy_cq)(struct ibv_cq *cq);
  struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
  int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
  int (*destroy_qp)(struct ibv_qp *qp);
  int (*get_async_event)(struct ibv_context *ctx, struct ibv_async_event *ev);
  void (*ack_async_event)(struct ibv_async_event *ev);
  const char *(*event_type_str)(enum ibv_event_type t);
  const char *(*wc_status_str)(enum ibv_wc_status s);
  int (*fork_init)(void);
  enum ibv_fork_status (*is_fork_initialized)(void);        /* optional (IBVERBS_1.13) */
  int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece); /* optional (IBVERBS_1.10) */
  int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);   /* optional (IBVERBS_1.10) */
};

/* Loads the library named by NCCL_DIAG_IBVERBS_LIB (default
 * libibverbs.so.1). 0, or with why filled ENOENT (not found) or ENOSYS (a
 * symbol missing: an incompatible library). */
int verbs_load(struct verbs_ops *v, char *why, size_t cap);

/* Makes registered memory safe across fork() as NCCL does at init, unless
 * the library says the kernel already does (Linux 5.13+, rdma-core 35+) or
 * it was done; a failure is said once with its consequence. */
void verbs_fork_init(const struct verbs_ops *v);

/* ibv_query_port as the header's inline does it, without the symbol. */
int verbs_query_port(const struct verbs_ops *v, struct ibv_context *ctx, uint8_t port,
                     struct ibv_port_attr *attr);

const char *verbs_qp_state_str(enum ibv_qp_state s);
const char *verbs_wc_opcode_str(enum ibv_wc_opcode op);
const char *verbs_wc_status_name(enum ibv_wc_status s); /* "IBV_WC_RETRY_EXC_ERR" */
int verbs_mtu_bytes(enum ibv_mtu m);
enum ibv_mtu verbs_mtu_enum(int bytes); /* largest IB MTU <= bytes */

#endif
