/* SPDX-License-Identifier: Apache-2.0 */
/* The GPU side of a job that users often read as a network failure: two
 * ranks on one GPU, CUDA not initialised (fabric manager), NVLS set-up
 * failing, GPU memory exhausted, more ranks than GPUs, an old driver. The
 * words are CUDA's error strings, which NCCL quotes in "Cuda failure" and
 * PyTorch in its own errors. */
#include <stdio.h>
#include <string.h>

#include "tools/explain/rules.h"

enum cuda_kind {
  CK_DUPLICATE,
  CK_NOT_READY,
  CK_NVLS,
  CK_DRIVER,
  CK_ORDINAL,
  CK_OOM,
  CK_COUNT,
};

static int cuda_kind_of(const struct rec *r) {
  const char *t = r->text;
  if (strstr(t, "Duplicate GPU detected")) return CK_DUPLICATE;
  bool is_cuda = strstr(t, "Cuda failure") || strstr(t, "CUDA failure") ||
                 strstr(t, "cuda runtime error") || strstr(t, "CUDA error");
  if (!is_cuda) return -1;
  if (strstr(t, "system not yet initialized") || strstr(t, " 802 ") || strstr(t, "(802)"))
    return CK_NOT_READY;
  if (strstr(r->src, "nvls") || strstr(t, "nvls")) return CK_NVLS;
  if (strstr(t, "driver version is insufficient")) return CK_DRIVER;
  if (strstr(t, "invalid device ordinal")) return CK_ORDINAL;
  if (strstr(t, "out of memory")) return CK_OOM;
  return -1;
}

bool cuda_match(const struct rec *r) { return cuda_kind_of(r) >= 0; }

static void cuda_text(struct finding *f, enum cuda_kind k, const char *hosts) {
  switch (k) {
  case CK_DUPLICATE:
    finding_cause(
      f,
      "two ranks on %s use the same GPU (Duplicate GPU detected): each process must select its own device, and these did not (no cuda set-device per local rank, or CUDA_VISIBLE_DEVICES the same for all)",
      hosts);
    finding_fix(
      f,
      "select the GPU of the local rank before NCCL starts (torch.cuda.set_device(local_rank) with torchrun's LOCAL_RANK, or device_ids=[local_rank]); launch no more processes per node than GPUs");
    break;
  case CK_NOT_READY:
    finding_cause(
      f,
      "CUDA could not start on %s (error 802, system not yet initialized): on NVSwitch systems (HGX, DGX) the nvidia-fabricmanager service is not running, or its version differs from the driver's",
      hosts);
    finding_fix(
      f,
      "on %s: systemctl enable --now nvidia-fabricmanager, with the package version equal to the driver version (nvidia-smi); nvidia-smi -q | grep -i fabric shows the state",
      hosts);
    break;
  case CK_NVLS:
    finding_cause(
      f,
      "setting up NVLink SHARP (NVLS) failed with a CUDA error on %s: most often the fabric manager was restarted while the GPUs kept their state, or its version differs from the driver's",
      hosts);
    finding_fix(
      f,
      "reboot the node (or reset the GPUs, then start nvidia-fabricmanager) with matching fabric manager and driver versions; to run meanwhile, NCCL_NVLS_ENABLE=0 (NCCL 2.17+) turns NVLS off");
    finding_export(f, "NCCL_NVLS_ENABLE=0");
    break;
  case CK_DRIVER:
    finding_cause(
      f,
      "the GPU driver on %s is older than the CUDA runtime NCCL (or the framework) was built for (CUDA driver version is insufficient)",
      hosts);
    finding_fix(
      f,
      "install a driver that supports this CUDA version (nvidia-smi shows the highest CUDA version the driver supports), or use a build for an older CUDA");
    break;
  case CK_ORDINAL:
    finding_cause(
      f,
      "a rank on %s asked for a GPU that does not exist (invalid device ordinal): more processes per node than visible GPUs, or CUDA_VISIBLE_DEVICES that hides the local rank's GPU",
      hosts);
    finding_fix(
      f,
      "launch at most as many processes per node as GPUs (torchrun --nproc_per_node), and check CUDA_VISIBLE_DEVICES and the local rank each process uses");
    break;
  default:
    finding_cause(
      f,
      "a GPU on %s ran out of memory while NCCL set up or ran (Cuda failure 'out of memory'): the model, other processes on the same GPU, or NCCL's own buffers filled it",
      hosts);
    finding_fix(
      f,
      "check nvidia-smi for other processes on the GPU and for two ranks sharing one; leave headroom for NCCL (fewer channels with NCCL_MAX_NCHANNELS, smaller NCCL_BUFFSIZE) or reduce the batch");
  }
}

void cuda_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *groups[CK_COUNT] = {0};
  for (size_t i = 0; i < h->n; i++) {
    int k = cuda_kind_of(h->v[i]);
    if (k < 0) continue;
    enum confidence conf = k == CK_DUPLICATE || k == CK_DRIVER ? CONF_HIGH : CONF_MEDIUM;
    if (!groups[k] && !(groups[k] = finding_new(cx->out, "cuda", conf))) return;
    finding_evidence(groups[k], h->v[i]);
  }
  for (int k = 0; k < CK_COUNT; k++) {
    if (!groups[k]) continue;
    char hosts[400] = "";
    for (int i = 0; i < groups[k]->nhosts; i++)
      snprintf(hosts + strlen(hosts), sizeof(hosts) - strlen(hosts), "%s%s", i ? ", " : "",
               groups[k]->hosts[i]);
    if (!hosts[0]) snprintf(hosts, sizeof(hosts), "the host");
    cuda_text(groups[k], (enum cuda_kind)k, hosts);
  }
}
