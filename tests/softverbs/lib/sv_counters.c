/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: the payload bytes each port was asked to send, as a real
 * port's port_xmit_data counter shows which ports carried traffic, and
 * the RDMA reads posted there. Tests read them through
 * softverbs_port_tx_bytes and softverbs_port_reads (outside rdma-core's
 * API, in a version node of its own). Also the hw_counters a lossy path
 * moves, which SOFTVERBS_HW_COUNTERS=1 writes where the kernel shows
 * them: the fixture's ports/<n>/hw_counters (a copy the test owns). */
#include "sv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SV_COUNTED 32

static struct {
  char dev[64];
  int port;
  _Atomic unsigned long long bytes, reads;
  _Atomic unsigned long long hw[SV_HW_COUNT];
} counted[SV_COUNTED];
static atomic_bool hw_dirty;
static atomic_int ncounted;
static pthread_mutex_t counted_lock = PTHREAD_MUTEX_INITIALIZER;

static int find(const char *dev, int port) {
  int n = atomic_load(&ncounted);
  for (int i = 0; i < n; i++)
    if (counted[i].port == port && !strcmp(counted[i].dev, dev)) return i;
  return -1;
}

static int find_or_add(const char *dev, int port) {
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
  }
  return i;
}

void sv_count_tx(const char *dev, int port, uint64_t bytes, bool is_read) {
  int i = find_or_add(dev, port);
  if (i < 0) return;
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

static const char *const hw_names[SV_HW_COUNT] = {
  [SV_HW_OUT_OF_SEQUENCE] = "out_of_sequence",
  [SV_HW_DUPLICATE] = "duplicate_request",
  [SV_HW_SEQ_NAK] = "packet_seq_err",
  [SV_HW_ACK_TIMEOUT] = "local_ack_timeout_err",
};

void sv_count_hw(const char *dev, int port, enum sv_hw which) {
  int i = find_or_add(dev, port);
  if (i < 0) return;
  atomic_fetch_add(&counted[i].hw[which], 1);
  atomic_store(&hw_dirty, true);
}

/* One counter file, replaced whole so a reader never sees half a number. */
static void put_counter(const char *dir, const char *name, unsigned long long v) {
  char path[1024], tmp[1100];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  fprintf(f, "%llu\n", v);
  if (fclose(f) || rename(tmp, path)) unlink(tmp);
}

/* Each context's progress thread calls it; one writes at a time. */
void sv_counters_flush(void) {
  static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
  static uint64_t next_ns; /* under flush_lock */
  if (!atomic_load(&hw_dirty) || !sv_env("SOFTVERBS_HW_COUNTERS") ||
      pthread_mutex_trylock(&flush_lock))
    return;
  uint64_t now = sv_now_ns();
  if (now < next_ns) {
    pthread_mutex_unlock(&flush_lock);
    return;
  }
  next_ns = now + 100000000ull;
  atomic_store(&hw_dirty, false);
  int n = atomic_load(&ncounted);
  for (int i = 0; i < n; i++) {
    char dir[900];
    snprintf(dir, sizeof dir, "%s/class/infiniband/%s/ports/%d/hw_counters", sv_sysfs_root(),
             counted[i].dev, counted[i].port);
    mkdir(dir, 0755);
    for (int k = 0; k < SV_HW_COUNT; k++)
      put_counter(dir, hw_names[k], atomic_load(&counted[i].hw[k]));
  }
  pthread_mutex_unlock(&flush_lock);
}
