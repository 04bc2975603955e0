/* SPDX-License-Identifier: Apache-2.0 */
/* Virtual devices through makeVDevice (v9+), on the fixture host with one
 * dual-port card: NCCL fuses its two ports; the new device must get the
 * next index, the fused properties (names joined with '+', speeds summed,
 * vProps naming both ports, the first port's PCI path), and carry data: its
 * connections take the two ports in turn, both ends on the same port.
 * Fusions NCCL's IB transport refuses are refused, and NCCL_IB_MERGE_NICS=0
 * refuses all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

static void close_comm(struct side *s, void *comm) {
  if (!comm) return;
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
}

/* Tables before v9 have no makeVDevice (NCCL never fuses through them):
 * checked, and the case ends there. */
static int no_table(struct side *s) {
  if (s->abi >= 9) return 0;
  int vd = -1, devs[2] = {0, 1};
  CHECK(netload_make_vdevice(&s->nl, 2, devs, &vd) == ncclInternalError, "v%d fused", s->abi);
  side_close(s);
  return 1;
}

/* Both ports, fused: the new device's index and properties. -1 on failure. */
static int fuse(struct side *s) {
  int n = 0, vd = -1;
  netload_devices(&s->nl, &n);
  CHECK(n == 2, "the dual-port host shows %d devices, expected its 2 ports", n);
  if (n != 2) return -1;
  struct netload_props p0, p1, pv;
  netload_props(&s->nl, 0, &p0);
  netload_props(&s->nl, 1, &p1);
  CHECK(p0.vdevs == 1 && p0.vdev_members[0] == 0, "port 0's vProps: %d devices", p0.vdevs);
  int devs[2] = {0, 1};
  int r = netload_make_vdevice(&s->nl, 2, devs, &vd);
  CHECK(r == ncclSuccess && vd == 2, "makeVDevice returned %d, device %d (expected 2)", r, vd);
  if (r != ncclSuccess) return -1;
  netload_devices(&s->nl, &n);
  CHECK(n == 3, "devices() after makeVDevice: %d, expected 3", n);
  CHECK(netload_props(&s->nl, vd, &pv) == ncclSuccess, "getProperties of the virtual device");
  char name[160];
  snprintf(name, sizeof(name), "%s+%s", p0.name, p1.name);
  CHECK(!strcmp(pv.name, name), "virtual device name %s, expected %s", pv.name, name);
  CHECK(pv.speed == p0.speed + p1.speed, "speed %d, expected %d + %d", pv.speed, p0.speed,
        p1.speed);
  CHECK(pv.vdevs == 2 && pv.vdev_members[0] == 0 && pv.vdev_members[1] == 1,
        "vProps: %d devices [%d %d]", pv.vdevs, pv.vdev_members[0], pv.vdev_members[1]);
  CHECK(!strcmp(pv.pci_path, p0.pci_path), "pciPath %s, expected the first port's %s", pv.pci_path,
        p0.pci_path);
  CHECK(pv.ptr_support == (p0.ptr_support & p1.ptr_support), "ptrSupport 0x%x", pv.ptr_support);
  CHECK(pv.max_comms == p0.max_comms && pv.max_recvs == p0.max_recvs, "maxComms %d maxRecvs %d",
        pv.max_comms, pv.max_recvs);
  return vd;
}

void case_vdev_fuse(struct side *s) {
  if (use_fixture(s, ROLE_RECV, "roce-dual-port") || use_fixture(s, ROLE_SEND, "roce-dual-port"))
    return;
  if (side_open(s) || no_table(s)) return;
  int vd = fuse(s);
  if (vd < 0) return;
  s->dev = vd;
  struct netload_props p0, p1;
  netload_props(&s->nl, 0, &p0);
  netload_props(&s->nl, 1, &p1);
  /* Connections take the ports in turn, the connector the listener's
   * (each then stripes over both: both ends are fused, cases_stripe.c). */
  void *comms[2] = {NULL, NULL};
  for (int c = 0; c < 2; c++) {
    log_clear();
    if (pair_open(s, &comms[c])) return;
    char on[96];
    snprintf(on, sizeof(on), "on %s port 1: RDMA", c ? p1.name : p0.name);
    CHECK(log_find(NCCL_LOG_INFO, on), "connection %d over the virtual device is not '%s'", c, on);
  }
  for (unsigned i = 0; i < 6; i++)
    CHECK(xfer_one(s, comms[i % 2], (size_t)i * 150007, 1 << 20, i) == 0, "transfer %u", i);
  ctl_sync(s);
  close_comm(s, comms[0]);
  close_comm(s, comms[1]);
  side_close(s);
}

void case_vdev_refused(struct side *s) {
  if (use_fixture(s, ROLE_SINGLE, "roce-dual-port")) return;
  if (side_open(s) || no_table(s)) return;
  int vd = -1, none[1] = {0}, twice[2] = {0, 0}, out[2] = {0, 7};
  CHECK(netload_make_vdevice(&s->nl, 0, none, &vd) != ncclSuccess, "0 devices accepted");
  CHECK(netload_make_vdevice(&s->nl, 2, twice, &vd) != ncclSuccess, "a port named twice accepted");
  CHECK(log_find(NCCL_LOG_WARN, "named twice"), "no WARN for a port named twice");
  CHECK(netload_make_vdevice(&s->nl, 2, out, &vd) != ncclSuccess, "device 7 accepted");
  CHECK(log_find(NCCL_LOG_WARN, "device 7 is not a physical device"), "no WARN naming device 7");
  int n = 0;
  netload_devices(&s->nl, &n);
  CHECK(n == 2, "refused fusions changed the device count to %d", n);
  side_close(s);
}

void case_vdev_merge_off(struct side *s) {
  setenv("NCCL_IB_MERGE_NICS", "0", 1);
  if (use_fixture(s, ROLE_SINGLE, "roce-dual-port")) return;
  if (side_open(s) || no_table(s)) return;
  int vd = -1, devs[2] = {0, 1}, n = 0;
  CHECK(netload_make_vdevice(&s->nl, 2, devs, &vd) != ncclSuccess,
        "NCCL_IB_MERGE_NICS=0 and two ports were fused into device %d", vd);
  CHECK(log_find(NCCL_LOG_INFO, "NCCL_IB_MERGE_NICS=0"), "the refusal does not name the setting");
  CHECK(log_count(NCCL_LOG_WARN, "makeVDevice") == 0,
        "a refusal NCCL_IB_MERGE_NICS asked for WARNs");
  netload_devices(&s->nl, &n);
  CHECK(n == 2, "devices() %d, expected 2", n);
  side_close(s);
}

/* A TCP interface alone is a virtual device of one (NCCL 2.24 to 2.26 ask
 * for every device and fail or spin on a refusal): made quietly, the next
 * index, its own name, one member; asked again after the last finalize,
 * the same members get the same index back. */
void case_vdev_tcp(struct side *s) {
  if (side_open(s) || no_table(s)) return;
  int n0 = 0, n = 0, vd = -1, devs[1] = {0};
  netload_devices(&s->nl, &n0);
  struct netload_props p0, pv;
  netload_props(&s->nl, 0, &p0);
  CHECK(netload_make_vdevice(&s->nl, 1, devs, &vd) == ncclSuccess && vd == n0,
        "a TCP interface alone was not made virtual device %d (got %d)", n0, vd);
  CHECK(log_count(NCCL_LOG_WARN, "makeVDevice") == 0, "making it WARNs");
  netload_devices(&s->nl, &n);
  CHECK(n == n0 + 1, "devices() %d, expected %d", n, n0 + 1);
  CHECK(netload_props(&s->nl, vd, &pv) == ncclSuccess && !strcmp(pv.name, p0.name) &&
          pv.vdevs == 1 && pv.vdev_members[0] == 0,
        "virtual device %d: %s with %d members, expected %s alone", vd, pv.name, pv.vdevs, p0.name);
  side_close(s);
}

/* NCCL_IB_RESILIENCY_PORT_FAILOVER=1 (NCCL 2.29) on a single port: one INFO
 * says where a connection would move (the host's other port); data moves
 * as without it. On the virtual
 * device it takes effect (tests/api/cases_failover.c) and that INFO is not
 * said again. */
void case_vdev_failover_knob(struct side *s) {
  setenv("NCCL_IB_RESILIENCY_PORT_FAILOVER", "1", 1);
  if (use_fixture(s, ROLE_RECV, "roce-dual-port") || use_fixture(s, ROLE_SEND, "roce-dual-port"))
    return;
  if (side_open(s) || no_table(s)) return;
  void *comm = NULL;
  s->dev = 1;
  if (pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 150007, 1 << 20, 1) == 0, "transfer on a single port");
  const char *i = log_find(NCCL_LOG_INFO, "NCCL_IB_RESILIENCY_PORT_FAILOVER=1 on device");
  CHECK(i && strstr(i, "mlx5_1") && strstr(i, "a single port") &&
          strstr(i, "1 other RDMA ports that is on the peer's subnet") &&
          strstr(i, "NCCL_IB_MERGE_NICS=1"),
        "the single port names the setting, the device and where it moves: %s", i ? i : "none");
  ctl_sync(s);
  close_comm(s, comm);
  int vd = fuse(s);
  if (vd < 0) return;
  s->dev = vd;
  comm = NULL;
  if (pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 300007, 1 << 20, 2) == 0, "transfer over the virtual device");
  CHECK(log_count(NCCL_LOG_INFO, "NCCL_IB_RESILIENCY_PORT_FAILOVER=1 on device") == 1,
        "said %d times", log_count(NCCL_LOG_INFO, "NCCL_IB_RESILIENCY_PORT_FAILOVER=1 on device"));
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}
