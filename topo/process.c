/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's topology, discovered, decided and reported once per process. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/knobs.h"
#include "topo/topo.h"

static struct topo_host *proc_host;
static struct topo_choice *proc_choice;
static struct topo_choice proc_failed; /* when memory or discovery fails */
static pthread_once_t proc_once = PTHREAD_ONCE_INIT;

static void build(void) {
  if (knob_int(K_IB_DISABLE)) {
    snprintf(proc_failed.why_none, sizeof(proc_failed.why_none),
             "RDMA disabled by NCCL_IB_DISABLE=1");
    return;
  }
  struct topo_host *h = calloc(1, sizeof(*h));
  struct topo_choice *c = calloc(1, sizeof(*c));
  if (!h || !c) {
    snprintf(proc_failed.why_none, sizeof(proc_failed.why_none),
             "out of memory for the topology (%zu bytes)", sizeof(*h) + sizeof(*c));
    goto free_both;
  }
  if (topo_discover(h, 0)) {
    snprintf(proc_failed.why_none, sizeof(proc_failed.why_none),
             "the host's interfaces could not be listed (see the warning above)");
    goto free_both;
  }
  topo_decide(h, NULL, c);
  topo_report(h, c);
  proc_host = h;
  proc_choice = c;
  return;
free_both:
  free(h);
  free(c);
}

const struct topo_choice *topo_process(const struct topo_host **host) {
  pthread_once(&proc_once, build);
  if (host) *host = proc_host;
  return proc_choice ? proc_choice : &proc_failed;
}
