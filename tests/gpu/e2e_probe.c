/* SPDX-License-Identifier: Apache-2.0 */
/* nccl_e2e: the commands that run before any rank: `probe` (GPUs and
 * versions) and `dlopen` (load a net plugin as NCCL does). */
#include "e2e.h"

#include <dlfcn.h>

void version_str(int code, char *buf, size_t cap) {
  snprintf(buf, cap, "%d.%d.%d", code / 10000, (code % 10000) / 100, code % 100);
}

int cmd_probe(void) {
  int nccl = 0, rt = 0, drv = 0, n = 0;
  char nv[32];
  ncclGetVersion(&nccl);
  version_str(nccl, nv, sizeof(nv));
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  printf("nccl %s (code %d); CUDA runtime %d.%d, driver %d.%d\n", nv, nccl, rt / 1000,
         (rt % 1000) / 10, drv / 1000, (drv % 1000) / 10);
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n < 1) {
    printf("no GPU: cudaGetDeviceCount: %s (%s)\n",
           e == cudaSuccess ? "0 devices" : cudaGetErrorName(e),
           e == cudaSuccess ? "no device" : cudaGetErrorString(e));
    return EXIT_NO_GPU;
  }
  for (int d = 0; d < n; d++) {
    struct cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    printf("gpu %d: %s, sm_%d%d, %.1f GiB, pci %04x:%02x:%02x.0\n", d, p.name, p.major, p.minor,
           (double)p.totalGlobalMem / (1 << 30), p.pciDomainID, p.pciBusID, p.pciDeviceID);
  }
  return 0;
}

/* RTLD_NOW as NCCL does, so a missing symbol fails here and not mid-run. */
int cmd_dlopen(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    printf("dlopen(RTLD_NOW) failed: %s\n", dlerror());
    return 1;
  }
  int found = 0;
  for (int v = 12; v >= 6; v--) {
    char sym[32];
    snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
    void *p = dlsym(h, sym);
    if (!p) continue;
    /* Every ncclNet_vN_t starts with `const char *name` (spec 3.1). */
    const char *name = *(const char *const *)p;
    printf("%s%s (network name \"%s\")", found ? ", " : "exports ", sym, name ? name : "(null)");
    found++;
  }
  fputs(found ? "\n" : "no ncclNetPlugin_vN symbol: NCCL would call it unsupported\n", stdout);
  dlclose(h);
  return found ? 0 : 1;
}
