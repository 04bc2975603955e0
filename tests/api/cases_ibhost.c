/* SPDX-License-Identifier: Apache-2.0 */
/* What an RDMA host offers NCCL, rebuilt from field layouts (over
 * softverbs): the devices and their properties, and the one warning that
 * names a layout NCCL would misread, with its fix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

/* SR-IOV with the host's whole /sys in a container: the physical function
 * mlx5_0 and its virtual function mlx5_2 are one physical port. Neither is
 * numbered as another port of the other, they do not share a GUID (NCCL
 * groups ports of one NIC by it), and one warning says what to do. */
void case_ib_pf_vf(struct side *s) {
  if (use_fixture(s, ROLE_SINGLE, "sriov-pf-vf") || side_open(s)) return;
  int n = 0;
  netload_devices(&s->nl, &n);
  CHECK(n == 2, "both functions are devices: %d", n);
  struct netload_props p[2];
  for (int i = 0; i < n && i < 2; i++) netload_props(&s->nl, i, &p[i]);
  if (n == 2) {
    CHECK(!strcmp(p[0].name, "mlx5_0") && !strcmp(p[1].name, "mlx5_2"), "devices %s, %s", p[0].name,
          p[1].name);
    CHECK(p[0].port == 1 && p[1].port == 1,
          "the virtual function is numbered as port %d of the physical function's NIC", p[1].port);
    CHECK(p[0].guid != p[1].guid, "both report GUID 0x%llx: NCCL would take them for one NIC",
          (unsigned long long)p[0].guid);
    CHECK(strstr(p[1].pci_path, "0000:3b:00.2") != NULL, "the VF's own PCI path: %s",
          p[1].pci_path);
  }
  const char *w = log_find(NCCL_LOG_WARN, "one physical port");
  CHECK(w && strstr(w, "mlx5_0 (0000:3b:00.0") && strstr(w, "virtual function of 0000:3b:00.0") &&
          strstr(w, "NCCL_IB_HCA==mlx5_2") && strstr(w, "NCCL_IB_MERGE_NICS=0"),
        "one warning with both functions and the fix: %s", w ? w : "none");
  CHECK(log_count(NCCL_LOG_WARN, "one physical port") == 1, "the warning is said once");
  side_close(s);
}
