/* SPDX-License-Identifier: Apache-2.0 */
/* What users read leads with the specific cause: RDMA lost for a whole
 * host is a WARN, not an INFO only NCCL_DEBUG=INFO shows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

/* An all-IPv6 RoCE host (roce-ipv6-only): mlx5_0 port 1 is up, but with
 * the default NCCL_IB_ADDR_FAMILY=AF_INET no GID qualifies. The process
 * runs at TCP speed: one WARN names the port, the cause and the fix. */
void case_ib_ipv6_only_warns(struct side *s) {
  if (use_fixture(s, ROLE_SINGLE, "roce-ipv6-only") || side_open(s)) return;
  const char *w = log_find(NCCL_LOG_WARN, "mlx5_0 port 1");
  CHECK(w && warn_leads_with(w, "RDMA device mlx5_0 port 1 is up but not used: no usable GID", 120),
        "one WARN opens with the port and the cause: %s", w ? w : "none");
  CHECK(w && strstr(w, "IPv6") && strstr(w, "NCCL_IB_ADDR_FAMILY=AF_INET6") &&
          strstr(w, "at TCP speed"),
        "the cause (IPv6 GIDs), the fix and the consequence: %s", w ? w : "none");
  CHECK(log_count(NCCL_LOG_WARN, "mlx5_0 port 1") == 1, "said once");
  side_close(s);
}
