/* SPDX-License-Identifier: Apache-2.0 */
/* A chosen RoCE device's QoS in a host's facts: read and judged with the
 * functions doctor uses (topo/qos.h), reduced to what compare_qos.c sets
 * side by side across hosts. */
#include <stdio.h>
#include <string.h>

#include "common/strutil.h"
#include "tools/json_out.h"
#include "tools/probe/facts.h"
#include "topo/qos.h"
#include "topo/topo.h"

void facts_qos(struct probe_rdma *x, const struct topo_host *h, const struct topo_dev *v) {
  x->qos_state = 0;
  x->qos_prio = -1;
  x->qos_pfc = -1;
  x->qos_fix_tc = -1;
  if (v->ll != TOPO_LL_ETH) return;
  const struct topo_port *pt = &h->ports[v->port];
  struct topo_qos q;
  struct qos_use u;
  struct qos_verdict verdict;
  topo_qos_read_port(h, v->port, &q);
  qos_use_from_knobs(&u, topo_qos_is_tagged(pt, v->gid_index));
  qos_judge(&q, &u, v->name, &verdict);
  if (q.source == QOS_SRC_UNKNOWN) {
    x->qos_state = 1;
    scopy(x->qos, sizeof(x->qos), q.why_unknown);
    return;
  }
  x->qos_state = 2;
  qos_config_str(&q, x->qos, sizeof(x->qos));
  x->qos_prio = verdict.prio;
  x->qos_lossless = verdict.is_lossless;
  x->qos_pfc = q.has_pfc ? q.pfc_en : -1;
  x->qos_fix_tc = qos_lossless_tc(&q);
  if (q.dev_tclass >= 0) snprintf(x->qos_tc, sizeof(x->qos_tc), "device class %d", verdict.tc);
  else if (q.trust == QOS_TRUST_PCP) snprintf(x->qos_tc, sizeof(x->qos_tc), "NCCL_IB_SL=%d", u.sl);
  else snprintf(x->qos_tc, sizeof(x->qos_tc), "NCCL_IB_TC=%d (DSCP %d)", verdict.tc, verdict.dscp);
}

/* "qos": null (not RoCE, or an older probe) or {state: "read"|"unknown",
 * config (read) or why (unknown), priority, lossless, traffic_class,
 * fix_traffic_class}. */
void facts_qos_json(struct json *j, const struct probe_rdma *x) {
  if (!x->qos_state) {
    json_null(j, "qos");
    return;
  }
  json_obj(j, "qos");
  json_str(j, "state", x->qos_state == 2 ? "read" : "unknown");
  json_str(j, x->qos_state == 2 ? "config" : "why", x->qos);
  json_int(j, "priority", x->qos_prio);
  json_bool(j, "lossless", x->qos_lossless);
  json_str(j, "traffic_class", x->qos_tc);
  json_int(j, "fix_traffic_class", x->qos_fix_tc);
  json_close_obj(j);
}
