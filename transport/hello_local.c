/* SPDX-License-Identifier: Apache-2.0 */
/* What this process puts in its hello (hello.h): versions, host, pid, the
 * settings that must agree across nodes or explain failures, and where its
 * liveness check answers. Apart from hello.c, which is only the wire format
 * (its decoders are fuzzed without the rest of the transport). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/agree.h"
#include "common/ncclver.h"
#include "common/version.h"
#include "transport/hello.h"
#include "transport/liveness.h"

/* The text as set, at each hello rather than from transport_prefs(): the
 * peer compares texts, and most of these are NCCL's settings, not ours. */
static void knob_add(struct hello_knob *arr, int *n, const char *name) {
  const char *v = getenv(name);
  if (!v || !*v || *n == HELLO_MAX_KNOBS) return;
  snprintf(arr[*n].name, sizeof(arr[*n].name), "%s", name);
  snprintf(arr[*n].value, sizeof(arr[*n].value), "%s", v);
  (*n)++;
}

/* From the must-agree table (common/agree.h): the settings both ends of a
 * connection must share are compared, and a difference named at connect
 * time; those that name each node's hardware, or choose the plugin, ride
 * along to explain a failure. */
static void fill_knobs(struct hello *h) {
  size_t n;
  const struct agree_entry *t = agree_table(&n);
  h->nknobs = h->ninfo = 0;
  for (size_t i = 0; i < n; i++) {
    if (strchr(t[i].name, '*')) continue;
    if (t[i].cls == AGREE_MUST && t[i].is_in_handshake) knob_add(h->knobs, &h->nknobs, t[i].name);
    else if (t[i].cls == AGREE_PER_HOST || t[i].cls == AGREE_MUST)
      knob_add(h->info, &h->ninfo, t[i].name);
  }
}

void hello_fill_local(struct hello *h, int kind) {
  memset(h, 0, sizeof(*h));
  h->kind = kind;
  snprintf(h->plugin_version, sizeof(h->plugin_version), "%s", DIAG_VERSION);
  h->nccl_version = (uint32_t)nccl_version_code();
  gethostname(h->host, sizeof(h->host) - 1);
  h->pid = (uint32_t)getpid();
  fill_knobs(h);
  liveness_local(&h->live);
}
