/* SPDX-License-Identifier: Apache-2.0 */
/* What this process puts in its hello (hello.h): versions, host, pid, the
 * settings that must agree across nodes or explain failures, and where its
 * liveness check answers. Apart from hello.c, which is only the wire format
 * (its decoders are fuzzed without the rest of the transport). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ncclver.h"
#include "common/version.h"
#include "transport/hello.h"
#include "transport/liveness.h"

/* NCCL settings that change the size or number of messages NCCL posts on a
 * connection: when nodes disagree the result is a truncated message or a
 * hang, so a difference is named at connect time. */
static const char *const must_agree[] = {
  "NCCL_PROTO",
  "NCCL_ALGO",
  "NCCL_BUFFSIZE",
  "NCCL_LL_BUFFSIZE",
  "NCCL_LL128_BUFFSIZE",
  "NCCL_P2P_NET_CHUNKSIZE",
  "NCCL_NCHANNELS_PER_NET_PEER",
  "NCCL_DIAG_FALLBACK",
  NULL,
};

/* Settings that legitimately differ but explain failures. */
static const char *const info_knobs[] = {
  "NCCL_SOCKET_IFNAME", "NCCL_SOCKET_FAMILY", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX",
  "NCCL_IB_DISABLE",    "NCCL_NET_PLUGIN",    "NCCL_NET",    NULL,
};

static void fill_knobs(struct hello_knob *arr, int *n, const char *const *names) {
  *n = 0;
  for (int i = 0; names[i] && *n < HELLO_MAX_KNOBS; i++) {
    const char *v = getenv(names[i]);
    if (!v || !*v) continue;
    snprintf(arr[*n].name, sizeof(arr[*n].name), "%s", names[i]);
    snprintf(arr[*n].value, sizeof(arr[*n].value), "%s", v);
    (*n)++;
  }
}

void hello_fill_local(struct hello *h, int kind) {
  memset(h, 0, sizeof(*h));
  h->kind = kind;
  snprintf(h->plugin_version, sizeof(h->plugin_version), "%s", DIAG_VERSION);
  h->nccl_version = (uint32_t)nccl_version_code();
  gethostname(h->host, sizeof(h->host) - 1);
  h->pid = (uint32_t)getpid();
  fill_knobs(h->knobs, &h->nknobs, must_agree);
  fill_knobs(h->info, &h->ninfo, info_knobs);
  liveness_local(&h->live);
}
