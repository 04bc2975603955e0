/* SPDX-License-Identifier: Apache-2.0 */
/* The words of a repair (ib_repair.h), once per pair on each side: what was
 * broken, the GID pair that carries the connection now, its cost, and the
 * setting that fixes the configuration, with the host it is wrong on. */
#include <stdio.h>
#include <string.h>

#include "common/events.h"
#include "common/knobs.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "topo/gid.h"
#include "transport/ib/dev/ib.h"
#include "transport/ib/setup/ib_repair.h"
#include "transport/report.h"

/* "GID 7 (RoCE v2 10.50.0.22) of pod-b", with the port when it moved:
 * "mlx5_3 port 1 GID 3 (RoCE v2 10.1.3.5) of host-a" */
static void gid_side(const struct hello_alt *a, const struct ib_repair_end *e,
                     const struct hello *h, char *buf, size_t cap) {
  struct ipaddr ip;
  char addr[64], port[64] = "";
  gid_to_ipaddr(a->gid, &ip);
  ipaddr_str(&ip, addr, sizeof(addr));
  if (e->is_moved) snprintf(port, sizeof(port), "%s port %d ", e->dev, e->port);
  snprintf(buf, cap, "%sGID %d (RoCE v%d %s) of %s", port, a->gid_index, a->gid_type, addr,
           h->host);
}

/* What the path costs against NCCL's: nothing on the same ports; another
 * NIC's PCIe path where it moved (never one without GPUDirect where NCCL's
 * had it: ib_repair_port.c). */
static void cost_text(const struct ib_repair *r, const struct hello *s, const struct hello *v,
                      char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int k = 0; k < 2; k++) {
    const struct ib_repair_end *e = &r->end[k];
    const struct hello *h = k ? v : s;
    if (!e->is_moved) continue;
    if (!strcmp(e->dev, h->ib.dev))
      o = strbuf_cat(buf, cap, o,
                     "%son %s another port of the same NIC (%s port %d instead of "
                     "port %d): the same PCIe path",
                     o ? "; " : "", h->host, e->dev, e->port, h->ib.port);
    else
      o = strbuf_cat(buf, cap, o,
                     "%son %s another NIC's PCIe path (%s instead of NCCL's %s, which NCCL chose "
                     "nearest the GPU)",
                     o ? "; " : "", h->host, e->dev, h->ib.dev);
  }
  if (!o) snprintf(buf, cap, "the same ports (no cost: the same NIC, PCIe path and GPUDirect)");
  else {
    char all[600];
    snprintf(all, sizeof(all), "%s", buf);
    snprintf(buf, cap, "at a cost: %s", all);
  }
}

/* The fix on host h, whose GID moved from its configured index to a. */
static size_t fix_side(char *buf, size_t cap, size_t o, const struct hello_alt *a,
                       const struct hello *h) {
  const char *forced = hello_info_value(h, "NCCL_IB_GID_INDEX");
  if (strcmp(forced, "unset"))
    return strbuf_cat(buf, cap, o,
                      "%sNCCL_IB_GID_INDEX=%s is forced on %s: set NCCL_IB_GID_INDEX=%d there, "
                      "or unset it (each node then chooses its own)",
                      o ? "; " : "", forced, h->host, a->gid_index);
  return strbuf_cat(buf, cap, o,
                    "%sset NCCL_IB_ROCE_VERSION_NUM=%d (or NCCL_IB_GID_INDEX=%d) on %s",
                    o ? "; " : "", a->gid_type, a->gid_index, h->host);
}

static void fix_text(const struct ib_repair *r, const struct hello *s, const struct hello *v,
                     char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  if (r->cause == IB_REPAIR_CROSS_RAIL) {
    snprintf(buf, cap,
             "set NCCL_CROSS_NIC=0 on every node so that rings and trees stay on one rail, and "
             "keep PXN on (NCCL_PXN_DISABLE=0, NCCL_P2P_PXN_LEVEL=2, the defaults)");
    return;
  }
  if (r->cause == IB_REPAIR_RTR) {
    snprintf(buf, cap,
             "find why RTR fails between the ports NCCL chose (the RTR warning names the cause), "
             "or leave the failing port out with NCCL_IB_HCA");
    return;
  }
  if (r->cause == IB_REPAIR_OFF_PLANE) {
    const struct hello *h = s->ib.is_off_plane ? s : v;
    snprintf(buf, cap, "exclude %s with NCCL_IB_HCA=^%s on %s (or name only the rail NICs)",
             h->ib.dev, h->ib.dev, h->host);
    return;
  }
  if (r->pick[0].gid_index != s->ib.gid_index) o = fix_side(buf, cap, o, &r->pick[0], s);
  if (r->pick[1].gid_index != v->ib.gid_index) o = fix_side(buf, cap, o, &r->pick[1], v);
}

/* For the event file's readers (the probe labels the pair by its code). */
static void repaired_event(const char *dev, const char *peer, const char *broken, const char *a,
                           const char *b, const char *fix) {
  struct ev e;
  ev_begin(&e, "repaired");
  ev_str(&e, "device", dev);
  ev_str(&e, "peer", peer);
  ev_str(&e, "broken", broken);
  ev_str(&e, "path", a);
  ev_str(&e, "peer_path", b);
  ev_str(&e, "fix", fix);
  ev_str(&e, "cause_code", "repaired");
  ev_end(&e);
}

static void say(const char *key, const char *msg) {
  if (report_first(key)) WARN("%s", msg);
  else INFO(LOG_NET, "%s", msg);
}

void ib_repair_none_words(const struct ib_repair *r, bool is_send, const struct hello *mine,
                          const struct hello *peer, char *out, size_t cap) {
  const struct hello *s = is_send ? mine : peer, *v = is_send ? peer : mine;
  out[0] = 0; /* the hosts are named in the line already: it is near NCCL's 1000 */
  if (!s->rdma.has_ports || !v->rdma.has_ports || s->rdma.repair_mode != REPAIR_AUTO ||
      v->rdma.repair_mode != REPAIR_AUTO)
    return; /* no search was made: an older peer, or repair not on both */
  if (r->ntried >= IB_REPAIR_MAX_TRIES)
    snprintf(out, cap, " %d other port pairs failed too: no RDMA path worked", r->ntried);
  else snprintf(out, cap, " No other port pair reaches: no RDMA path exists");
}

void ib_repair_report(const struct ib_repair *r, bool is_send, const char *local_label,
                      const struct hello *mine, const struct hello *peer, const char *peer_desc,
                      bool is_up) {
  if (!r->is_broken) return;
  if (r->nccl_label[0]) local_label = r->nccl_label; /* named as NCCL knows it, before a move */
  const struct hello *s = is_send ? mine : peer, *v = is_send ? peer : mine;
  char key[400], msg[3000], a[160], b[160], fix[600], cost[600];
  snprintf(key, sizeof(key), "repair|%s|%s|%s", peer->host, peer->addr, local_label);
  if (!r->is_found) {
    if (!s->rdma.has_alts || !v->rdma.has_alts) return; /* a peer that offers none: as before */
    if (r->cause == IB_REPAIR_GID)
      snprintf(msg, sizeof(msg),
               "RDMA path from %s to %s: %s, and no other GID pair of these two hosts' ports "
               "reaches (none is routable, of one RoCE version and on one subnet on both): no "
               "RDMA path exists for this pair, so it falls back as configured",
               local_label, peer_desc, r->broken);
    else {
      /* RTR settles it (a routed fabric reaches), and its failure is the
       * pair's one WARN, with the cause and fix: this is said as INFO. */
      INFO(LOG_NET,
           "RDMA path from %s to %s: %s, and no port of %s shares a subnet with a port of %s: "
           "no RDMA path exists for this pair unless the fabric routes between the subnets (RTR "
           "tells), else it falls back as configured",
           local_label, peer_desc, r->broken, s->host, v->host);
      return;
    }
    say(key, msg);
    return;
  }
  gid_side(&r->pick[0], &r->end[0], s, a, sizeof(a));
  gid_side(&r->pick[1], &r->end[1], v, b, sizeof(b));
  fix_text(r, s, v, fix, sizeof(fix));
  cost_text(r, s, v, cost, sizeof(cost));
  const char *ports = r->end[0].is_moved || r->end[1].is_moved ? "" : ", the same ports,";
  if (r->is_applied && !is_up)
    snprintf(msg, sizeof(msg),
             "RDMA path from %s to %s: %s. %s and %s%s were tried instead and failed as well "
             "(the next warning says why). Fix the configuration: %s",
             local_label, peer_desc, r->broken, a, b, ports, fix);
  else if (r->is_applied) {
    repaired_event(local_label, peer_desc, r->broken, a, b, fix);
    snprintf(msg, sizeof(msg),
             "RDMA path from %s to %s: %s. Repaired, not moved to TCP: the connection runs on "
             "%s and %s, %s. Fix the configuration: %s (NCCL_DIAG_REPAIR=off turns repair off)",
             local_label, peer_desc, r->broken, a, b, cost, fix);
  } else
    snprintf(
      msg, sizeof(msg),
      "RDMA path from %s to %s: %s. %s and %s%s would carry it at RDMA speed, but NCCL_DIAG_REPAIR is not auto on both (%s on %s, %s on %s), so it falls "
      "back as configured. Fix the configuration: %s",
      local_label, peer_desc, r->broken, a, b, ports,
      s->rdma.repair_mode == REPAIR_WARN ? "warn" : "auto", s->host,
      v->rdma.repair_mode == REPAIR_WARN ? "warn" : "auto", v->host, fix);
  say(key, msg);
}
