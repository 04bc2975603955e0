/* SPDX-License-Identifier: Apache-2.0 */
/* The property fields every table from v5 to v8 has (by name: v8 inserts
 * regIsGlobal between them, so the layouts differ). None of them carries
 * maxP2pBytes: NCCL assumes MAX_NET_SIZE, the same 1 GiB the plugin takes
 * per message through every table. */
#ifndef DIAG_PLUGIN_PROPS_V6_H
#define DIAG_PLUGIN_PROPS_V6_H

#include "plugin/api.h"

_Static_assert(DIAG_MAX_P2P_BYTES == MAX_NET_SIZE,
               "the tables before v9 cannot say maxP2pBytes: it must be what NCCL assumes");

#define DIAG_FILL_PROPS_V6(p, d)                                                                   \
  do {                                                                                             \
    (p)->name = (d).name;                                                                          \
    (p)->pciPath = (d).pci_path;                                                                   \
    (p)->guid = (d).guid;                                                                          \
    (p)->ptrSupport = (d).ptr_support;                                                             \
    (p)->speed = (d).speed;                                                                        \
    (p)->port = (d).port;                                                                          \
    (p)->latency = (d).latency;                                                                    \
    (p)->maxComms = (d).max_comms;                                                                 \
    (p)->maxRecvs = (d).max_recvs;                                                                 \
  } while (0)

#endif
