/* SPDX-License-Identifier: Apache-2.0 */
/* Two namespace hosts joined by a veth pair, made for one bench run and
 * always removed: at the end, on error, and on SIGINT/SIGTERM/SIGHUP. */
#ifndef DIAG_BENCH_NETNS_H
#define DIAG_BENCH_NETNS_H

#include <stdbool.h>
#include <stddef.h>

struct netns {
  char ns[2][32];   /* namespace names, one per rank */
  char veth[2][16]; /* the veth end inside each */
  char addr[2][16]; /* its IPv4 address */
  bool is_created;
};

enum netns_outcome {
  NETNS_READY,
  NETNS_UNAVAILABLE, /* cannot here (why says so: not root, no ip command): a skip */
  NETNS_FAILED,      /* an ip command failed (its stderr shows why) */
};

enum netns_outcome netns_setup(struct netns *n, char *why, size_t cap);
void netns_cleanup(struct netns *n);
/* In a worker, before the plugin is loaded: join the namespace and see its
 * own /sys (as `ip netns exec` does), so the plugin's interface discovery
 * reads that host's view. Returns 0 or the errno of the failed open or
 * setns (err says why). */
int netns_enter(const char *name, char *err, size_t cap);

#endif
