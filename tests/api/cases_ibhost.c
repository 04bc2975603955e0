/* SPDX-License-Identifier: Apache-2.0 */
/* What an RDMA host offers NCCL, rebuilt from field layouts (over
 * softverbs): the devices and their properties, and the one warning that
 * names a layout NCCL would misread, with its fix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

/* SR-IOV with the host's whole /sys in a container: the physical function
 * mlx5_0 and its virtual function mlx5_2 are one physical port. Neither is
 * numbered as another port of the other, they do not share a GUID (NCCL
 * groups ports of one NIC by it), and one warning says what to do. */
void case_ib_pf_vf(struct side *s) {
  if (use_fixture(s, ROLE_SINGLE, "sriov-pf-vf") || side_open(s)) return;
  int n = 0;
  netload_devices(&s->nl, &n);
  CHECK(n == 2, "both functions are devices: %d", n);
  struct netload_props p[2];
  for (int i = 0; i < n && i < 2; i++) netload_props(&s->nl, i, &p[i]);
  if (n == 2) {
    CHECK(!strcmp(p[0].name, "mlx5_0") && !strcmp(p[1].name, "mlx5_2"), "devices %s, %s", p[0].name,
          p[1].name);
    CHECK(p[0].port == 1 && p[1].port == 1,
          "the virtual function is numbered as port %d of the physical function's NIC", p[1].port);
    CHECK(p[0].guid != p[1].guid, "both report GUID 0x%llx: NCCL would take them for one NIC",
          (unsigned long long)p[0].guid);
    CHECK(strstr(p[1].pci_path, "0000:3b:00.2") != NULL, "the VF's own PCI path: %s",
          p[1].pci_path);
  }
  const char *w = log_find(NCCL_LOG_WARN, "one physical port");
  CHECK(w && strstr(w, "mlx5_0 (0000:3b:00.0") && strstr(w, "virtual function of 0000:3b:00.0") &&
          strstr(w, "NCCL_IB_HCA==mlx5_2") && strstr(w, "NCCL_IB_MERGE_NICS=0"),
        "one warning with both functions and the fix: %s", w ? w : "none");
  CHECK(log_count(NCCL_LOG_WARN, "one physical port") == 1, "the warning is said once");
  side_close(s);
}

/* A dual-port NIC whose second link trained with half its lanes: both
 * ports offered, each at its own speed (NCCL weighs its rings by it), and
 * one warning naming the slow port, both rates and the fix. */
void case_ib_lanes_down(struct side *s) {
  if (use_fixture(s, ROLE_SINGLE, "roce-dual-port-lanes") || side_open(s)) return;
  int n = 0;
  netload_devices(&s->nl, &n);
  struct netload_props p[2] = {0};
  for (int i = 0; i < n && i < 2; i++) netload_props(&s->nl, i, &p[i]);
  CHECK(n == 2 && !strcmp(p[1].name, "mlx5_1") && p[0].speed == 100000 && p[1].speed == 50000,
        "both ports offered at their own speeds: %d devices, %s %d Mb/s, %s %d Mb/s", n, p[0].name,
        p[0].speed, p[1].name, p[1].speed);
  const char *w = log_find(NCCL_LOG_WARN, "links at");
  CHECK(w &&
          strstr(w, "device mlx5_1 port 1: links at 50 Gb/sec (2X EDR), below the 100 Gb/sec "
                    "(4X EDR) of mlx5_0") &&
          strstr(w, "2 of its 4 lanes are down") && strstr(w, "ethtool ens1f1np1"),
        "the slow port, both rates, the cause and how to check it: %s", w ? w : "none");
  CHECK(log_count(NCCL_LOG_WARN, "links at") == 1, "said once, of mlx5_1 only");
  side_close(s);
}

/* The devices NCCL sees are TCP interfaces (maxRecvs 1), not RDMA ports. */
static int tcp_devices(struct side *s) {
  int n = 0, tcp = 0;
  netload_devices(&s->nl, &n);
  for (int i = 0; i < n; i++) {
    struct netload_props p;
    if (!netload_props(&s->nl, i, &p) && p.max_recvs == 1) tcp++;
  }
  return n && tcp == n;
}

/* RDMA hardware present but unusable: the whole host falls back to TCP,
 * and that is a WARN with the cause, the consequence and the fix. */
static void host_fallback(struct side *s, const char *var, const char *value, const char *cause,
                          const char *fix) {
  setenv(var, value, 1);
  if (side_open(s)) return;
  CHECK(tcp_devices(s), "the devices must be TCP interfaces");
  const char *w = log_find(NCCL_LOG_WARN, "RDMA ports are chosen");
  CHECK(w && strstr(w, cause) && strstr(w, "at TCP speed") && strstr(w, fix),
        "one WARN with the cause (%s), the consequence and the fix (%s): %s", cause, fix,
        w ? w : "none");
  CHECK(!log_find(NCCL_LOG_INFO, "no RDMA device:"), "the fallback must not be an INFO line: %s",
        log_find(NCCL_LOG_INFO, "no RDMA device:"));
  CHECK(log_count(NCCL_LOG_WARN, "RDMA") == 1, "said once, not per port: %d warnings",
        log_count(NCCL_LOG_WARN, "RDMA"));
  side_close(s);
}

/* A container without /dev/infiniband: every open fails with ENOENT. */
void case_ib_host_unopenable(struct side *s) {
  host_fallback(s, "SOFTVERBS_OPEN_FAIL", "*", "none can be opened here", "/dev/infiniband");
}

/* No libibverbs in the container. */
void case_ib_host_no_verbs(struct side *s) {
  host_fallback(s, "NCCL_DIAG_IBVERBS_LIB", "/nonexistent/libibverbs.so.1", "cannot load",
                "install rdma-core's libibverbs1");
}

/* GPUs and RDMA but no way for the NICs to reach GPU memory (two DGX-like
 * nodes without nvidia_peermem): said once at init, with what was probed,
 * the consequence and the fix; GPU memory is not offered, and a GPU
 * registration on a connection is refused with a WARN. */
void case_ib_gdr_off(struct side *s) {
  if (use_fixture(s, ROLE_RECV, "dgx-h100") || use_fixture(s, ROLE_SEND, "dgx-h100")) return;
  void *comm;
  if (side_open(s)) return;
  const char *w = log_find(NCCL_LOG_WARN, "GPUDirect RDMA is off");
  CHECK(w && strstr(w, "8 NVIDIA GPUs") && strstr(w, "nvidia_peermem is not loaded") &&
          strstr(w, "nv_peer_mem is not loaded") && strstr(w, "dma-buf: mlx5_0 refuses it"),
        "what was probed and what each probe found: %s", w ? w : "none");
  CHECK(w && strstr(w, "host memory") && strstr(w, "bandwidth") &&
          strstr(w, "modprobe nvidia_peermem"),
        "the consequence and the fix: %s", w ? w : "none");
  CHECK(log_count(NCCL_LOG_WARN, "GPUDirect") == 1, "said once");
  struct netload_props p;
  CHECK(!netload_props(&s->nl, 0, &p) && p.ptr_support == NCCL_PTR_HOST,
        "GPU memory must not be offered: ptrSupport 0x%x", p.ptr_support);
  if (pair_open(s, &comm)) return;
  static char buf[4096];
  void *mh = NULL;
  CHECK(netload_reg_mr(&s->nl, comm, buf, sizeof(buf), NCCL_PTR_CUDA, &mh) == ncclInternalError,
        "a GPU registration on a host without GPUDirect RDMA succeeded");
  CHECK(log_find(NCCL_LOG_WARN, "GPU Direct RDMA is not available"),
        "the refused GPU registration is named");
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* The same with nvidia_peermem loaded (field story 5's host): GPU memory
 * is offered and nothing is said. */
void case_ib_gdr_on(struct side *s) {
  if (side_open(s)) return;
  CHECK(!log_find(NCCL_LOG_WARN, "GPUDirect"), "no warning with nvidia_peermem loaded: %s",
        log_find(NCCL_LOG_WARN, "GPUDirect"));
  struct netload_props p;
  CHECK(!netload_props(&s->nl, 0, &p) && (p.ptr_support & NCCL_PTR_CUDA),
        "GPU memory must be offered: ptrSupport 0x%x", p.ptr_support);
  side_close(s);
}
