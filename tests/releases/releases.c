/* SPDX-License-Identifier: Apache-2.0 */
/* The rows of releases.h. Each cites what was read at its tag:
 * - loader: the dlsym order of ncclNetPlugin_vN (src/net.cc ncclNetPluginInit
 *   until 2.25; src/plugin/net.cc ncclNetPluginLoad with getNcclNet_vN in
 *   src/plugin/net/net_vN.cc from 2.26); a table before v9 has no
 *   makeVDevice (the vN_as_v9 adapters set it NULL), so no fusion runs.
 * - lifetime: init once per process until 2.25 (ncclNetInit); 2.26-2.27
 *   load per communicator under netPluginRefCount, which starts at
 *   NCCL_NET_PLUGIN_REF_COUNT=1; 2.28 on, ncclNetPluginInit calls
 *   init(&comm->netContext, ...) per communicator, ncclNetPluginFinalize
 *   calls finalize(ctx) and, at count 0 (NCCL_NET_PLUGIN_REF_COUNT=0),
 *   ncclNetPluginUnload closes the library and resets netPhysDevs; the
 *   next load counts devices() as physical again.
 * - fusion: src/graph/topo.cc ncclTopoMakeVNics, ncclTopoForceMerge,
 *   ncclTopoAutoMerge, ncclTopoMakeVnic. 2.24/2.25: ncclTopoMakeVnic calls
 *   makeVDevice for every group, a group of one too, and NCCLCHECKs
 *   ncclInvalidUsage (fatal; other codes pass). 2.26: any failure returns,
 *   AutoMerge unplaces the group and sets i = 0 (then i++). 2.27 on:
 *   "Don't make vNics of size 1" returns before makeVDevice. Default level
 *   PATH_PORT; NCCL_NET_MERGE_LEVEL=LOC|PORT|PIX|PXB|PXN|PHB|SYS.
 * - properties: ncclTopoPopulateNics reads name, pciPath, speed, port,
 *   latency, guid, maxComms, ptrSupport (GDR); from 2.24 to 2.26 the
 *   physical devices get keep=0 once any virtual device exists, from 2.27
 *   only the fused members do (ncclTopoMakeVnic; 2.30 via
 *   ncclTopoUpdateVNics). 2.30.7 reads railId for NCCL_NET_MERGE_POLICY=RAIL
 *   in ncclTopoAutoMerge (not 2.30.3 or 2.30.4: the policy came in 2.30.7).
 * - connections: src/transport/net.cc: connect and accept return a NULL
 *   comm to ask to be called again; the listen comm is closed as soon as
 *   accept completes (recvProxyConnect); deregMr before closeSend/closeRecv
 *   (sendProxyFree/recvProxyFree). */
#include "releases.h"

#include <string.h>

#define V5_UP                                                                                      \
  { 5, 4, 0 }
#define V6_UP                                                                                      \
  { 6, 5, 4, 0 }
#define V7_UP                                                                                      \
  { 7, 6, 5, 0 }
#define V8_UP                                                                                      \
  { 8, 7, 6, 5, 0 }
#define V9_UP                                                                                      \
  { 9, 8, 7, 6, 5, 0 }
#define V10_UP                                                                                     \
  { 10, 9, 8, 7, 6, 0 }
#define V11_UP                                                                                     \
  { 11, 10, 9, 8, 7, 6, 0 }
#define V12_UP                                                                                     \
  { 12, 11, 10, 9, 8, 7, 6, 0 }

#define OLD_LOADER "src/net.cc ncclNetPluginInit"
#define NEW_LOADER "src/plugin/net.cc ncclNetPluginLoad"
#define NO_MERGE "-"
#define AUTO_MERGE "src/graph/topo.cc ncclTopoAutoMerge/ncclTopoMakeVnic"

const struct nccl_release nccl_releases[] = {
  {"2.12", "v2.12.12-1", V5_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.13", "v2.13.4-1", V6_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.14", "v2.14.3-1", V6_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.15", "v2.15.5-1", V6_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.16", "v2.16.5-1", V6_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.17", "v2.17.1-1", V6_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.18", "v2.18.6-1", V6_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.19", "v2.19.4-1", V7_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.20", "v2.20.5-1", V8_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.21", "v2.21.5-1", V8_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.22", "v2.22.3-1", V8_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.23", "v2.23.4-1", V8_UP, LIFE_PROCESS, MERGE_NONE, false, OLD_LOADER, NO_MERGE},
  {"2.24", "v2.24.3-1", V9_UP, LIFE_PROCESS, MERGE_ALL_FATAL, false, OLD_LOADER, AUTO_MERGE},
  {"2.25", "v2.25.1-1", V9_UP, LIFE_PROCESS, MERGE_ALL_FATAL, false, OLD_LOADER, AUTO_MERGE},
  {"2.26", "v2.26.6-1", V10_UP, LIFE_REFCOUNTED, MERGE_ALL_RESCAN, false, NEW_LOADER, AUTO_MERGE},
  {"2.27", "v2.27.7-1", V10_UP, LIFE_REFCOUNTED, MERGE_SKIP_SINGLE, false, NEW_LOADER, AUTO_MERGE},
  {"2.28", "v2.28.9-1", V11_UP, LIFE_PER_COMM, MERGE_SKIP_SINGLE, false, NEW_LOADER, AUTO_MERGE},
  {"2.29", "v2.29.7-1", V11_UP, LIFE_PER_COMM, MERGE_SKIP_SINGLE, false, NEW_LOADER, AUTO_MERGE},
  {"2.30", "v2.30.7-1", V12_UP, LIFE_PER_COMM, MERGE_SKIP_SINGLE, true, NEW_LOADER, AUTO_MERGE},
};
const int nccl_nreleases = (int)(sizeof(nccl_releases) / sizeof(nccl_releases[0]));

const struct nccl_release *release_find(const char *minor) {
  for (int i = 0; i < nccl_nreleases; i++)
    if (!strcmp(nccl_releases[i].minor, minor)) return &nccl_releases[i];
  return NULL;
}

int release_max_devs_per_nic(const struct nccl_release *r, int abi) {
  return r->has_rail_policy && abi >= 12 ? 8 : 4;
}
