/* SPDX-License-Identifier: Apache-2.0 */
/* What one rank reports about its host: the NCCL the job would load, the
 * plugin (version, exported ABI tables, the devices it offers), NCCL_* of
 * the process and of PID 1, and what the plugin's topology code chooses
 * (interfaces, RDMA ports, GIDs, subnets, MTU, P_Key) with its problems and
 * recommended settings, computed by the same functions doctor calls. */
#ifndef DIAG_TOOLS_PROBE_FACTS_H
#define DIAG_TOOLS_PROBE_FACTS_H

#include <stddef.h>

#include "tools/netload.h"
#include "tools/probe/probe.h"

struct facts_ctx {
  struct netload nl; /* the plugin, loaded and initialised; nl.dl NULL when it failed */
  int ndev;
  void *nccl; /* the libnccl handle, kept open so the plugin finds NCCL's version */
};

/* Fills f and leaves the plugin loaded in ctx for the pair tests. Never
 * fails: what could not be found is itself a fact. */
void facts_gather(struct probe_facts *f, struct facts_ctx *ctx, const struct probe_opts *o,
                  int rank, int local_rank);
void facts_release(struct facts_ctx *ctx);

void facts_env_process(struct probe_env *e);
int facts_env_file(struct probe_env *e, const char *path, char *err, size_t cap);
/* The RoCE QoS of a chosen device (topo/qos.h), as doctor judges it. */
struct topo_host;
struct topo_dev;
void facts_qos(struct probe_rdma *x, const struct topo_host *h, const struct topo_dev *v);
struct json;
void facts_qos_json(struct json *j, const struct probe_rdma *x); /* "qos": {...} or null */
/* topo's view: interfaces, socket choice, RDMA ports, issues, advice. */
void facts_topo(struct probe_facts *f);

#endif
