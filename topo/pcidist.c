/* SPDX-License-Identifier: Apache-2.0 */
#include "topo/pcidist.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"

bool pci_is_bdf(const char *s) {
  /* dddd:bb:dd.f */
  static const char shape[] = "xxxx:xx:xx.x";
  size_t n = strlen(shape);
  if (strlen(s) != n) return false;
  for (size_t i = 0; i < n; i++) {
    if (shape[i] == 'x' ? !isxdigit((unsigned char)s[i]) : s[i] != shape[i]) return false;
  }
  return true;
}

int pci_busid_cmp(const char *a, const char *b) {
  unsigned long x = strtoul(a, NULL, 16), y = strtoul(b, NULL, 16);
  if (x != y) return x < y ? -1 : 1;
  return strcasecmp(a, b);
}

int pci_chain_from_path(struct pci_chain *c, const char *path, int numa) {
  memset(c, 0, sizeof(*c));
  c->numa = numa;
  const char *p = path;
  while (*p) {
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);
    char comp[64];
    if (len < sizeof(comp)) {
      memcpy(comp, p, len);
      comp[len] = 0;
      if (!strncmp(comp, "pci", 3) && strlen(comp) == 10 && comp[7] == ':') {
        scopy(c->root, sizeof(c->root), comp);
        c->nbdf = 0; /* a nested root restarts the chain */
      } else if (pci_is_bdf(comp) && c->root[0] && c->nbdf < PCI_CHAIN_MAX) {
        scopy(c->bdfs[c->nbdf++], PCI_BUSID_LEN, comp);
      }
    }
    if (!slash) break;
    p = slash + 1;
  }
  return c->root[0] && c->nbdf ? 0 : EINVAL;
}

/* NCCL's switch nodes above bdfs[i]: two directories up each time, while
 * both are BDFs; the function digit does not count (a switch node is named
 * by its upstream port as a device). Returns how many were written. */
static int switch_nodes(const struct pci_chain *c, char out[][PCI_BUSID_LEN]) {
  int n = 0;
  for (int i = c->nbdf - 1; i - 2 >= 0; i -= 2) {
    scopy(out[n], PCI_BUSID_LEN, c->bdfs[i - 2]);
    out[n][strlen(out[n]) - 1] = '0';
    n++;
  }
  return n;
}

static int same_device(const char *a, const char *b) {
  size_t n = strlen(a);
  return n == strlen(b) && n > 1 && !strncasecmp(a, b, n - 1);
}

enum pci_class pci_classify(const struct pci_chain *a, const struct pci_chain *b) {
  if (!a->nbdf || !b->nbdf) return PCI_CLASS_UNKNOWN;
  if (same_device(a->bdfs[a->nbdf - 1], b->bdfs[b->nbdf - 1])) return PCI_CLASS_LOC;
  char sa[PCI_CHAIN_MAX][PCI_BUSID_LEN], sb[PCI_CHAIN_MAX][PCI_BUSID_LEN];
  int na = switch_nodes(a, sa), nb = switch_nodes(b, sb);
  /* The first common switch node, nearest to a (then to b). */
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++)
      if (!strcasecmp(sa[i], sb[j])) return i == 0 && j == 0 ? PCI_CLASS_PIX : PCI_CLASS_PXB;
  /* NCCL treats an unknown NUMA node (-1) as node 0. */
  int ma = a->numa < 0 ? 0 : a->numa, mb = b->numa < 0 ? 0 : b->numa;
  if (ma != mb) return PCI_CLASS_SYS;
  return strcasecmp(a->root, b->root) ? PCI_CLASS_NODE : PCI_CLASS_PHB;
}

enum pci_class pci_class_nccl(enum pci_class c) { return c == PCI_CLASS_NODE ? PCI_CLASS_PHB : c; }

const char *pci_class_name(enum pci_class c) {
  static const char *const names[] = {"LOC", "PIX", "PXB", "PHB", "NODE", "SYS", "?"};
  return c >= PCI_CLASS_LOC && c <= PCI_CLASS_UNKNOWN ? names[c] : "?";
}
