/* SPDX-License-Identifier: Apache-2.0 */
/* GPUs (from hwloc, or sysfs when hwloc is not used), their distance to
 * every port and, per GPU, the nearest chosen RDMA devices. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "topo/internal.h"
#include "topo/sysfs.h"

#define NVIDIA_VENDOR 0x10de

bool gpu_is_nvidia_gpu(unsigned vendor, unsigned class_id) {
  /* 0x0300 VGA compatible, 0x0302 3D controller (H100, A100 SXM) */
  return vendor == NVIDIA_VENDOR && (class_id == 0x0300 || class_id == 0x0302);
}

int gpu_add(struct topo_host *h, const struct topo_gpu *g) {
  if (h->ngpu == TOPO_MAX_GPUS) {
    topo_note(h, "more than %d GPUs; %s and later are not considered", TOPO_MAX_GPUS, g->busid);
    return 0;
  }
  struct topo_gpu *grown = topo_grow(h->gpus, h->ngpu, sizeof(*grown));
  if (!grown) return ENOMEM;
  h->gpus = grown;
  int at = h->ngpu;
  while (at > 0 && pci_busid_cmp(h->gpus[at - 1].busid, g->busid) > 0) at--;
  memmove(&h->gpus[at + 1], &h->gpus[at], (size_t)(h->ngpu - at) * sizeof(*g));
  h->gpus[at] = *g;
  h->ngpu++;
  for (int i = 0; i < h->ngpu; i++) snprintf(h->gpus[i].name, sizeof(h->gpus[i].name), "GPU%d", i);
  return 0;
}

static int sysfs_gpu(struct topo_host *h, const char *bdf) {
  long vendor = 0, cls = 0, device = 0;
  if (sysfs_read_long(&vendor, "bus/pci/devices/%s/vendor", bdf) ||
      sysfs_read_long(&cls, "bus/pci/devices/%s/class", bdf) ||
      !gpu_is_nvidia_gpu((unsigned)vendor, (unsigned)(cls >> 8)))
    return 0;
  struct topo_gpu g;
  memset(&g, 0, sizeof(g));
  scopy(g.busid, sizeof(g.busid), bdf);
  sysfs_read_long(&device, "bus/pci/devices/%s/device", bdf);
  g.device_id = (unsigned)device;
  long numa = -1;
  sysfs_read_long(&numa, "bus/pci/devices/%s/numa_node", bdf);
  g.numa = (int)numa;
  sysfs_read_str(g.cpus, sizeof(g.cpus), "bus/pci/devices/%s/local_cpulist", bdf);
  char path[PATH_MAX];
  if (sysfs_realpath(path, sizeof(path), "bus/pci/devices/%s", bdf) == 0)
    pci_chain_from_path(&g.chain, path, g.numa);
  return gpu_add(h, &g);
}

int gpu_discover_sysfs(struct topo_host *h) {
  enum { MAX_PCI = 1024 };
  char(*names)[SYSFS_NAME_MAX] = malloc(MAX_PCI * SYSFS_NAME_MAX);
  if (!names) return ENOMEM;
  int n, err = sysfs_list(names, MAX_PCI, &n, "bus/pci/devices");
  if (err)
    topo_note(h, "cannot list %s/bus/pci/devices: %s; GPUs unknown", h->sysfs_root, strerror(err));
  err = 0;
  for (int i = 0; i < n && !err; i++) err = sysfs_gpu(h, names[i]);
  free(names);
  return err;
}

/* Pass 5: distance of every port to every GPU, and each port's nearest
 * GPU (the plane rules and the main interface read them). */
void gpu_pass_distances(const struct topo_host *h, struct topo_choice *c) {
  for (int p = 0; p < h->nport; p++) {
    c->pc[p].gpu_class = PCI_CLASS_UNKNOWN;
    c->pc[p].nearest_gpu = -1;
  }
  for (int g = 0; g < h->ngpu; g++) {
    struct topo_gpu_choice *gc = &c->gpu_choices[g];
    for (int p = 0; p < h->nport; p++) {
      enum pci_class k = pci_classify(&h->gpus[g].chain, &h->hcas[h->ports[p].hca].chain);
      gc->port_classes[p] = k;
      if (k < c->pc[p].gpu_class) c->pc[p].gpu_class = k, c->pc[p].nearest_gpu = g;
    }
  }
}

/* Pass 10, once the devices are ordered: each GPU's nearest chosen
 * devices (all those at the best class). */
void gpu_pass_nearest(const struct topo_host *h, struct topo_choice *c) {
  for (int g = 0; g < h->ngpu; g++) {
    struct topo_gpu_choice *gc = &c->gpu_choices[g];
    gc->nearest_class = PCI_CLASS_UNKNOWN;
    gc->nnearest = 0;
    for (int d = 0; d < c->ndev; d++) {
      enum pci_class k = gc->port_classes[c->dev[d].port];
      if (k < gc->nearest_class) gc->nearest_class = k, gc->nnearest = 0;
      if (k == gc->nearest_class && k != PCI_CLASS_UNKNOWN) gc->nearest[gc->nnearest++] = d;
    }
  }
}
