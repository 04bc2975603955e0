/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag doctor: each used RoCE port's QoS (PFC, trust, the
 * DSCP->priority map, ETS, ECN; topo/qos.h) against the traffic class NCCL's
 * queue pairs will use, as a section of the report and as findings. Where
 * the state cannot be read, the port's QoS is "unknown", said once, and no
 * finding is made of it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/doctor.h"
#include "tools/json_out.h"

static void check_port(struct doctor *d, int p, struct doctor_qos *x) {
  const struct topo_port *pt = &d->h->ports[p];
  const struct topo_port_choice *pc = &d->c->pc[p];
  struct qos_use u;
  char where[96];
  x->port = p;
  topo_qos_read_port(d->h, p, &x->q);
  qos_use_from_knobs(&u, topo_qos_is_tagged(pt, pc->gid.index));
  snprintf(where, sizeof(where), "device %s port %d", d->h->hcas[pt->hca].name, pt->num);
  qos_judge(&x->q, &u, where, &x->v);
  for (const struct doctor_qos *o = d->qos; o < x; o++) /* one interface seen twice (PF and VF) */
    if (x->q.source != QOS_SRC_UNKNOWN && !strcmp(o->q.netdev, x->q.netdev) &&
        o->v.prio == x->v.prio)
      return;
  for (int i = 0; i < x->v.nfinding; i++) {
    const struct qos_finding *f = &x->v.findings[i];
    doctor_finding(d, f->severity ? TOPO_WARNING : TOPO_NOTE, f->fix, "%s", f->text);
  }
}

void doctor_check_qos(struct doctor *d) {
  d->nqos = 0;
  d->qos = calloc((size_t)(d->h->nport ? d->h->nport : 1), sizeof(*d->qos));
  if (!d->qos) return;
  for (int p = 0; p < d->h->nport; p++)
    if (d->c->pc[p].verdict == TV_CHOSEN && d->h->ports[p].ll == TOPO_LL_ETH)
      check_port(d, p, &d->qos[d->nqos++]);
}

void doctor_qos_free(struct doctor *d) {
  free(d->qos);
  d->qos = NULL;
  d->nqos = 0;
}

static void port_name(const struct doctor *d, const struct doctor_qos *x, char *buf, size_t cap) {
  const struct topo_port *pt = &d->h->ports[x->port];
  snprintf(buf, cap, "%s port %d (%s)", d->h->hcas[pt->hca].name, pt->num, pt->netdev);
}

/* Ports unknown for the same cause as port i, after it: listed on one line,
 * so "unknown" and its cause are said once. */
static void unknown_alike(FILE *f, const struct doctor *d, int i, bool *said) {
  const struct doctor_qos *x = &d->qos[i];
  char name[96];
  port_name(d, x, name, sizeof(name));
  fprintf(f, "  %s: %s\n", name, x->v.summary);
  int n = 0;
  for (int j = i + 1; j < d->nqos && j < TOPO_MAX_PORTS; j++) {
    const struct topo_qos *q = &d->qos[j].q;
    if (said[j] || q->source != QOS_SRC_UNKNOWN || q->unknown_errno != x->q.unknown_errno) continue;
    said[j] = true;
    port_name(d, &d->qos[j], name, sizeof(name));
    fprintf(f, "%s%s", n++ ? ", " : "  ", name);
  }
  if (n) fprintf(f, ": unknown, alike\n");
}

void doctor_qos_text(FILE *f, const struct doctor *d) {
  if (!d->nqos) return;
  bool said[TOPO_MAX_PORTS] = {false};
  fprintf(f, "\nRoCE QoS (priority flow control, trust, ECN) of the ports NCCL will use\n");
  for (int i = 0; i < d->nqos && i < TOPO_MAX_PORTS; i++) {
    const struct doctor_qos *x = &d->qos[i];
    char name[96];
    if (said[i]) continue;
    if (x->q.source == QOS_SRC_UNKNOWN) {
      unknown_alike(f, d, i, said);
      continue;
    }
    port_name(d, x, name, sizeof(name));
    fprintf(f, "  %s: %s\n", name, x->v.summary);
  }
}

const struct doctor_qos *doctor_qos_of(const struct doctor *d, int port) {
  for (int i = 0; i < d->nqos; i++)
    if (d->qos[i].port == port) return &d->qos[i];
  return NULL;
}

static const char *source_name(enum qos_source s) {
  return s == QOS_SRC_NETLINK ? "netlink" : s == QOS_SRC_FIXTURE ? "sysfs-copy" : "unknown";
}

static void json_prios(struct json *w, const char *key, bool is_known, uint8_t bits) {
  if (!is_known) {
    json_null(w, key);
    return;
  }
  json_arr_flat(w, key);
  for (int p = 0; p < QOS_PRIOS; p++)
    if (bits & (1u << p)) json_int(w, NULL, p);
  json_close_arr(w);
}

/* "qos": {source, why_unknown, trust, trust_read, pfc, ecn_np, ecn_rp,
 * dscp_map: {dscp: prio} (the APP table's entries), dcbx (who negotiates:
 * "host, ieee", "lld-managed, ieee"; "" unknown), device_tclass,
 * traffic_class, dscp, priority, fifo_priority, lossless, summary}. */
void doctor_qos_json(struct json *w, const struct doctor *d, int port) {
  const struct doctor_qos *x = doctor_qos_of(d, port);
  if (!x) {
    json_null(w, "qos");
    return;
  }
  const struct topo_qos *q = &x->q;
  bool is_known = q->source != QOS_SRC_UNKNOWN;
  json_obj(w, "qos");
  json_str(w, "source", source_name(q->source));
  json_str(w, "why_unknown", q->why_unknown);
  json_str(w, "trust", is_known ? qos_trust_name(q->trust) : "");
  json_bool(w, "trust_read", q->is_trust_read);
  json_prios(w, "pfc", is_known && q->has_pfc, q->pfc_en);
  json_prios(w, "ecn_np", is_known && q->has_ecn_np, q->ecn_np);
  json_prios(w, "ecn_rp", is_known && q->has_ecn_rp, q->ecn_rp);
  json_obj(w, "dscp_map");
  for (int s = 0; s < QOS_DSCPS; s++) {
    char k[8];
    snprintf(k, sizeof(k), "%d", s);
    if (q->dscp_set & (1ull << s)) json_int(w, k, q->dscp_prio[s]);
  }
  json_close_obj(w);
  char dcbx[64];
  qos_dcbx_str(q->dcbx, dcbx, sizeof(dcbx));
  json_str(w, "dcbx", dcbx);
  json_int(w, "device_tclass", q->dev_tclass);
  json_int(w, "traffic_class", x->v.tc);
  json_int(w, "dscp", x->v.dscp);
  json_int(w, "priority", x->v.prio);
  json_int(w, "fifo_priority", x->v.fifo_prio);
  json_bool(w, "lossless", x->v.is_lossless);
  json_str(w, "summary", x->v.summary);
  json_close_obj(w);
}
