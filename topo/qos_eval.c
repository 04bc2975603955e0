/* SPDX-License-Identifier: Apache-2.0 */
/* The judgement of a port's RoCE QoS against the traffic class NCCL's
 * queue pairs use. Pure: the state and the knobs in, findings out.
 *
 * A RoCE v2 frame's priority: trusting DSCP, the DSCP (the GRH traffic
 * class >> 2) through the DSCP->priority map (the APP table's entries; the
 * mlx5 and kernel default for the others is DSCP >> 3); trusting PCP, the
 * VLAN PCP, which the NIC fills from the service level, and which untagged
 * frames do not carry (priority 0 on the NIC and the switch). */
#include <stdio.h>
#include <string.h>

#include "common/knobs.h"
#include "topo/qos.h"

#define QOS_CLASSIC_DSCP 26 /* the DSCP RoCE guides use for the lossless class */

const char *qos_trust_name(enum qos_trust t) { return t == QOS_TRUST_DSCP ? "dscp" : "pcp"; }

void qos_prio_list(uint8_t bits, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  for (int p = 0; p < QOS_PRIOS && n < cap; p++)
    if (bits & (1u << p)) n += (size_t)snprintf(buf + n, cap - n, "%s%d", n ? "," : "", p);
  if (!bits) snprintf(buf, cap, "none");
}

static int dscp_prio(const struct topo_qos *q, int dscp) {
  return q->dscp_set & (1ull << dscp) ? q->dscp_prio[dscp] : dscp >> 3;
}

int qos_prio_of(const struct topo_qos *q, int tc, int sl, bool is_tagged) {
  if (q->source == QOS_SRC_UNKNOWN || tc < 0 || tc > 255) return -1;
  if (q->trust == QOS_TRUST_DSCP) return dscp_prio(q, tc >> 2);
  return is_tagged ? sl & 7 : 0;
}

int qos_tc_for_prio(const struct topo_qos *q, int prio) {
  if (q->trust != QOS_TRUST_DSCP || prio < 0 || prio >= QOS_PRIOS) return -1;
  int pick = dscp_prio(q, QOS_CLASSIC_DSCP) == prio ? QOS_CLASSIC_DSCP : -1;
  for (int d = 0; d < QOS_DSCPS && pick < 0; d++) /* an entry someone set on purpose first */
    if ((q->dscp_set & (1ull << d)) && q->dscp_prio[d] == prio) pick = d;
  for (int d = 0; d < QOS_DSCPS && pick < 0; d++)
    if (dscp_prio(q, d) == prio) pick = d;
  return pick < 0 ? -1 : pick << 2 | 2; /* ECN bits 10: ECN-capable, as NCCL's documented 106 */
}

void qos_use_from_knobs(struct qos_use *u, bool is_tagged) {
  const struct nccl_qos_defaults *d = nccl_qos_defaults();
  memset(u, 0, sizeof(*u));
  u->is_tc_set = knob_is_set(K_IB_TC) && knob_int(K_IB_TC) >= 0;
  u->tc = u->is_tc_set ? (int)knob_int(K_IB_TC) : d->tc;
  u->fifo_tc = knob_is_set(K_IB_FIFO_TC) ? (int)knob_int(K_IB_FIFO_TC) : -1;
  u->sl = knob_is_set(K_IB_SL) && knob_int(K_IB_SL) >= 0 ? (int)knob_int(K_IB_SL) : d->sl;
  u->is_tagged = is_tagged;
}

static struct qos_finding *add(struct qos_verdict *v, enum qos_kind k, int sev) {
  if (v->nfinding == QOS_MAX_FINDINGS) return NULL;
  struct qos_finding *f = &v->findings[v->nfinding++];
  memset(f, 0, sizeof(*f));
  f->kind = k;
  f->severity = sev;
  return f;
}

/* "NCCL_IB_TC=0 (DSCP 0, NCCL's default)" or the device's forced class. */
static void tc_words(const struct topo_qos *q, const struct qos_use *u, const struct qos_verdict *v,
                     char *buf, size_t cap) {
  if (q->dev_tclass >= 0)
    snprintf(buf, cap, "traffic class %d (DSCP %d, forced by the device's traffic_class)", v->tc,
             v->dscp);
  else if (q->trust == QOS_TRUST_PCP)
    snprintf(buf, cap, "NCCL_IB_SL=%d%s", u->sl, u->is_tagged ? "" : " (untagged)");
  else
    snprintf(buf, cap, "NCCL_IB_TC=%d (DSCP %d%s)", v->tc, v->dscp,
             u->is_tc_set ? "" : ", NCCL's default");
}

/* The lowest PFC priority a traffic class reaches, with that class. */
static int lossless_target(const struct topo_qos *q, int *tc) {
  for (int p = 0; p < QOS_PRIOS; p++)
    if ((q->pfc_en & (1u << p)) && (*tc = qos_tc_for_prio(q, p)) >= 0) return p;
  return -1;
}

int qos_lossless_tc(const struct topo_qos *q) {
  struct topo_qos dscp = *q;
  int tc = -1;
  dscp.trust = QOS_TRUST_DSCP;
  return q->has_pfc && lossless_target(&dscp, &tc) >= 0 ? tc : -1;
}

static void pfc_off(const struct topo_qos *q, const struct qos_use *u, const char *where,
                    struct qos_verdict *v) {
  char tcw[160], on[32];
  tc_words(q, u, v, tcw, sizeof(tcw));
  qos_prio_list(q->pfc_en, on, sizeof(on));
  bool is_untagged_pcp = q->trust == QOS_TRUST_PCP && !u->is_tagged;
  struct qos_finding *f = add(v, is_untagged_pcp ? QOS_TRUST_UNTAGGED : QOS_PFC_OFF, 1);
  if (!f) return;
  if (is_untagged_pcp) {
    struct topo_qos dscp = *q; /* what trusting DSCP would give */
    dscp.trust = QOS_TRUST_DSCP;
    int tc = -1, target = lossless_target(&dscp, &tc);
    snprintf(f->text, sizeof(f->text),
             "%s: %s trusts the VLAN priority (PCP) but RoCE traffic leaves untagged, so it "
             "travels on priority 0, where PFC is off (PFC on priority %s only)",
             where, q->netdev, on);
    snprintf(f->fix, sizeof(f->fix),
             "trust DSCP on %s (mlnx_qos -i %s --trust dscp) and set NCCL_IB_TC=%d (DSCP %d -> "
             "prio %d) on every host, or enable PFC on priority 0",
             q->netdev, q->netdev, tc, tc >> 2, target);
    return;
  }
  snprintf(f->text, sizeof(f->text),
           "%s: RoCE traffic of %s maps to priority %d, where PFC is off on %s (PFC on priority "
           "%s only): it is lossy, and every drop costs a retransmission timeout",
           where, tcw, v->prio, q->netdev, on);
  int tc = -1, target = lossless_target(q, &tc);
  int sl = -1; /* trusting PCP on a VLAN: the service level is the priority */
  for (int p = 0; q->trust == QOS_TRUST_PCP && p < QOS_PRIOS && sl < 0; p++)
    if (q->pfc_en & (1u << p)) sl = p;
  if (sl >= 0)
    snprintf(f->fix, sizeof(f->fix),
             "set NCCL_IB_SL=%d (the VLAN priority of the frames) on every host, or enable PFC on "
             "priority %d of %s",
             sl, v->prio, q->netdev);
  else if (target >= 0)
    snprintf(f->fix, sizeof(f->fix),
             "set NCCL_IB_TC=%d (DSCP %d -> prio %d) on every host%s, or enable PFC on priority "
             "%d of %s",
             tc, tc >> 2, target, q->dev_tclass >= 0 ? " and the device's traffic_class" : "",
             v->prio, q->netdev);
  else
    snprintf(f->fix, sizeof(f->fix), "enable PFC on priority %d of %s, or trust DSCP on it",
             v->prio, q->netdev);
}

static void lossless_checks(const struct topo_qos *q, const struct qos_use *u, const char *where,
                            struct qos_verdict *v) {
  uint8_t bit = (uint8_t)(1u << v->prio);
  struct qos_finding *f;
  bool is_np_off = q->has_ecn_np && !(q->ecn_np & bit),
       is_rp_off = q->has_ecn_rp && !(q->ecn_rp & bit);
  if ((is_np_off || is_rp_off) && (f = add(v, QOS_ECN_OFF, 1))) {
    const char *off = is_np_off && is_rp_off ? "roce_np and roce_rp"
                      : is_np_off            ? "roce_np"
                                             : "roce_rp";
    snprintf(f->text, sizeof(f->text),
             "%s: ECN (%s) is off on priority %d of %s, the lossless priority RoCE uses: "
             "congestion then pauses the links with PFC instead of slowing the senders",
             where, off, v->prio, q->netdev);
    snprintf(f->fix, sizeof(f->fix),
             "echo 1 > /sys/class/net/%s/ecn/roce_np/enable/%d and the same for roce_rp, on "
             "every host",
             q->netdev, v->prio);
  }
  if (u->fifo_tc >= 0 && q->dev_tclass < 0 && v->fifo_prio >= 0 &&
      !(q->pfc_en & (1u << v->fifo_prio)) && (f = add(v, QOS_FIFO_LOSSY, 1))) {
    snprintf(f->text, sizeof(f->text),
             "%s: NCCL_IB_FIFO_TC=%d (DSCP %d; NCCL %s and later read it) puts the clear-to-send "
             "messages on priority %d of "
             "%s, where PFC is off, while the data is lossless on priority %d: a dropped "
             "clear-to-send stalls the transfer for a retransmission timeout",
             where, u->fifo_tc, u->fifo_tc >> 2, nccl_qos_defaults()->fifo_tc_since, v->fifo_prio,
             q->netdev, v->prio);
    snprintf(f->fix, sizeof(f->fix), "unset NCCL_IB_FIFO_TC, or set it to %d like NCCL_IB_TC",
             v->tc);
  }
}

static void ets_check(const struct topo_qos *q, const char *where, struct qos_verdict *v) {
  int tc = q->prio_tc[v->prio];
  struct qos_finding *f;
  if (!q->has_ets || q->tc_tsa[tc] != QOS_TSA_ETS || q->tc_bw[tc] || !(f = add(v, QOS_ETS_ZERO, 1)))
    return;
  snprintf(f->text, sizeof(f->text),
           "%s: priority %d of %s is in ETS traffic class %d, which has 0%% of the bandwidth: "
           "RoCE traffic there gets only what the other classes leave",
           where, v->prio, q->netdev, tc);
  snprintf(f->fix, sizeof(f->fix),
           "give traffic class %d a bandwidth share on %s (dcb ets set dev %s tc-bw %d:50 ...)", tc,
           q->netdev, q->netdev, tc);
}

uint8_t qos_ecn_on(const struct topo_qos *q) {
  if (!q->has_ecn) return 0;
  return (uint8_t)((q->has_ecn_np ? q->ecn_np : 0xff) & (q->has_ecn_rp ? q->ecn_rp : 0xff));
}

void qos_config_str(const struct topo_qos *q, char *buf, size_t cap) {
  char pfc[32] = "unknown", ecn[32] = "unknown";
  if (q->has_pfc) qos_prio_list(q->pfc_en, pfc, sizeof(pfc));
  if (q->has_ecn) qos_prio_list(qos_ecn_on(q), ecn, sizeof(ecn));
  int n = snprintf(buf, cap, "trust %s, PFC on %s, ECN on %s", qos_trust_name(q->trust), pfc, ecn);
  if (q->dev_tclass >= 0 && n > 0 && (size_t)n < cap)
    snprintf(buf + n, cap - (size_t)n, ", device class %d", q->dev_tclass);
}

static void summarize(const struct topo_qos *q, const struct qos_use *u, struct qos_verdict *v) {
  char pfc[32] = "unknown", np[32], tcw[160];
  if (q->has_pfc) qos_prio_list(q->pfc_en, pfc, sizeof(pfc));
  qos_prio_list(qos_ecn_on(q), np, sizeof(np));
  tc_words(q, u, v, tcw, sizeof(tcw));
  char via[80] = "";
  if (q->bond[0]) snprintf(via, sizeof(via), " (%s's member %s)", q->bond, q->netdev);
  else if (q->vf_netdev[0])
    snprintf(via, sizeof(via), " (%s's physical function %s)", q->vf_netdev, q->netdev);
  const char *loss = !q->has_pfc ? "" : v->is_lossless ? " (lossless)" : " (lossy)";
  snprintf(v->summary, sizeof(v->summary),
           "trust %s%s, PFC on %s, ECN on %s%s; %s -> priority %d%s", qos_trust_name(q->trust),
           q->is_trust_read ? "" : " (inferred)", pfc, q->has_ecn ? np : "unknown", via, tcw,
           v->prio, loss);
}

void qos_judge(const struct topo_qos *q, const struct qos_use *u, const char *where,
               struct qos_verdict *v) {
  memset(v, 0, sizeof(*v));
  v->tc = q->dev_tclass >= 0 ? q->dev_tclass : u->tc;
  v->dscp = v->tc >> 2;
  v->prio = v->fifo_prio = -1;
  if (q->source == QOS_SRC_UNKNOWN) {
    snprintf(v->summary, sizeof(v->summary), "unknown: %s", q->why_unknown);
    return;
  }
  v->prio = qos_prio_of(q, v->tc, u->sl, u->is_tagged);
  int fifo_tc = q->dev_tclass >= 0 ? q->dev_tclass : u->fifo_tc >= 0 ? u->fifo_tc : v->tc;
  v->fifo_prio = qos_prio_of(q, fifo_tc, u->sl, u->is_tagged);
  v->is_lossless = q->has_pfc && (q->pfc_en & (1u << v->prio));
  summarize(q, u, v);
  struct qos_finding *f;
  if (q->dev_tclass >= 0 && u->is_tc_set && u->tc != q->dev_tclass &&
      (f = add(v, QOS_TCLASS_FORCED, 0))) {
    snprintf(f->text, sizeof(f->text),
             "%s: the device's traffic_class %d overrides NCCL_IB_TC=%d for every queue pair",
             where, q->dev_tclass, u->tc);
    snprintf(f->fix, sizeof(f->fix), "set NCCL_IB_TC=%d to match it, or clear the device's value",
             q->dev_tclass);
  }
  if (q->member_differs[0] && (f = add(v, QOS_BOND_DIFFERS, 1))) {
    snprintf(f->text, sizeof(f->text),
             "%s: the members of %s are set up differently: %s and %s differ in PFC, trust or "
             "DSCP map, so traffic the bond hashes onto one of them is treated otherwise",
             where, q->bond, q->netdev, q->member_differs);
    snprintf(f->fix, sizeof(f->fix), "give %s the same QoS as %s", q->member_differs, q->netdev);
  }
  if (!q->has_pfc) return;
  if (!q->pfc_en && (f = add(v, QOS_PFC_NONE, 0))) {
    snprintf(f->text, sizeof(f->text),
             "%s: PFC is off on every priority of %s: RoCE runs lossy, which holds up only where "
             "the fabric is built for it (ECN everywhere, no drops under load)",
             where, q->netdev);
    snprintf(f->fix, sizeof(f->fix),
             "where the switches run PFC, enable it on one priority of %s and point NCCL_IB_TC "
             "at it",
             q->netdev);
  } else if (!v->is_lossless) pfc_off(q, u, where, v);
  else lossless_checks(q, u, where, v);
  if (q->pfc_en) ets_check(q, where, v);
}
