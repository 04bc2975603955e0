/* SPDX-License-Identifier: Apache-2.0 */
/* What the topo/ files share among themselves; not for other modules. */
#ifndef DIAG_TOPO_INTERNAL_H
#define DIAG_TOPO_INTERNAL_H

#include <stddef.h>

#include "topo/topo.h"

/* array (n elements of size bytes) grown by one zeroed element; NULL when
 * out of memory, array then unchanged. */
void *topo_grow(void *array, int n, size_t size);

/* Records a tolerated problem of discovery (an unreadable file, a missing
 * entry) for the report. Also logged at INFO (NET). */
void topo_note(struct topo_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* topo/rdma.c: RDMA devices, ports and GID tables. 0 or ENOMEM (nothing
 * else is fatal: a host without RDMA gets h->why_no_rdma). */
int rdma_discover(struct topo_host *h);
/* Facts from the interface list: netdev state, MTU, address prefixes. */
void rdma_annotate(struct topo_host *h);

/* topo/hwloc.c: GPUs and the PCI chains of the RDMA devices from hwloc.
 * 0 when hwloc was used; ENOMEM; otherwise an errno and why says why hwloc
 * is not used (not installed, disabled, no XML beside a fixture root, ...). */
int topo_hwloc_discover(struct topo_host *h, char *why, size_t cap);

/* topo/gpu.c: GPUs from sysfs (vendor 0x10de, display/3D class), the
 * fallback when hwloc is not used. 0 or ENOMEM. */
int gpu_discover_sysfs(struct topo_host *h);
/* Adds a GPU, keeping the list in PCI bus order; names them GPU0...
 * 0 or ENOMEM. */
int gpu_add(struct topo_host *h, const struct topo_gpu *g);
bool gpu_is_nvidia_gpu(unsigned vendor, unsigned class_id);

/* topo/decide.c: records a problem for the report (NULL, and counted in
 * nissue_lost, when memory runs out); errors are counted either way. */
struct topo_issue *topo_issue(struct topo_choice *c, enum topo_severity sev, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* The WARN line topo_report logs for issue i (none unless set). */
void topo_issue_warn(struct topo_choice *c, struct topo_issue *i, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
/* The fix of issue i, on its own (doctor --json lists it). */
void topo_issue_fix(struct topo_choice *c, struct topo_issue *i, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

/* topo/plane.c: which interface carries bootstrap, and the plane rules. */
void plane_pass_main_interface(const struct topo_host *h, struct topo_choice *c);
void plane_pass_rules(const struct topo_host *h, struct topo_choice *c);

/* topo/hca.c: port state and NCCL_IB_DISABLE; NCCL_IB_HCA; device order. */
void hca_pass_ports(const struct topo_host *h, struct topo_choice *c);
void hca_pass_filter(const struct topo_host *h, struct topo_choice *c);
void hca_pass_devices(const struct topo_host *h, struct topo_choice *c);
/* Sorts port indices into NCCL's device order. */
void hca_sort_ports(const struct topo_host *h, int *ports, int n);

/* topo/gpu.c: every port's distance to every GPU and its nearest GPU;
 * then, with the devices ordered, each GPU's nearest devices. */
void gpu_pass_distances(const struct topo_host *h, struct topo_choice *c);
void gpu_pass_nearest(const struct topo_host *h, struct topo_choice *c);

/* topo/sriov.c: a physical function and its virtual functions both kept. */
void sriov_pass(const struct topo_host *h, struct topo_choice *c);

/* topo/linkrate.c: a chosen port that links below its model's other ports. */
void linkrate_pass(const struct topo_host *h, struct topo_choice *c);

/* topo/pkey.c: the P_Key NCCL_IB_PKEY selects on each chosen port. */
void pkey_pass(const struct topo_host *h, struct topo_choice *c);

/* topo/advice.c: recommended settings. */
void advice_pass_settings(const struct topo_host *h, struct topo_choice *c);
/* topo/sockadvice.c: the socket interface part of the settings pass: the
 * problems of the main interface and of NCCL's own choice, and the
 * NCCL_SOCKET_IFNAME to set. */
void sockadvice_pass(const struct topo_host *h, struct topo_choice *c);

#endif
