/* SPDX-License-Identifier: Apache-2.0 */
/* The GPU side of a job that users often read as a network failure: two
 * ranks on one GPU, CUDA not initialised (fabric manager), NVLS set-up
 * failing, GPU memory exhausted, more ranks than GPUs, an old driver. The
 * words are CUDA's error strings, which NCCL quotes in "Cuda failure" and
 * PyTorch in its own errors. */
#include <stdio.h>
#include <string.h>

#include "tools/explain/cuda_errors.h"
#include "tools/explain/rules.h"

enum cuda_kind {
  CK_NONE = -1, /* not a CUDA error */
  CK_DUPLICATE,
  CK_NOT_READY,
  CK_NVLS,
  CK_DRIVER,
  CK_ORDINAL,
  CK_OOM,
  CK_ASYNC_COPY,
  CK_NO_DEVICE, /* no CUDA-capable device, or all busy */
  CK_ARCH,      /* no kernel image for this GPU: a build older than the GPU */
  CK_FAULT,     /* a kernel faulted: illegal address, launch failure, ECC */
  CK_OTHER,     /* any other error of the toolkit's catalogue */
  CK_COUNT,
};

static bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static const struct cuda_error *by_num(int num) {
  for (size_t i = 0; i < cuda_nerrors; i++)
    if (cuda_errors[i].num == num) return &cuda_errors[i];
  return NULL;
}

static bool name_at(const char *p, const char *name) {
  size_t n = strlen(name);
  return !strncmp(p, name, n) && !is_name_char(p[n]);
}

const struct cuda_error *cuda_error_in(const char *t) {
  const char *p = strstr(t, "cudaError");
  for (size_t i = 0; p && i < cuda_nerrors; i++)
    if (name_at(p, cuda_errors[i].name)) return &cuda_errors[i];
  p = strstr(t, "CUDA_ERROR_");
  for (size_t i = 0; p && i < cuda_ndriver_errors; i++)
    if (name_at(p, cuda_driver_errors[i].name)) return by_num(cuda_driver_errors[i].num);
  const struct cuda_error *best = NULL;
  for (size_t i = 0; i < cuda_nerrors; i++)
    if (strstr(t, cuda_errors[i].text) &&
        (!best || strlen(cuda_errors[i].text) > strlen(best->text)))
      best = &cuda_errors[i];
  return best;
}

/* The kind of a catalogued error NCCL's messages do not already name. */
static int kind_of_error(const struct cuda_error *e) {
  switch (e->num) {
  case 2: return CK_OOM;
  case 35: return CK_DRIVER;
  case 101: return CK_ORDINAL;
  case 802: return CK_NOT_READY;
  case 46: /* devices busy or unavailable */
  case 100: /* no CUDA-capable device */ return CK_NO_DEVICE;
  case 98:  /* invalid device function */
  case 209: /* no kernel image */
  case 222: /* unsupported PTX version */ return CK_ARCH;
  case 214: /* uncorrectable ECC */
  case 700: /* illegal address */
  case 714:
  case 715:
  case 716:
  case 717:
  case 718:
  case 719: /* launch failure */ return CK_FAULT;
  default: return CK_OTHER;
  }
}

static int cuda_kind_of(const struct rec *r) {
  const char *t = r->text;
  if (strstr(t, "Duplicate GPU detected")) return CK_DUPLICATE;
  if (strstr(t, "CUDA out of memory")) return CK_OOM; /* PyTorch's allocator */
  bool is_cuda = strstr(t, "Cuda failure") || strstr(t, "CUDA failure") ||
                 strstr(t, "cuda runtime error") || strstr(t, "CUDA error") ||
                 strstr(t, "CUDA Error") || strstr(t, "cudaError") || strstr(t, "CUDA_ERROR_");
  if (!is_cuda) return CK_NONE;
  if (strstr(t, "system not yet initialized") || strstr(t, " 802 ") || strstr(t, "(802)"))
    return CK_NOT_READY;
  if (strstr(r->src, "nvls") || strstr(t, "nvls")) return CK_NVLS;
  if (strstr(t, "driver version is insufficient")) return CK_DRIVER;
  if (strstr(t, "invalid device ordinal")) return CK_ORDINAL;
  if (strstr(t, "out of memory")) return CK_OOM;
  /* 2.18.1-2.18.5 transport.cc: see CK_ASYNC_COPY in cuda_text */
  if (strstr(t, "invalid argument") && strstr(r->src, "transport.cc")) return CK_ASYNC_COPY;
  const struct cuda_error *e = cuda_error_in(t);
  return e ? kind_of_error(e) : CK_NONE;
}

/* An error the catalogue knows but no cause of this file names, inside an
 * NCCL message, stays the unexplained-warn rule's (which quotes what the
 * catalogue says of it); a bare one is this rule's, so a pasted CUDA
 * error alone is still read. */
bool cuda_match(const struct rec *r) {
  int k = cuda_kind_of(r);
  if ((k == CK_OTHER || k == CK_FAULT) && unknown_match(r)) return false;
  return k >= 0;
}

void cuda_hint(struct finding *f, const struct rec *first) {
  const struct cuda_error *e = cuda_error_in(first->text);
  if (!e) return;
  size_t n = strlen(f->fix);
  snprintf(
    f->fix + n, sizeof(f->fix) - n,
    "; the CUDA error is %s (%d: %s), raised on the GPU side, not by the network: %s", e->name,
    e->num, e->text,
    kind_of_error(e) == CK_FAULT
      ? "a kernel faulted (CUDA_LAUNCH_BLOCKING=1 finds it; dmesg shows an Xid if the GPU failed)"
      : "nvidia-smi and dmesg on that host show the GPU's state");
}

/* The kinds read from the toolkit's catalogue of errors. */
static void cuda_text_catalogued(struct finding *f, enum cuda_kind k, const char *hosts,
                                 const struct cuda_error *e) {
  switch (k) {
  case CK_NO_DEVICE:
    finding_cause(
      f,
      "the process on %s sees no usable GPU (%s): the NVIDIA driver is not loaded, the container was started without the GPUs (docker --gpus all, the device plugin's resource request), CUDA_VISIBLE_DEVICES is empty or wrong, or the GPUs are in exclusive mode and taken",
      hosts, e ? e->text : "no CUDA-capable device");
    finding_fix(
      f,
      "run nvidia-smi inside the same container or job step; check CUDA_VISIBLE_DEVICES and the compute mode (nvidia-smi -q | grep -i 'compute mode')");
    break;
  case CK_ARCH:
    finding_cause(
      f,
      "the GPU code on %s has no kernels for this GPU (%s): NCCL or the framework was built for older GPU architectures than the one it runs on, an NCCL or CUDA release older than the hardware",
      hosts, e ? e->text : "no kernel image");
    finding_fix(
      f,
      "use an NCCL, CUDA and framework build that supports this GPU's compute capability (nvidia-smi --query-gpu=compute_cap --format=csv; a newer NCCL wheel or container); a source build needs NVCC_GENCODE with that architecture");
    break;
  case CK_FAULT:
    finding_cause(
      f,
      "no confident cause: a GPU kernel on %s faulted (%s, %s); CUDA errors are sticky, so every later CUDA and NCCL call of that process fails with it, and its peers then see a network error; the fault is the process's own kernel (an application bug) or the GPU (dmesg shows an Xid)",
      hosts, e ? e->name : "?", e ? e->text : "?");
    finding_fix(
      f,
      "rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel, check dmesg for NVRM Xid lines and nvidia-smi -q -d ECC on %s; an uncorrectable ECC error or repeated Xid 79/48 means the GPU needs a reset or replacing",
      hosts);
    break;
  case CK_OTHER:
    finding_cause(
      f,
      "no confident cause: CUDA failed on %s with %s (%d: %s), a GPU-side error, not the network",
      hosts, e ? e->name : "?", e ? e->num : 0, e ? e->text : "?");
    finding_fix(
      f,
      "read the CUDA documentation of %s; check nvidia-smi and dmesg on %s, and that the driver supports the CUDA version the job uses",
      e ? e->name : "the error", hosts);
    break;
  default: break;
  }
}

static void cuda_text(struct finding *f, enum cuda_kind k, const char *hosts,
                      const struct cuda_error *e) {
  if (k >= CK_NO_DEVICE && k <= CK_OTHER) {
    cuda_text_catalogued(f, k, hosts, e);
    return;
  }
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
  case CK_ASYNC_COPY:
    finding_cause(
      f,
      "connecting peers failed on %s with Cuda failure 'invalid argument' in transport.cc: NCCL 2.18.1 to 2.18.5 read a device pointer with an asynchronous copy and used it before the copy completed, so the next copy got a bad address (an NCCL bug, fixed in 2.18.6 and 2.19)",
      hosts);
    finding_fix(
      f,
      "upgrade NCCL to 2.18.6 or 2.19+ on every node (for PyTorch: pip install -U nvidia-nccl-cu12, or a build that bundles a newer NCCL); NCCL_DEBUG=VERSION prints the version a job loads");
    break;
  default:
    finding_cause(
      f,
      "a GPU on %s ran out of memory while NCCL set up or ran (CUDA: out of memory): the model, other processes on the same GPU, or NCCL's own buffers filled it",
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
    if (k == CK_ASYNC_COPY) { /* only the versions with that transport.cc */
      const struct corr_host *ch = corr_find(cx->corr, h->v[i]->host);
      if (ch && ch->version[0] &&
          (rules_version_before(ch->version, 2, 18) || !rules_version_before(ch->version, 2, 19)))
        continue;
    }
    enum confidence conf = k == CK_DUPLICATE || k == CK_DRIVER ? CONF_HIGH
                           : k == CK_FAULT || k == CK_OTHER    ? CONF_LOW
                                                               : CONF_MEDIUM;
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
    cuda_text(groups[k], (enum cuda_kind)k, hosts, cuda_error_in(groups[k]->ev[0]->text));
  }
}
