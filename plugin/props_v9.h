/* SPDX-License-Identifier: Apache-2.0 */
/* v9, v10 and v11 share the property layout up to maxCollBytes. */
#ifndef DIAG_PLUGIN_PROPS_V9_H
#define DIAG_PLUGIN_PROPS_V9_H

#include "plugin/api.h"

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
    (p)->vProps.ndevs = 1;                                                                         \
    (p)->vProps.devs[0] = (dev);                                                                   \
    (p)->maxP2pBytes = (d).max_p2p_bytes;                                                          \
    (p)->maxCollBytes = (d).max_coll_bytes;                                                        \
  } while (0)

#endif
