/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/ib/dev/ib_verbs.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "common/strutil.h"
#include "transport/prefs.h"

/* Every exported verb we use exists since IBVERBS_1.1; a library without
 * that version node is not a libibverbs we understand. */
static void *sym(void *dl, const char *name, int optional_version) {
  void *p = dlvsym(dl, name, "IBVERBS_1.1");
  if (!p && optional_version)
    p = dlvsym(dl, name,
               optional_version == 8    ? "IBVERBS_1.8"
               : optional_version == 10 ? "IBVERBS_1.10"
               : optional_version == 12 ? "IBVERBS_1.12"
               : optional_version == 13 ? "IBVERBS_1.13"
                                        : "IBVERBS_1.0");
  if (!p) p = dlsym(dl, name);
  return p;
}

#define NEED(field, name)                                                                          \
  do {                                                                                             \
    *(void **)&v->field = sym(v->dl, name, 0);                                                     \
    if (!v->field) {                                                                               \
      snprintf(why, cap, "%s has no %s: not a compatible libibverbs (rdma-core)", v->lib, name);   \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

/* As NCCL (src/misc/ibvsymbols.cc buildIbvSymbols): NCCL_IBVERBS_LIB
 * first, then libibverbs.so, then libibverbs.so.1; NCCL_DIAG_IBVERBS_LIB,
 * when set, alone. */
static int open_lib(struct verbs_ops *v, char *why, size_t cap) {
  const char *names[3];
  int n = 0;
  const struct transport_prefs *p = transport_prefs();
  if (p->diag_ibverbs_lib) {
    names[n++] = p->diag_ibverbs_lib;
  } else {
    const char *env = p->ibverbs_lib;
    if (env && *env) names[n++] = env;
    names[n++] = "libibverbs.so";
    names[n++] = "libibverbs.so.1";
  }
  char tried[768] = "";
  size_t o = 0;
  for (int i = 0; i < n; i++) {
    v->dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (v->dl) {
      scopy(v->lib, sizeof(v->lib), names[i]);
      if (i > 0 && names[0] == p->ibverbs_lib)
        INFO(LOG_INIT, "NCCL_IBVERBS_LIB=%s does not open (%s); using %s", names[0], tried,
             names[i]);
      return 0;
    }
    const char *e = dlerror();
    if (o < sizeof(tried))
      o = strbuf_cat(tried, sizeof(tried), o, "%s%s", o ? "; " : "", e ? e : names[i]);
  }
  scopy(v->lib, sizeof(v->lib), names[0]);
  snprintf(why, cap,
           "cannot load the verbs library (%s): install rdma-core's libibverbs1, mount it into "
           "the container, or name it with NCCL_IBVERBS_LIB",
           tried);
  return ENOENT;
}

int verbs_load(struct verbs_ops *v, char *why, size_t cap) {
  memset(v, 0, sizeof(*v));
  if (open_lib(v, why, cap)) return ENOENT;
  NEED(get_device_list, "ibv_get_device_list");
  NEED(free_device_list, "ibv_free_device_list");
  NEED(get_device_name, "ibv_get_device_name");
  NEED(open_device, "ibv_open_device");
  NEED(close_device, "ibv_close_device");
  NEED(query_device, "ibv_query_device");
  NEED(query_port_compat, "ibv_query_port");
  NEED(query_gid, "ibv_query_gid");
  NEED(query_pkey, "ibv_query_pkey");
  NEED(alloc_pd, "ibv_alloc_pd");
  NEED(dealloc_pd, "ibv_dealloc_pd");
  NEED(reg_mr, "ibv_reg_mr");
  NEED(dereg_mr, "ibv_dereg_mr");
  NEED(create_cq, "ibv_create_cq");
  NEED(destroy_cq, "ibv_destroy_cq");
  NEED(create_qp, "ibv_create_qp");
  NEED(modify_qp, "ibv_modify_qp");
  NEED(destroy_qp, "ibv_destroy_qp");
  NEED(get_async_event, "ibv_get_async_event");
  NEED(ack_async_event, "ibv_ack_async_event");
  NEED(event_type_str, "ibv_event_type_str");
  NEED(wc_status_str, "ibv_wc_status_str");
  NEED(fork_init, "ibv_fork_init");
  *(void **)&v->reg_dmabuf_mr = sym(v->dl, "ibv_reg_dmabuf_mr", 12);
  *(void **)&v->reg_mr_iova2 = sym(v->dl, "ibv_reg_mr_iova2", 8);
  *(void **)&v->query_ece = sym(v->dl, "ibv_query_ece", 10);
  *(void **)&v->set_ece = sym(v->dl, "ibv_set_ece", 10);
  *(void **)&v->is_fork_initialized = sym(v->dl, "ibv_is_fork_initialized", 13);
  return 0;
fail:
  dlclose(v->dl);
  v->dl = NULL;
  return ENOSYS;
}

void verbs_fork_init(const struct verbs_ops *v) {
  if (v->is_fork_initialized) {
    enum ibv_fork_status st = v->is_fork_initialized();
    if (st == IBV_FORK_UNNEEDED || st == IBV_FORK_ENABLED) return;
  }
  int err = v->fork_init();
  if (!err) {
    INFO(LOG_INIT, "%s: fork protection on (ibv_fork_init, as NCCL calls it): %s", v->lib,
         v->is_fork_initialized ? "this kernel does not keep registered memory safe across fork"
                                : "this libibverbs cannot tell whether the kernel does");
    return;
  }
  WARN("%s: ibv_fork_init failed (%s): a child process forked after NCCL's initialisation (a "
       "data loader worker, a subprocess) can corrupt or lose memory registered for RDMA. Start "
       "children before NCCL, use the spawn start method, or upgrade to Linux 5.13 or later",
       v->lib, strerror(err < 0 ? errno : err));
}

int verbs_query_port(const struct verbs_ops *v, struct ibv_context *ctx, uint8_t port,
                     struct ibv_port_attr *attr) {
  struct verbs_context *vctx = verbs_get_ctx_op(ctx, query_port);
  if (vctx) return vctx->query_port(ctx, port, attr, sizeof(*attr));
  /* Older providers: the exported call fills only the legacy fields. */
  memset(attr, 0, sizeof(*attr));
  return v->query_port_compat(ctx, port, attr);
}

const char *verbs_qp_state_str(enum ibv_qp_state s) {
  switch (s) {
  case IBV_QPS_RESET: return "RESET";
  case IBV_QPS_INIT: return "INIT";
  case IBV_QPS_RTR: return "RTR";
  case IBV_QPS_RTS: return "RTS";
  case IBV_QPS_SQD: return "SQD";
  case IBV_QPS_SQE: return "SQE";
  case IBV_QPS_ERR: return "ERR";
  default: return "UNKNOWN";
  }
}

const char *verbs_wc_opcode_str(enum ibv_wc_opcode op) {
  switch (op) {
  case IBV_WC_SEND: return "SEND";
  case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
  case IBV_WC_RDMA_READ: return "RDMA_READ";
  case IBV_WC_RECV: return "RECV";
  case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
  default: return "OTHER";
  }
}

const char *verbs_wc_status_name(enum ibv_wc_status s) {
  static const char *const names[] = {
    "IBV_WC_SUCCESS",           "IBV_WC_LOC_LEN_ERR",
    "IBV_WC_LOC_QP_OP_ERR",     "IBV_WC_LOC_EEC_OP_ERR",
    "IBV_WC_LOC_PROT_ERR",      "IBV_WC_WR_FLUSH_ERR",
    "IBV_WC_MW_BIND_ERR",       "IBV_WC_BAD_RESP_ERR",
    "IBV_WC_LOC_ACCESS_ERR",    "IBV_WC_REM_INV_REQ_ERR",
    "IBV_WC_REM_ACCESS_ERR",    "IBV_WC_REM_OP_ERR",
    "IBV_WC_RETRY_EXC_ERR",     "IBV_WC_RNR_RETRY_EXC_ERR",
    "IBV_WC_LOC_RDD_VIOL_ERR",  "IBV_WC_REM_INV_RD_REQ_ERR",
    "IBV_WC_REM_ABORT_ERR",     "IBV_WC_INV_EECN_ERR",
    "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",
    "IBV_WC_RESP_TIMEOUT_ERR",  "IBV_WC_GENERAL_ERR",
  };
  return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "IBV_WC_UNKNOWN";
}

int verbs_mtu_bytes(enum ibv_mtu m) { return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0; }

enum ibv_mtu verbs_mtu_enum(int bytes) {
  enum ibv_mtu m = IBV_MTU_256;
  for (int e = IBV_MTU_4096; e >= IBV_MTU_256; e--)
    if ((128 << e) <= bytes) {
      m = (enum ibv_mtu)e;
      break;
    }
  return m;
}
