/* SPDX-License-Identifier: Apache-2.0 */
/* v9, v10 and v11 share the property layout up to maxCollBytes (v12 too,
 * with room for more vProps members). dev is the index NCCL asked about;
 * vProps come from the API (a physical device is its own only member). */
#ifndef DIAG_PLUGIN_PROPS_V9_H
#define DIAG_PLUGIN_PROPS_V9_H

#include "plugin/api.h"

#define DIAG_PROPS_NDEVS(p) ((int)(sizeof((p)->vProps.devs) / sizeof((p)->vProps.devs[0])))

#define DIAG_FILL_PROPS_V9(p, d, dev)                                                              \
  do {                                                                                             \
    (p)->name = (d).name;                                                                          \
    (p)->pciPath = (d).pci_path;                                                                   \
    (p)->guid = (d).guid;                                                                          \
    (p)->ptrSupport = (d).ptr_support;                                                             \
    (p)->regIsGlobal = (d).reg_is_global;                                                          \
    (p)->forceFlush = (d).force_flush;                                                             \
    (p)->speed = (d).speed;                                                                        \
    (p)->port = (d).port;                                                                          \
    (p)->latency = (d).latency;                                                                    \
    (p)->maxComms = (d).max_comms;                                                                 \
    (p)->maxRecvs = (d).max_recvs;                                                                 \
    (p)->netDeviceType = NCCL_NET_DEVICE_HOST;                                                     \
    (p)->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;                                       \
    (p)->vProps.ndevs = 0;                                                                         \
    for (int i_ = 0; i_ < (d).ndevs && i_ < DIAG_PROPS_NDEVS(p); i_++)                             \
      (p)->vProps.devs[(p)->vProps.ndevs++] = (d).devs[i_];                                        \
    (p)->maxP2pBytes = (d).max_p2p_bytes;                                                          \
    (p)->maxCollBytes = (d).max_coll_bytes;                                                        \
  } while (0)

#endif
