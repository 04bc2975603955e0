/* SPDX-License-Identifier: Apache-2.0 */
/* topo_discover: interfaces, RDMA devices, GPUs and PCI chains. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/strutil.h"
#include "topo/internal.h"
#include "topo/sysfs.h"

/* GPUs and PCI chains from hwloc, else from sysfs paths; 0 or ENOMEM. */
static int pci_source(struct topo_host *h) {
  static atomic_int said;
  char why[320];
  h->has_gpu_list = true;
  int r = topo_hwloc_discover(h, why, sizeof(why));
  if (r == 0 || r == ENOMEM) return r;
  snprintf(h->pci_source, sizeof(h->pci_source), "sysfs PCI paths, as NCCL reads them (%s)", why);
  if (!atomic_exchange(&said, 1))
    INFO(LOG_INIT, "GPUs and PCI distances from sysfs paths, as NCCL computes them: %s", why);
  return gpu_discover_sysfs(h);
}

int topo_discover(struct topo_host *h, int flags) {
  memset(h, 0, sizeof(*h));
  scopy(h->sysfs_root, sizeof(h->sysfs_root), sysfs_root());
  int r = netif_discover(&h->ifs);
  if (r) return r;
  netif_default_route(&h->ifs, h->default_route_if, sizeof(h->default_route_if));
  r = rdma_discover(h);
  if (!r) rdma_annotate(h);
  if (!r && (h->has_rdma || (flags & TOPO_WANT_GPUS))) r = pci_source(h);
  else if (!r) snprintf(h->pci_source, sizeof(h->pci_source), "not read: no RDMA device to place");
  if (r) WARN("cannot discover this host's topology under %s: %s", h->sysfs_root, strerror(r));
  return r;
}

void topo_host_free(struct topo_host *h) {
  for (int p = 0; p < h->nport; p++) free(h->ports[p].gids), free(h->ports[p].pkeys);
  for (int i = 0; i < h->nnote; i++) free(h->notes[i]);
  free(h->hcas);
  free(h->ports);
  free(h->gpus);
  free(h->notes);
  netif_list_free(&h->ifs);
  memset(h, 0, sizeof(*h));
}

const char *topo_ll_name(enum topo_ll ll) {
  return ll == TOPO_LL_IB ? "IB" : ll == TOPO_LL_ETH ? "RoCE" : "unknown";
}

const char *topo_verdict_name(enum topo_verdict v) {
  static const char *const names[] = {"chosen", "state", "filter",  "gid",
                                      "plane",  "limit", "disabled"};
  return v >= TV_CHOSEN && v <= TV_DISABLED ? names[v] : "?";
}

const char *gid_type_name(enum gid_type t, enum topo_ll ll) {
  if (t == GID_TYPE_V2) return "RoCE v2";
  if (t == GID_TYPE_V1) return ll == TOPO_LL_IB ? "IB" : "RoCE v1";
  return "unknown";
}

void topo_port_label(const struct topo_host *h, int port, char *buf, size_t cap) {
  snprintf(buf, cap, "%s:%d", h->hcas[h->ports[port].hca].name, h->ports[port].num);
}
