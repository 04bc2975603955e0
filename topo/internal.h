/* SPDX-License-Identifier: Apache-2.0 */
/* What the topo/ files share among themselves; not for other modules. */
#ifndef DIAG_TOPO_INTERNAL_H
#define DIAG_TOPO_INTERNAL_H

#include <stddef.h>

#include "topo/topo.h"

/* Records a tolerated problem of discovery (an unreadable file, a missing
 * entry) for the report. Also logged at INFO (NET). */
void topo_note(struct topo_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* topo/rdma.c: RDMA devices, ports and GID tables. 0 or -errno (nothing
 * fatal: a host without RDMA gets h->no_rdma). */
int rdma_discover(struct topo_host *h);
/* Facts from the interface list: netdev state, MTU, address prefixes. */
void rdma_annotate(struct topo_host *h);

/* topo/hwloc.c: GPUs and the PCI chains of the RDMA devices from hwloc.
 * 0 when hwloc was used; otherwise a negative errno and why says why
 * (not installed, disabled, no XML beside a fixture root, ...). */
int topo_hwloc_discover(struct topo_host *h, char *why, size_t cap);

/* topo/gpu.c: GPUs from sysfs (vendor 0x10de, display/3D class), the
 * fallback when hwloc is not used. */
int gpu_discover_sysfs(struct topo_host *h);
/* Adds a GPU, keeping the list in PCI bus order; names them GPU0... */
void gpu_add(struct topo_host *h, const struct topo_gpu *g);
int gpu_is_nvidia_gpu(unsigned vendor, unsigned class_id);

/* topo/choose.c: every decision but the advice, with c->prefs and c->quiet
 * set (advice.c runs it again without NCCL_IB_HCA, quietly, to compare). */
void topo_decide(const struct topo_host *h, struct topo_choice *c);
/* helpers shared with plane.c and advice.c. */
void topo_issue(struct topo_choice *c, enum topo_sev sev, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* topo/plane.c: which interface carries bootstrap, and the plane rules. */
void plane_main_interface(const struct topo_host *h, struct topo_choice *c);
void plane_apply(const struct topo_host *h, struct topo_choice *c);

/* topo/hca.c: state and NCCL_IB_HCA per port; device order. */
void hca_screen(const struct topo_host *h, struct topo_choice *c);
void hca_order(const struct topo_host *h, struct topo_choice *c);
/* Whether an NCCL_IB_HCA text selects exactly the chosen devices. */
int hca_filter_selects_chosen(const struct topo_host *h, const struct topo_choice *c,
                              const char *text);

/* topo/gpu.c: every port's distance to every GPU and its nearest GPU; each
 * GPU's nearest chosen devices (run again once devices are ordered). */
void gpu_choose(const struct topo_host *h, struct topo_choice *c);
void gpu_log_all(const struct topo_host *h, const struct topo_choice *c);

/* topo/advice.c: recommended settings. */
void advice_build(const struct topo_host *h, struct topo_choice *c);

/* The ports' GID picks (topo/choose.c). */
void gid_choose_all(const struct topo_host *h, struct topo_choice *c);

#endif
