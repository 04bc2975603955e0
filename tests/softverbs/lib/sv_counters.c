/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: the payload bytes each port was asked to send, as a real
 * port's port_xmit_data counter shows which ports carried traffic, and
 * the RDMA reads posted there. Tests read them through
 * softverbs_port_tx_bytes and softverbs_port_reads (outside rdma-core's
 * API, in a version node of its own). */
#include "sv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define SV_COUNTED 32

static struct {
  char dev[64];
  int port;
  _Atomic unsigned long long bytes, reads;
} counted[SV_COUNTED];
static atomic_int ncounted;
static pthread_mutex_t counted_lock = PTHREAD_MUTEX_INITIALIZER;

static int find(const char *dev, int port) {
  int n = atomic_load(&ncounted);
  for (int i = 0; i < n; i++)
    if (counted[i].port == port && !strcmp(counted[i].dev, dev)) return i;
  return -1;
}

void sv_count_tx(const char *dev, int port, uint64_t bytes, bool is_read) {
  int i = find(dev, port);
  if (i < 0) {
    pthread_mutex_lock(&counted_lock);
    i = find(dev, port);
    if (i < 0 && atomic_load(&ncounted) < SV_COUNTED) {
      i = atomic_load(&ncounted);
      snprintf(counted[i].dev, sizeof(counted[i].dev), "%s", dev);
      counted[i].port = port;
      atomic_store(&ncounted, i + 1);
    }
    pthread_mutex_unlock(&counted_lock);
    if (i < 0) return;
  }
  if (is_read) atomic_fetch_add(&counted[i].reads, 1);
  else atomic_fetch_add(&counted[i].bytes, bytes);
}

__attribute__((visibility("default"))) unsigned long long softverbs_port_tx_bytes(const char *dev,
                                                                                  int port) {
  int i = find(dev, port);
  return i < 0 ? 0 : atomic_load(&counted[i].bytes);
}

/* RDMA reads posted on the port (a GPUDirect flush is one). */
__attribute__((visibility("default"))) unsigned long long softverbs_port_reads(const char *dev,
                                                                               int port) {
  int i = find(dev, port);
  return i < 0 ? 0 : atomic_load(&counted[i].reads);
}
