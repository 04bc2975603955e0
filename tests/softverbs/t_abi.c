/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs as the plugin sees it: dlopen by absolute path, symbols by
 * dlvsym with rdma-core's version nodes (compared with the real
 * libibverbs.so.1 when it is installed), verbs through ctx->ops, devices,
 * ports and GID tables as the fixture host describes them, and the fault
 * hooks that act on discovery. Not linked with the library.
 *   t_abi <path to softverbs' libibverbs.so.1>
 * (svt_host.c is compiled in for the fixture paths; svt.c is not.) */
#include "svt.h"
#include "tap.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *lib, *real; /* softverbs, and rdma-core's library when installed */

static const struct {
  const char *sym, *ver;
} exports[] = {
  {"ibv_create_comp_channel", "IBVERBS_1.0"},
  {"ibv_destroy_comp_channel", "IBVERBS_1.0"},
  {"ibv_get_device_list", "IBVERBS_1.1"},
  {"ibv_free_device_list", "IBVERBS_1.1"},
  {"ibv_get_device_name", "IBVERBS_1.1"},
  {"ibv_get_device_guid", "IBVERBS_1.1"},
  {"ibv_open_device", "IBVERBS_1.1"},
  {"ibv_close_device", "IBVERBS_1.1"},
  {"ibv_query_device", "IBVERBS_1.1"},
  {"ibv_query_port", "IBVERBS_1.1"},
  {"ibv_query_gid", "IBVERBS_1.1"},
  {"ibv_query_pkey", "IBVERBS_1.1"},
  {"ibv_alloc_pd", "IBVERBS_1.1"},
  {"ibv_dealloc_pd", "IBVERBS_1.1"},
  {"ibv_reg_mr", "IBVERBS_1.1"},
  {"ibv_dereg_mr", "IBVERBS_1.1"},
  {"ibv_create_cq", "IBVERBS_1.1"},
  {"ibv_resize_cq", "IBVERBS_1.1"},
  {"ibv_destroy_cq", "IBVERBS_1.1"},
  {"ibv_create_qp", "IBVERBS_1.1"},
  {"ibv_query_qp", "IBVERBS_1.1"},
  {"ibv_modify_qp", "IBVERBS_1.1"},
  {"ibv_destroy_qp", "IBVERBS_1.1"},
  {"ibv_create_ah", "IBVERBS_1.1"},
  {"ibv_destroy_ah", "IBVERBS_1.1"},
  {"ibv_get_async_event", "IBVERBS_1.1"},
  {"ibv_ack_async_event", "IBVERBS_1.1"},
  {"ibv_get_cq_event", "IBVERBS_1.1"},
  {"ibv_ack_cq_events", "IBVERBS_1.1"},
  {"ibv_event_type_str", "IBVERBS_1.1"},
  {"ibv_wc_status_str", "IBVERBS_1.1"},
  {"ibv_node_type_str", "IBVERBS_1.1"},
  {"ibv_port_state_str", "IBVERBS_1.1"},
  {"ibv_fork_init", "IBVERBS_1.1"},
  {"ibv_get_pkey_index", "IBVERBS_1.5"},
  {"ibv_reg_mr_iova", "IBVERBS_1.7"},
  {"ibv_reg_mr_iova2", "IBVERBS_1.8"},
  {"ibv_get_device_index", "IBVERBS_1.9"},
  {"ibv_query_ece", "IBVERBS_1.10"},
  {"ibv_set_ece", "IBVERBS_1.10"},
  {"_ibv_query_gid_ex", "IBVERBS_1.11"},
  {"_ibv_query_gid_table", "IBVERBS_1.11"},
  {"ibv_reg_dmabuf_mr", "IBVERBS_1.12"},
  {"ibv_is_fork_initialized", "IBVERBS_1.13"},
  {"ibv_query_qp_data_in_order", "IBVERBS_1.14"},
};

/* The plugin's way: the versioned symbol, else the default one. */
static void *sym(const char *name) {
  void *p = dlvsym(lib, name, "IBVERBS_1.1");
  return p ? p : dlsym(lib, name);
}

#define FN(name) ((__typeof__(&name))sym(#name))

static void case_versions(void) {
  for (size_t i = 0; i < sizeof exports / sizeof exports[0]; i++) {
    CHECK(dlvsym(lib, exports[i].sym, exports[i].ver), "%s@%s missing", exports[i].sym,
          exports[i].ver);
    if (real && real != lib)
      CHECK(dlvsym(real, exports[i].sym, exports[i].ver), "rdma-core has no %s@%s", exports[i].sym,
            exports[i].ver);
  }
  CHECK(!dlvsym(lib, "ibv_reg_mr_iova2", "IBVERBS_1.1"),
        "ibv_reg_mr_iova2 must not be in IBVERBS_1.1");
  CHECK(!dlvsym(lib, "ibv_create_comp_channel", "IBVERBS_1.1") &&
          dlsym(lib, "ibv_create_comp_channel"),
        "ibv_create_comp_channel: IBVERBS_1.0 only, found by dlsym");
  CHECK(!dlsym(lib, "sv_mr_check") && !dlsym(lib, "sv_now_ns"), "internal symbols are exported");
  if (!real) tap_diag("rdma-core's libibverbs.so.1 not installed: version nodes not compared");
}

static struct ibv_context *open_dev(const char *name) {
  int n;
  struct ibv_device **list = FN(ibv_get_device_list)(&n);
  struct ibv_context *ctx = NULL;
  for (int i = 0; list && i < n; i++)
    if (!strcmp(FN(ibv_get_device_name)(list[i]), name)) ctx = FN(ibv_open_device)(list[i]);
  if (list) FN(ibv_free_device_list)(list);
  return ctx;
}

/* As the header's inline ___ibv_query_port does without a verbs_context. */
static int query_port(struct ibv_context *ctx, struct ibv_port_attr *pa) {
  int (*q)(struct ibv_context *, uint8_t, struct _compat_ibv_port_attr *) = sym("ibv_query_port");
  memset(pa, 0, sizeof *pa);
  return q(ctx, 1, (struct _compat_ibv_port_attr *)pa);
}

static void case_devices(void) {
  int n = -1;
  struct ibv_device **list = FN(ibv_get_device_list)(&n);
  CHECK(list && n == 5, "%d devices", n);
  if (list && n == 5) {
    CHECK(!strcmp(list[0]->name, "mlx5_2") && !strcmp(list[3]->name, "mlx5_5") &&
            !strcmp(list[4]->name, "mlx5_bond_0"),
          "names %s .. %s %s", list[0]->name, list[3]->name, list[4]->name);
    CHECK(FN(ibv_get_device_guid)(list[0]) == htobe64(0xb83fd20300a00210ull), "guid");
    CHECK(strstr(list[0]->ibdev_path, "/class/infiniband/mlx5_2") != NULL, "ibdev_path %s",
          list[0]->ibdev_path);
    CHECK(FN(ibv_get_device_index)(list[1]) == 1, "index");
  }
  if (list) FN(ibv_free_device_list)(list);
  struct ibv_context *ctx = open_dev("mlx5_2");
  struct ibv_device_attr da;
  CHECK(ctx && !FN(ibv_query_device)(ctx, &da), "open and query mlx5_2");
  if (!ctx) return;
  CHECK(!strcmp(da.fw_ver, "22.39.1002") && da.vendor_id == 0x15b3 && da.vendor_part_id == 0x101d &&
          da.phys_port_cnt == 1 && da.node_guid == htobe64(0xb83fd20300a00210ull),
        "device attributes: fw %s vendor 0x%x part 0x%x ports %u", da.fw_ver, da.vendor_id,
        da.vendor_part_id, da.phys_port_cnt);
  CHECK(ctx->ops.post_send && ctx->ops.post_recv && ctx->ops.poll_cq && ctx->ops.req_notify_cq &&
          !ctx->abi_compat,
        "ctx->ops carries the data path; not an extended context");
  CHECK(ctx->async_fd >= 0 && ctx->num_comp_vectors == 1, "async fd");
  FN(ibv_close_device)(ctx);
}

static void case_ports_and_gids(void) {
  struct ibv_context *ctx = open_dev("mlx5_2"), *bond = open_dev("mlx5_bond_0");
  struct ibv_port_attr pa;
  union ibv_gid gid;
  char text[64];
  CHECK(ctx && bond, "open");
  if (!ctx || !bond) return;
  CHECK(!query_port(ctx, &pa) && pa.state == IBV_PORT_ACTIVE &&
          pa.link_layer == IBV_LINK_LAYER_ETHERNET && pa.active_mtu == IBV_MTU_4096 &&
          pa.gid_tbl_len == 8 && pa.lid == 0 && pa.pkey_tbl_len == 1,
        "mlx5_2 port 1: state %d ll %d mtu %d gids %d", pa.state, pa.link_layer, pa.active_mtu,
        pa.gid_tbl_len);
  CHECK(!query_port(bond, &pa) && pa.active_mtu == IBV_MTU_1024, "bond0's MTU 1500 gives 1024: %d",
        pa.active_mtu);
  CHECK(!FN(ibv_query_gid)(ctx, 1, 3, &gid) && inet_ntop(AF_INET6, gid.raw, text, sizeof text) &&
          !strcmp(text, "::ffff:10.1.2.5"),
        "gid 3 %s", text);
  CHECK(!FN(ibv_query_gid)(ctx, 1, 0, &gid) && inet_ntop(AF_INET6, gid.raw, text, sizeof text) &&
          !strcmp(text, "fe80::ba3f:d2ff:fea0:210"),
        "gid 0 %s", text);
  memset(&gid, 1, sizeof gid);
  CHECK(!FN(ibv_query_gid)(ctx, 1, 5, &gid) && gid.global.interface_id == 0,
        "an empty entry reads as zeros");
  CHECK(FN(ibv_query_gid)(ctx, 1, 8, &gid) == -1 && errno == EINVAL, "index past the table");
  struct ibv_gid_entry e;
  CHECK(!FN(_ibv_query_gid_ex)(ctx, 1, 3, &e, 0, sizeof e) && e.gid_type == IBV_GID_TYPE_ROCE_V2,
        "gid 3 type");
  CHECK(!FN(_ibv_query_gid_ex)(ctx, 1, 2, &e, 0, sizeof e) && e.gid_type == IBV_GID_TYPE_ROCE_V1,
        "gid 2 type");
  CHECK(FN(_ibv_query_gid_ex)(ctx, 1, 5, &e, 0, sizeof e) == ENODATA, "empty entry: ENODATA");
  struct ibv_gid_entry table[16];
  CHECK(FN(_ibv_query_gid_table)(ctx, table, 16, 0, sizeof table[0]) == 4, "four valid entries");
  __be16 pkey;
  CHECK(!FN(ibv_query_pkey)(ctx, 1, 0, &pkey) && pkey == htons(0xffff), "pkey 0");
  CHECK(FN(ibv_get_pkey_index)(ctx, 1, htons(0xffff)) == 0, "pkey index");
  FN(ibv_close_device)(ctx);
  FN(ibv_close_device)(bond);
}

/* A pod that shares its HCA with the host: the host's entries 0..3 have
 * types and netdevs it cannot read (x-diag-unreadable). One more entry made
 * unreadable as a whole, in a copy, covers the GID file itself. */
static void case_unreadable(void) {
  char dir[] = "/tmp/sv-abi-XXXXXX", cmd[1024], root[512];
  struct ibv_gid_entry e, table[16];
  union ibv_gid gid;
  setenv("NCCL_DIAG_SYSFS_ROOT", svt_fixture("container-partial-gids"), 1);
  struct ibv_context *ctx = open_dev("mlx5_0");
  CHECK(ctx != NULL, "open container-partial-gids mlx5_0");
  if (ctx) {
    CHECK(!FN(ibv_query_gid)(ctx, 1, 3, &gid) && gid.raw[15] == 11,
          "the host's gid 3 reads (10.40.0.11)");
    CHECK(FN(_ibv_query_gid_ex)(ctx, 1, 3, &e, 0, sizeof e) == ENODATA,
          "but its entry, type unreadable, is ENODATA");
    CHECK(!FN(_ibv_query_gid_ex)(ctx, 1, 7, &e, 0, sizeof e) &&
            e.gid_type == IBV_GID_TYPE_ROCE_V2 && e.gid.raw[15] == 57,
          "the pod's gid 7: RoCE v2 10.40.0.57");
    CHECK(FN(_ibv_query_gid_table)(ctx, table, 16, 0, sizeof table[0]) == 4, "four usable entries");
    FN(ibv_close_device)(ctx);
  }
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  snprintf(
    cmd, sizeof cmd,
    "cp -a '%s' '%s/host' && echo gids/6 >> '%s/host/sysfs/class/infiniband/mlx5_0/ports/1/x-diag-unreadable'",
    svt_host_dir("container-partial-gids"), dir, dir);
  CHECK(!system(cmd), "%s", cmd);
  snprintf(root, sizeof root, "%s/host/sysfs", dir);
  setenv("NCCL_DIAG_SYSFS_ROOT", root, 1);
  ctx = open_dev("mlx5_0");
  if (ctx) {
    CHECK(FN(ibv_query_gid)(ctx, 1, 6, &gid) == -1 && errno == EINVAL,
          "an unreadable gid file: EINVAL");
    CHECK(FN(_ibv_query_gid_ex)(ctx, 1, 6, &e, 0, sizeof e) == ENODATA, "its entry: ENODATA");
    FN(ibv_close_device)(ctx);
  }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(!system(cmd), "cleanup");
  setenv("NCCL_DIAG_SYSFS_ROOT", svt_fixture("roce-story5"), 1);
}

static void case_infiniband(void) {
  setenv("NCCL_DIAG_SYSFS_ROOT", svt_fixture("ib-hdr"), 1);
  struct ibv_context *ctx = open_dev("mlx5_0");
  struct ibv_port_attr pa;
  struct ibv_gid_entry e;
  CHECK(ctx != NULL, "open ib-hdr mlx5_0");
  if (ctx) {
    CHECK(!query_port(ctx, &pa) && pa.link_layer == IBV_LINK_LAYER_INFINIBAND && pa.lid == 0x11 &&
            pa.sm_lid == 1 && pa.active_mtu == IBV_MTU_4096 && pa.active_speed == 64 &&
            pa.active_width == 2,
          "ll %d lid %u sm %u mtu %d speed %u width %u", pa.link_layer, pa.lid, pa.sm_lid,
          pa.active_mtu, pa.active_speed, pa.active_width);
    CHECK(!FN(_ibv_query_gid_ex)(ctx, 1, 0, &e, 0, sizeof e) && e.gid_type == IBV_GID_TYPE_IB &&
            e.gid.global.subnet_prefix == htobe64(0xfe80000000000000ull),
          "gid 0");
    FN(ibv_close_device)(ctx);
  }
  setenv("NCCL_DIAG_SYSFS_ROOT", svt_fixture("roce-story5"), 1);
}

static void case_fault_hooks(void) {
  int n = 5;
  setenv("SOFTVERBS_NODEV", "ENOSYS", 1);
  CHECK(!FN(ibv_get_device_list)(&n) && errno == ENOSYS && n == 0, "SOFTVERBS_NODEV=ENOSYS");
  setenv("SOFTVERBS_NODEV", "ENODEV", 1);
  CHECK(!FN(ibv_get_device_list)(&n) && errno == ENODEV, "SOFTVERBS_NODEV=ENODEV");
  unsetenv("SOFTVERBS_NODEV");
  setenv("NCCL_DIAG_SYSFS_ROOT", "/nonexistent-sysfs", 1);
  CHECK(!FN(ibv_get_device_list)(&n) && errno == ENOSYS,
        "no class/infiniband at all: ENOSYS, as the kernel");
  setenv("NCCL_DIAG_SYSFS_ROOT", svt_fixture("roce-story5"), 1);
  setenv("SOFTVERBS_PORT_DOWN", "mlx5_2:1", 1);
  struct ibv_context *a = open_dev("mlx5_2"), *b = open_dev("mlx5_3");
  struct ibv_port_attr pa;
  CHECK(a && !query_port(a, &pa) && pa.state == IBV_PORT_DOWN && pa.phys_state == 3,
        "mlx5_2 port 1 DOWN");
  CHECK(b && !query_port(b, &pa) && pa.state == IBV_PORT_ACTIVE, "mlx5_3 still ACTIVE");
  setenv("SOFTVERBS_PORT_DOWN", "mlx5_3", 1);
  CHECK(b && !query_port(b, &pa) && pa.state == IBV_PORT_DOWN, "every port of mlx5_3 DOWN");
  unsetenv("SOFTVERBS_PORT_DOWN");
  if (a) FN(ibv_close_device)(a);
  if (b) FN(ibv_close_device)(b);
}

static void case_declined(void) {
  struct ibv_context *ctx = open_dev("mlx5_2");
  struct ibv_pd *pd = ctx ? FN(ibv_alloc_pd)(ctx) : NULL;
  CHECK(pd != NULL, "pd");
  if (!pd) return;
  CHECK(!FN(ibv_reg_dmabuf_mr)(pd, 0, 4096, 0, -1, 0) && errno == EOPNOTSUPP,
        "dma-buf: EOPNOTSUPP (no GPU)");
  /* ibv_reg_mr calls ibv_reg_mr_iova2 inside the library: with rdma-core's
   * library in the global scope that call must still stay in softverbs. */
  static char buf[4096];
  struct ibv_mr *mr = FN(ibv_reg_mr)(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr && mr->addr == buf && mr->lkey, "reg_mr %s rdma-core's library loaded",
        real ? "with" : "without");
  if (mr) FN(ibv_dereg_mr)(mr);
  CHECK(!strcmp(FN(ibv_wc_status_str)(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded"),
        "status text");
  CHECK(!strcmp(FN(ibv_event_type_str)(IBV_EVENT_QP_ACCESS_ERR),
                "local access violation work queue error"),
        "event text");
  CHECK(!strcmp(FN(ibv_port_state_str)(IBV_PORT_ACTIVE), "PORT_ACTIVE"), "port state text");
  CHECK(FN(ibv_fork_init)() == 0 && FN(ibv_is_fork_initialized)() == IBV_FORK_UNNEEDED, "fork");
  FN(ibv_dealloc_pd)(pd);
  FN(ibv_close_device)(ctx);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: t_abi <softverbs libibverbs.so.1>\n");
    return 2;
  }
  setenv("NCCL_DIAG_SYSFS_ROOT", svt_fixture("roce-story5"), 1);
  setenv("SOFTVERBS_WIRE", "loopback", 1);
  /* rdma-core's first, in the global scope: once softverbs is loaded, its
   * soname would make dlopen("libibverbs.so.1") return softverbs itself. */
  real = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL);
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    tap_begin();
    CHECK(lib != NULL, "dlopen %s: %s", argv[1], dlerror());
    tap_end("dlopen by absolute path");
    return tap_done();
  }
  TAP_CASE("version nodes and symbols, as rdma-core's", case_versions);
  TAP_CASE("device list, names, guid, attributes, ops", case_devices);
  TAP_CASE("ports, MTUs, GIDs, GID types, P_Keys from the fixture", case_ports_and_gids);
  TAP_CASE("a pod's partly mapped GID table (x-diag-unreadable)", case_unreadable);
  TAP_CASE("an infiniband port: LID, SM, speed, IB GID", case_infiniband);
  TAP_CASE("fault hooks SOFTVERBS_NODEV and SOFTVERBS_PORT_DOWN", case_fault_hooks);
  TAP_CASE("dma-buf, strings, fork", case_declined);
  return tap_done();
}
