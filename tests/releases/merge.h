/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL's NIC fusion (ncclTopoMakeVNics) as each release runs it, over the
 * properties a plugin reported, calling the plugin's makeVDevice. */
#ifndef DIAG_TESTS_RELEASES_MERGE_H
#define DIAG_TESTS_RELEASES_MERGE_H

#include "releases.h"

/* NCCL's path types between two NICs, in its order (src/graph/topo.h). */
enum merge_path { P_LOC, P_PORT, P_PIX, P_PXB, P_PXN, P_PHB, P_SYS, P_DIS };

struct merge_dev {
  const char *name;
  const char *pci_path; /* "" when the device has none */
  int rail_id;          /* -1 undefined */
};

/* ncclResult_t of makeVDevice (0 = made). */
typedef int (*merge_make_fn)(void *arg, int ndevs, const int *devs);

enum merge_outcome { MERGE_DONE, MERGE_FATAL, MERGE_LOOPS };

struct merge_run {
  enum merge_outcome outcome;
  int calls, refused, refused_single;
  char why[256]; /* for FATAL and LOOPS */
};

struct merge_cfg {
  int level;         /* NCCL_NET_MERGE_LEVEL, default P_PORT */
  int max_per_nic;   /* 4, or 8 for a v12 table in 2.30 */
  bool rail_policy;  /* NCCL_NET_MERGE_POLICY=RAIL, where the release reads it */
  const char *force; /* NCCL_NET_FORCE_MERGE or NULL */
};

/* Reads NCCL_NET_MERGE_LEVEL, NCCL_NET_FORCE_MERGE, NCCL_NET_MERGE_POLICY
 * as release r does. */
void merge_cfg_from_env(const struct nccl_release *r, int abi, struct merge_cfg *c);
/* The path NCCL's topology gives two NICs, from their PCI paths: the
 * functions of one PCI device share a NIC node (PORT); the rest by the
 * deepest common PCI bridge; no PCI path: SYS (never fused by default). */
enum merge_path merge_path_of(const char *a, const char *b);
/* Runs the release's loop; never more than a bounded number of steps. */
void merge_play(const struct nccl_release *r, const struct merge_cfg *c,
                const struct merge_dev *devs, int n, merge_make_fn fn, void *arg,
                struct merge_run *out);

#endif
