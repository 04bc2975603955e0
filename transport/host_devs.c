/* SPDX-License-Identifier: Apache-2.0 */
/* The host's device list (transport.h): where it is kept, and the room and
 * entries a transport adds while host.c builds it. Apart from host.c so
 * that the transports fill it and read it without calling the builder,
 * which calls them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "transport/transport.h"

static struct transport_host host;

const struct transport_host *transport_host(void) { return &host; }

struct transport_host *transport_host_edit(void) {
  return &host;
}

int transport_host_reserve(struct transport_host *h, int n) {
  if (n > TRANSPORT_MAX_DEVS) n = TRANSPORT_MAX_DEVS;
  free(h->devs);
  h->ndev = h->cap_devs = 0;
  h->devs = calloc((size_t)n, sizeof(*h->devs));
  if (n && !h->devs) {
    WARN("out of memory for the list of %d network devices", n);
    return ENOMEM;
  }
  h->cap_devs = n;
  return 0;
}

struct transport_dev *transport_host_add_dev(struct transport_host *h, const char *pci_path) {
  if (h->ndev == h->cap_devs) return NULL;
  struct transport_dev *d = &h->devs[h->ndev];
  memset(d, 0, sizeof(*d));
  d->index = h->ndev++;
  d->pci_path = pci_path && pci_path[0] ? strdup(pci_path) : NULL;
  if (!d->pci_path) d->pci_path = ""; /* virtual (or no memory for its path: shown as virtual) */
  return d;
}
