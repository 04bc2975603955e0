/* SPDX-License-Identifier: Apache-2.0 */
/* PCI distance classes (topo/pcidist.h), NCCL's definitions: a PCIe switch
 * is one node, so two downstream ports of one switch are PIX. */
#include <string.h>

#include "tap.h"
#include "topo/pcidist.h"

static struct pci_chain chain(const char *path, int numa) {
  struct pci_chain c;
  pci_chain_from_path(&c, path, numa);
  return c;
}

#define ROOT "/sys/devices/pci0000:15/0000:15:01.0"

struct row {
  const char *a, *b;
  int numa_a, numa_b;
  enum pci_class want;
  const char *what;
};

static const struct row rows[] = {
  {ROOT "/0000:16:00.0/0000:17:00.0/0000:18:00.0", ROOT "/0000:16:00.0/0000:17:01.0/0000:1b:00.0",
   0, 0, PCI_CLASS_PIX, "two downstream ports of one switch"},
  {ROOT "/0000:16:00.0/0000:17:00.0/0000:18:00.0",
   ROOT "/0000:16:00.0/0000:17:08.0/0000:19:00.0/0000:1a:00.0/0000:1b:00.0", 0, 0, PCI_CLASS_PXB,
   "a second switch below the first"},
  {ROOT "/0000:16:00.0", "/sys/devices/pci0000:15/0000:15:03.0/0000:20:00.0", 0, 0, PCI_CLASS_PHB,
   "two root ports of one host bridge"},
  {ROOT "/0000:16:00.0/0000:17:00.0/0000:18:00.0",
   "/sys/devices/pci0000:3d/0000:3d:01.0/0000:3e:00.0/0000:3f:00.0/0000:40:00.0", 0, 0,
   PCI_CLASS_NODE, "two host bridges of one NUMA node (NCCL: PHB)"},
  {ROOT "/0000:16:00.0/0000:17:00.0/0000:18:00.0",
   "/sys/devices/pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:00.0/0000:9a:00.0", 0, 1,
   PCI_CLASS_SYS, "two NUMA nodes"},
  {ROOT "/0000:16:00.0", ROOT "/0000:16:00.1", 0, 0, PCI_CLASS_LOC, "two functions of one device"},
  {"/sys/devices/pci0000:00/0000:00:03.0/virtio2", "/sys/devices/pci0000:00/0000:00:02.0", -1, 0,
   PCI_CLASS_PHB, "integrated endpoints, unknown NUMA read as node 0"},
};

static void test_rows(void) {
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    struct pci_chain a = chain(rows[i].a, rows[i].numa_a), b = chain(rows[i].b, rows[i].numa_b);
    enum pci_class k = pci_classify(&a, &b), k2 = pci_classify(&b, &a);
    CHECK(k == rows[i].want, "%s: got %s, want %s", rows[i].what, pci_class_name(k),
          pci_class_name(rows[i].want));
    CHECK(k == k2, "%s: not symmetric (%s, %s)", rows[i].what, pci_class_name(k),
          pci_class_name(k2));
  }
  CHECK(pci_class_nccl(PCI_CLASS_NODE) == PCI_CLASS_PHB, "NCCL calls NODE PHB");
}

static void test_chain(void) {
  struct pci_chain c;
  CHECK(pci_chain_from_path(&c,
                            "/x/fixture/sysfs/devices/pci0000:15/0000:15:01.0/0000:16:00.0/"
                            "0000:17:02.0/0000:1a:00.0",
                            0) == 0,
        "parses");
  CHECK(!strcmp(c.root, "pci0000:15") && c.nbdf == 4 && !strcmp(c.bdfs[3], "0000:1a:00.0"),
        "root %s n %d last %s", c.root, c.nbdf, c.bdfs[c.nbdf - 1]);
  CHECK(pci_chain_from_path(&c, "/sys/devices/virtual/net/bond0", 0) != 0, "virtual refused");
  CHECK(pci_is_bdf("0000:1a:00.0") && !pci_is_bdf("pci0000:1a") && !pci_is_bdf("virtio2"), "bdf");
  CHECK(pci_busid_cmp("0000:9a:00.0", "0000:c0:00.0") < 0 &&
          pci_busid_cmp("0000:1a:00.1", "0000:1a:00.0") > 0,
        "bus id order");
}

int main(void) {
  TAP_CASE("distance classes: PIX, PXB, PHB, NODE, SYS, LOC", test_rows);
  TAP_CASE("chains from sysfs paths", test_chain);
  return tap_done();
}
