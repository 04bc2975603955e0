/* SPDX-License-Identifier: Apache-2.0 */
/* Private to compare*.c: hosts grouped by the value of one fact, to name
 * a difference with the hosts on each side ("Simple on node3; unset on
 * node0, node1, node2") and to tell the minority what to change. */
#ifndef DIAG_TOOLS_PROBE_COMPARE_H
#define DIAG_TOOLS_PROBE_COMPARE_H

#include <stddef.h>

#include "tools/probe/probe.h"

#define CMP_HOSTS_SHOWN 8 /* then "and N more" */

struct cmp_group {
  char *value; /* NULL = unset */
  int nhost;
  char **hosts;
};

struct cmp_groups {
  int n;
  struct cmp_group *g;
};

/* Adds host (once) to the group of value (NULL = unset). */
void cmp_add(struct cmp_groups *gs, const char *value, const char *host);
void cmp_free(struct cmp_groups *gs);
/* The group with the most hosts (ties: the first seen). */
int cmp_majority(const struct cmp_groups *gs);
/* "host0, host1 and 3 more" of group i; all of them when full. */
void cmp_hosts(const struct cmp_group *g, int full, char *buf, size_t cap);
/* "Simple on host2; unset on host0, host1, host3" (unset_word for NULL). */
void cmp_describe(const struct cmp_groups *gs, const char *unset_word, char *buf, size_t cap);
/* Every host outside the majority, comma separated (the problem's hosts). */
void cmp_minority_hosts(const struct cmp_groups *gs, char *buf, size_t cap);

/* The ranks that reported, and whether each is its host's first such rank. */
int cmp_reported(const struct probe_run *r, int rank);
int cmp_host_first(const struct probe_run *r, int rank);

#endif
