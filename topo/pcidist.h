/* SPDX-License-Identifier: Apache-2.0 */
/* PCI distance between two devices (a GPU and a NIC), the way NCCL's own
 * topology computes it, so that what we call "near" is what NCCL calls near.
 *
 * NCCL (src/graph/xml.cc, topo.cc, paths.cc) builds its PCI graph from the
 * sysfs path of each device: a device's parent is found by going up TWO
 * directories, skipping the switch's downstream port, so one PCIe switch
 * (upstream port plus its downstream ports) becomes ONE node, named after
 * its upstream port with the function digit zeroed; reaching a "pci0000:xx"
 * directory means the CPU (one node per NUMA node). A path's type is the
 * worst of its links: device-switch PIX, switch-switch PXB, anything-CPU
 * PHB, CPU-CPU SYS. Hence:
 *   PIX  both devices hang below one switch node (different downstream ports
 *        of one PCIe switch count as PIX: NCCL collapses the switch);
 *   PXB  they meet at a switch node with another switch between;
 *   PHB  they meet only at the CPU of one NUMA node;
 *   SYS  their NUMA nodes differ.
 * We follow NCCL's definition, and split its PHB the way nvidia-smi topo -m
 * does, because users compare with that table:
 *   PHB  one host bridge (same pci0000:xx root complex);
 *   NODE two host bridges of one NUMA node (NCCL still says PHB).
 * Naive bridge counting (hwloc's common ancestor) would call two downstream
 * ports of one switch PXB; we do not. */
#ifndef DIAG_TOPO_PCIDIST_H
#define DIAG_TOPO_PCIDIST_H

#include <stdbool.h>
#include <stddef.h>

#define PCI_CHAIN_MAX 12
#define PCI_BUSID_LEN 16

enum pci_class {
  PCI_CLASS_LOC,
  PCI_CLASS_PIX,
  PCI_CLASS_PXB,
  PCI_CLASS_PHB,
  PCI_CLASS_NODE,
  PCI_CLASS_SYS,
  PCI_CLASS_UNKNOWN
};

/* A device's place in the PCI tree: the host bridge, then every BDF from the
 * root port down to the device itself. Built from a sysfs path or from
 * hwloc's parent objects; both give the same chain. */
struct pci_chain {
  char root[PCI_BUSID_LEN]; /* "pci0000:16", "" unknown */
  int nbdf;
  char bdfs[PCI_CHAIN_MAX][PCI_BUSID_LEN]; /* bdfs[nbdf-1] is the device */
  int numa;                                /* -1 unknown */
};

/* From a device's real sysfs path (".../devices/pci0000:16/0000:16:02.0/
 * 0000:17:00.0"). 0, or EINVAL when the path has no PCI part (virtual or
 * virtio devices: the chain ends at the last BDF found, if any). */
int pci_chain_from_path(struct pci_chain *c, const char *path, int numa);

enum pci_class pci_classify(const struct pci_chain *a, const struct pci_chain *b);
/* NCCL's own name for the class (NODE -> PHB). */
enum pci_class pci_class_nccl(enum pci_class c);
const char *pci_class_name(enum pci_class c);

/* "0000:1a:00.0" -> true; accepts "0000:1a:00.0" only. */
bool pci_is_bdf(const char *s);
/* Orders bus ids numerically ("0000:9a:00.0" < "0000:c0:00.0"). */
int pci_busid_cmp(const char *a, const char *b);

#endif
