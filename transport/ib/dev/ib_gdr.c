/* SPDX-License-Identifier: Apache-2.0 */
/* GPUDirect RDMA: whether the NIC can reach GPU memory, as NCCL detects it:
 * a peer-memory client (nvidia_peermem, or MLNX_OFED's nv_peer_mem) or
 * dma-buf registration (ibv_reg_dmabuf_mr with fd -1: EOPNOTSUPP means the
 * provider cannot, anything else that it can). Without either, NCCL moves
 * every GPU buffer through host memory; on a host with GPUs that is said
 * once, with what was probed and what each probe found. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "topo/sysfs.h"
#include "transport/ib/dev/ib.h"
#include "transport/prefs.h"

/* The files NCCL reads, the module each one stands for, and whether its
 * absence is worth naming (the non-coherent variant's is not). */
static const struct {
  const char *rel, *module;
  bool is_named;
} peermem_files[] = {
  {"module/nvidia_peermem/version", "nvidia_peermem", true},
  {"kernel/mm/memory_peers/nv_mem/version", "nv_peer_mem", true},
  {"kernel/mm/memory_peers/nv_mem_nc/version", "nv_peer_mem (non-coherent)", false},
};

bool ib_gdr_peermem(char *why, size_t cap) {
  size_t o = 0;
  why[0] = 0;
  for (size_t i = 0; i < sizeof(peermem_files) / sizeof(peermem_files[0]); i++) {
    char path[600];
    sysfs_path(path, sizeof(path), "%s", peermem_files[i].rel);
    if (sysfs_exists("%s", peermem_files[i].rel)) {
      snprintf(why, cap, "%s is loaded (%s)", peermem_files[i].module, path);
      return true;
    }
    if (peermem_files[i].is_named)
      o = strbuf_cat(why, cap, o, "%s%s is not loaded (no %s)", o ? ", " : "",
                     peermem_files[i].module, path);
  }
  if (!sysfs_exists("module/nvidia"))
    strbuf_cat(why, cap, o, "; the NVIDIA driver is not loaded either");
  return false;
}

bool ib_gdr_dmabuf(const struct verbs_ops *v, struct ibv_pd *pd, const char *dev, char *why,
                   size_t cap) {
  if (!v->reg_dmabuf_mr) {
    snprintf(why, cap, "dma-buf: %s has no ibv_reg_dmabuf_mr (rdma-core 34 or later has it)",
             v->lib);
    return false;
  }
  errno = 0;
  struct ibv_mr *mr = v->reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
  int err = errno;
  if (mr) v->dereg_mr(mr);
  if (!mr && (err == EOPNOTSUPP || err == EPROTONOSUPPORT || err == ENOSYS)) {
    snprintf(why, cap,
             "dma-buf: %s refuses it (%s: its driver or this kernel cannot register dma-buf "
             "memory; Linux 5.12 or later)",
             dev, strerror(err));
    return false;
  }
  snprintf(why, cap, "dma-buf: %s accepts it", dev);
  return true;
}

bool ib_gdr_wants_flush(int ptr_support, bool is_disabled, bool is_forced) {
  if (is_forced) return true;
  return !is_disabled && (ptr_support & (NCCL_PTR_CUDA | NCCL_PTR_DMABUF));
}

bool ib_dev_wants_flush(const struct ib_dev *d) {
  return ib_gdr_wants_flush(d->ptr_support, transport_prefs()->is_gdr_flush_disabled,
                            transport_prefs()->is_flush_forced);
}

void ib_gdr_report(const struct ib_state *st) {
  const struct topo_host *h;
  topo_process(&h);
  if (!st->ndev || !h->ngpu) return;
  char devs[256] = "";
  size_t o = 0;
  for (int i = 0; i < st->ndev; i++) {
    if (st->devs[i].ptr_support & (NCCL_PTR_CUDA | NCCL_PTR_DMABUF)) return;
    o = strbuf_cat(devs, sizeof(devs), o, "%s%s", i ? ", " : "", st->devs[i].td->name);
  }
  char peermem[600], dmabuf[300];
  ib_gdr_peermem(peermem, sizeof(peermem));
  ib_gdr_dmabuf(&st->v, st->devs[0].pd, st->devs[0].td->name, dmabuf, sizeof(dmabuf));
  WARN("GPUDirect RDMA is off: this host has %d NVIDIA GPU%s and RDMA on %s, but the NICs cannot "
       "reach GPU memory: %s; %s. NCCL then stages every GPU buffer in host memory: each byte "
       "crosses PCIe twice and network bandwidth per GPU drops well below the NICs' rate. Load "
       "nvidia_peermem (modprobe nvidia_peermem; nv_peer_mem with MLNX_OFED), or use dma-buf "
       "(Linux 5.12+, rdma-core 34+, the NVIDIA open kernel modules)",
       h->ngpu, h->ngpu == 1 ? "" : "s", devs, peermem, dmabuf);
}
