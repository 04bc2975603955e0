/* SPDX-License-Identifier: Apache-2.0 */
/* What each NCCL minor release's core does with a net plugin, read from its
 * source at the tag named in each row (NVIDIA/nccl). One row per minor
 * release 2.12 to 2.30; replay.c plays a row against the built plugin. */
#ifndef DIAG_TESTS_RELEASES_H
#define DIAG_TESTS_RELEASES_H

#include <stdbool.h>

/* When init and finalize run and whether the library is closed between. */
enum rel_life {
  LIFE_PROCESS,    /* dlopen and init once per process, never closed (until 2.25) */
  LIFE_REFCOUNTED, /* loaded per communicator under a count that starts at
                    * NCCL_NET_PLUGIN_REF_COUNT=1, so never closed (2.26, 2.27) */
  LIFE_PER_COMM,   /* init(ctx)/finalize(ctx) per communicator; the last finalize
                    * closes the library and the next communicator reopens it and
                    * counts devices() afresh as physical ones (2.28 on) */
};

/* How the automatic NIC fusion (ncclTopoAutoMerge) runs. */
enum rel_merge {
  MERGE_NONE,        /* no makeVDevice in the release */
  MERGE_ALL_FATAL,   /* every group, single devices too; ncclInvalidUsage is fatal */
  MERGE_ALL_RESCAN,  /* every group; a refused group is unplaced and the scan
                      * restarts with i = 0 and then i++ (index 0 is never rescanned) */
  MERGE_SKIP_SINGLE, /* groups of one are never passed; refusals rescan as above */
};

struct nccl_release {
  const char *minor; /* "2.24" */
  const char *tag;   /* the tag read */
  int syms[8];       /* ncclNetPlugin_vN the loader tries, in its order, 0 ends */
  enum rel_life life;
  enum rel_merge merge;
  bool has_rail_policy; /* NCCL_NET_MERGE_POLICY=RAIL reads railId (2.30.7) */
  const char *loader;   /* file and function of the symbol lookup */
  const char *merge_at; /* file and function of the fusion loop */
};

extern const struct nccl_release nccl_releases[];
extern const int nccl_nreleases;

/* The row for "2.26", or NULL. */
const struct nccl_release *release_find(const char *minor);
/* Devices per virtual NIC for a bound table: 8 for v12 in 2.30
 * (topo.cc ncclTopoGetSystem: maxDevsPerNic), 4 before. */
int release_max_devs_per_nic(const struct nccl_release *r, int abi);

#endif
