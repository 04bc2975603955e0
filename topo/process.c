/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's topology, discovered, decided and reported once per process. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/knobs.h"
#include "common/log.h"
#include "topo/topo.h"

static struct topo_host proc_host;
static struct topo_choice proc_choice; /* why_none alone when RDMA is off or discovery failed */
static bool is_proc_built;             /* proc_host and proc_choice hold a decision */
static pthread_once_t proc_once = PTHREAD_ONCE_INIT;

static void build(void) {
  if (knob_int(K_IB_DISABLE)) {
    snprintf(proc_choice.why_none, sizeof(proc_choice.why_none),
             "RDMA disabled by NCCL_IB_DISABLE=1");
    return;
  }
  int r = topo_discover(&proc_host, 0);
  if (r) {
    topo_host_free(&proc_host);
    snprintf(proc_choice.why_none, sizeof(proc_choice.why_none),
             "the host's topology could not be discovered: %s (see the warning above)",
             strerror(r));
    return;
  }
  if (topo_decide(&proc_host, NULL, &proc_choice)) {
    WARN("no RDMA device for NCCL: %s", proc_choice.why_none); /* decide logs nothing */
    topo_host_free(&proc_host);
    return;
  }
  topo_report(&proc_host, &proc_choice);
  is_proc_built = true;
}

const struct topo_choice *topo_process(const struct topo_host **host) {
  pthread_once(&proc_once, build);
  if (host) *host = is_proc_built ? &proc_host : NULL;
  return &proc_choice;
}
