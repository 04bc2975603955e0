/* SPDX-License-Identifier: Apache-2.0 */
/* One release's replay (replay.c) and its connection phase (traffic.c). */
#ifndef DIAG_TESTS_RELEASES_REPLAY_H
#define DIAG_TESTS_RELEASES_REPLAY_H

#include "merge.h"
#include "releases.h"
#include "tools/netload.h"

#define REPLAY_MAX_DEVS 64
#define REPLAY_CHILD_SECONDS 40
#define REPLAY_TRAFFIC_DEVS 4 /* NET devices that carry messages, to bound the time */

struct replay {
  const struct nccl_release *rel;
  const char *path;
  const char *expect_net; /* every NET device's name starts with it, or NULL */
  int abi;
  struct netload nl;
  int nphys, nvirt;
  struct netload_props props[REPLAY_MAX_DEVS];
  struct merge_run mr;
  int visible[REPLAY_MAX_DEVS], nvisible;
  char fail[512];
  const char *kind; /* the failure's one word in the table */
};

/* Records the first failure (printf-style) and its one word for the table. */
void replay_fail_as(struct replay *rp, const char *kind, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
#define replay_fail(rp, ...) replay_fail_as(rp, "", __VA_ARGS__)
/* On the first NET devices NCCL keeps: a connection in NCCL's order and a
 * few verified messages. */
void replay_traffic(struct replay *rp);
/* v12: each device's railId and planeId against NCCL_IB_HCA (rails.c). */
void replay_check_rails(struct replay *rp);

#endif
