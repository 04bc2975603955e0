/* SPDX-License-Identifier: Apache-2.0 */
/* RoCE QoS across hosts (facts_qos.c): hosts whose PFC, trust or ECN
 * configuration differs, and the pairs whose traffic runs on a priority
 * where PFC is off at one end. Hosts whose QoS could not be read have no
 * opinion: no finding is made of them. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tools/probe/compare.h"

/* The distinct configurations of a host's read RoCE ports, "" none. */
static void config_of(const struct probe_facts *f, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < f->nrdma && o < cap; i++)
    if (f->rdma[i].qos_state == 2 && !strstr(buf, f->rdma[i].qos))
      o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? " / " : "", f->rdma[i].qos);
}

/* Returns the number of distinct configurations. */
static int compare_configs(struct probe_run *r) {
  struct cmp_groups gs = {0};
  for (int k = 0; k < r->world; k++) {
    char v[400];
    if (!cmp_host_first(r, k)) continue;
    config_of(&r->facts[k], v, sizeof(v));
    if (v[0]) cmp_add(&gs, v, r->facts[k].host);
  }
  if (gs.n > 1) {
    char desc[1500], hosts[512];
    cmp_describe(&gs, "", desc, sizeof(desc));
    cmp_minority_hosts(&gs, hosts, sizeof(hosts));
    probe_add_problem(r, SEV_WARNING, hosts,
                      "configure the same PFC priorities, trust mode and ECN on the RoCE "
                      "interfaces of every node (dcb pfc, mlnx_qos), and one NCCL_IB_TC that "
                      "lands on a PFC priority everywhere",
                      "the RoCE QoS of the RDMA ports differs: %s (traffic that is lossless at "
                      "one end can be dropped at the other)",
                      desc);
  }
  int n = gs.n;
  cmp_free(&gs);
  return n;
}

/* The first read port of f whose data runs lossy while PFC is on
 * elsewhere, or NULL. */
static const struct probe_rdma *lossy_port(const struct probe_facts *f) {
  for (int i = 0; i < f->nrdma; i++) {
    const struct probe_rdma *x = &f->rdma[i];
    if (x->qos_state == 2 && x->qos_pfc > 0 && !x->qos_lossless) return x;
  }
  return NULL;
}

/* "host-a <-> host-b, host-a <-> host-c and 4 more" */
static void lossy_pairs(const struct probe_run *r, char *buf, size_t cap, int *npair) {
  size_t o = 0;
  *npair = 0;
  buf[0] = 0;
  for (int a = 0; a < r->world; a++) {
    if (!cmp_host_first(r, a)) continue;
    for (int b = a + 1; b < r->world; b++) {
      if (!cmp_host_first(r, b) || (!lossy_port(&r->facts[a]) && !lossy_port(&r->facts[b])))
        continue;
      if (++*npair <= 6 && o < cap)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s <-> %s", o ? ", " : "", r->facts[a].host,
                              r->facts[b].host);
    }
  }
  if (*npair > 6 && o < cap) snprintf(buf + o, cap - o, " and %d more", *npair - 6);
}

/* Hosts set up alike share one class that reaches their PFC priority;
 * hosts that differ are each told which priority to make lossless. */
static void compare_lossy(struct probe_run *r, bool is_uniform) {
  char what[1500] = "", hosts[512] = "", pairs[600], enable[600] = "";
  size_t o = 0, h = 0, e = 0;
  int fix_tc = -2;
  for (int k = 0; k < r->world; k++) {
    const struct probe_rdma *x = cmp_host_first(r, k) ? lossy_port(&r->facts[k]) : NULL;
    if (!x) continue;
    char pfc[32] = "";
    for (int p = 0, n = 0; p < 8; p++)
      if (x->qos_pfc & (1 << p))
        n += snprintf(pfc + n, sizeof(pfc) - (size_t)n, "%s%d", n ? "," : "", p);
    if (o < sizeof(what))
      o += (size_t)snprintf(what + o, sizeof(what) - o,
                            "%s%s sends %s on priority %d of %s (%s), where PFC is off (PFC on %s)",
                            o ? "; " : "", r->facts[k].host, x->qos_tc, x->qos_prio, x->name,
                            x->netdev, pfc);
    if (h < sizeof(hosts))
      h += (size_t)snprintf(hosts + h, sizeof(hosts) - h, "%s%s", h ? "," : "", r->facts[k].host);
    if (e < sizeof(enable))
      e += (size_t)snprintf(enable + e, sizeof(enable) - e, "%spriority %d of %s on %s",
                            e ? ", " : "", x->qos_prio, x->netdev, r->facts[k].host);
    fix_tc = fix_tc == -2 || fix_tc == x->qos_fix_tc ? x->qos_fix_tc : -1;
  }
  if (!o) return;
  int npair;
  lossy_pairs(r, pairs, sizeof(pairs), &npair);
  char fix[900];
  if (is_uniform && fix_tc >= 0)
    snprintf(fix, sizeof(fix),
             "export NCCL_IB_TC=%d (DSCP %d, a PFC priority there) on every host, or enable PFC "
             "on the priority it uses",
             fix_tc, fix_tc >> 2);
  else
    snprintf(fix, sizeof(fix),
             "enable PFC on %s, as on the other hosts; or give every host the same PFC priority "
             "and set NCCL_IB_TC to a class that lands on it",
             enable);
  probe_add_problem(r, SEV_WARNING, hosts, fix,
                    "RoCE traffic runs on a lossy priority: %s; %d pair%s drop%s packets under "
                    "congestion and stall%s for a retransmission timeout each time: %s",
                    what, npair, npair == 1 ? "" : "s", npair == 1 ? "s" : "",
                    npair == 1 ? "s" : "", npair ? pairs : "none tested");
}

void probe_compare_qos(struct probe_run *r) { compare_lossy(r, compare_configs(r) <= 1); }
