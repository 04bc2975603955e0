/* SPDX-License-Identifier: Apache-2.0 */
/* Virtual devices (makeVDevice, v9+): NCCL groups physical devices that
 * share a NIC (the two ports of a dual-port card) and asks the plugin to
 * fuse them. A virtual device gets the next index after the physical ones
 * and the others before it; its properties are the fused ones (names
 * joined with '+', speeds summed, the pointer support all share). Data is
 * spread by connection, not by message: each listen over it takes the next
 * member port (round-robin, skipping ports seen down), and the connector
 * takes its own port of the same index as the listener's when it has one
 * (the same port of the same card: the same rail), else its first port not
 * seen down. With two or more connections per virtual device, as NCCL
 * opens (one per channel), every port carries traffic. With
 * NCCL_IB_RESILIENCY_PORT_FAILOVER=1 a connection whose port fails moves to
 * another member port that is up (transport/ib/failover/ib_failover.c). */
#ifndef DIAG_PLUGIN_VDEV_H
#define DIAG_PLUGIN_VDEV_H

#include "plugin/api.h"
#include "transport/transport.h"

#define DIAG_VDEV_MAX_DEVS 8 /* members, as v12 carries (v9-v11: 4) */

struct diag_vdev {
  unsigned next_listen; /* round-robin position (atomic) */
  int ndevs;
  int devs[DIAG_VDEV_MAX_DEVS]; /* physical device indices */
  char name[DIAG_VDEV_MAX_DEVS * 65];
  int speed_mbps;
  int ptr_support;
  int rail_id, plane_id; /* as NCCL 2.30's IB transport fuses them (see vdev.c) */
};

/* cap: the members the table's vProps can hold (4, or 8 from v12). */
ncclResult_t diag_make_vdevice(int *dev, int ndevs, const int *devs, int cap);
/* Virtual devices devices() reports. */
int diag_vdev_count(void);
/* The last communicator was finalized: NCCL 2.28 on then closes the
 * library, and on its next load counts devices() as physical ones and
 * fuses again (src/plugin/net.cc ncclNetPluginUnload, ncclNetPluginInit).
 * With -z nodelete our state survives, so devices() reports the physical
 * devices only until makeVDevice asks again; a request for the same
 * members in the same order gets the same index back. A release that
 * keeps the library loaded (NCCL_NET_PLUGIN_REF_COUNT=1) keeps using the
 * indices it has: the first call on one of them makes devices() report
 * them again. */
void diag_vdev_forget(void);
/* The virtual device behind index dev (physical count and above), or NULL. */
const struct diag_vdev *diag_vdev_get(int dev);
/* The first member port not seen down. */
const struct transport_dev *diag_vdev_member(const struct diag_vdev *v);
/* The port a listen (handle NULL) or a connect (the listener's handle)
 * over device dev uses; NULL when dev is not a virtual device. */
const struct transport_dev *diag_vdev_pick(int dev, const void *handle);

/* The rail and plane of a physical device (-1 unknown): the 3rd and 4th
 * fields of its NCCL_IB_HCA entry (name:port:rail:plane), as NCCL 2.30's IB
 * transport reports them; a TCP interface has neither. */
void diag_dev_rail_plane(const struct transport_dev *d, int *rail, int *plane);

/* With NCCL_IB_RESILIENCY_PORT_FAILOVER=1, once per process: an INFO that
 * the setting has no effect on a single RDMA port (dev, member d). */
void diag_vdev_failover_note(int dev, const struct transport_dev *d);

#endif
