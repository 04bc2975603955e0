/* SPDX-License-Identifier: Apache-2.0 */
/* The words for a failed completion: the specific cause first when the
 * plugin knows it (a pair on one host, link-local GIDs, a cross-rail pair),
 * then the completion's valid fields and what the status means; the
 * generic cause and fix (common/wcstatus.h, as nccl-net-diag explain words
 * them) only when nothing more specific is known. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "common/wcstatus.h"
#include "transport/ib/dev/ib.h"
#include "transport/ib/diag/ib_diag.h"
#include "transport/prefs.h"

/* A forced GID index is a likely reason a path never carried a packet:
 * one index can name a GID of another subnet or RoCE version on some node. */
static void forced_gid_note(struct diag_out *o, const struct hello *peer) {
  const char *mine = transport_prefs()->ib_gid_index_text;
  const char *theirs = hello_info_value(peer, "NCCL_IB_GID_INDEX");
  if (!mine && !strcmp(theirs, "unset")) return;
  char name[160];
  ib_peer_name(peer, name, sizeof(name));
  diag_put(o,
           ". NCCL_IB_GID_INDEX is forced (%s here, %s on %s), and one index can name another "
           "subnet's GID on some node: unset it on every node",
           mine ? mine : "unset", theirs, name);
}

/* ", between GID 3 ::ffff:10.1.4.5 (xgbe4) here and GID 3 ::ffff:10.0.0.7
 * (bond0, 10.0.0.0/24) of host-b's mlx5_bond_0" */
static void path_brief(struct diag_out *o, const struct ib_dev *d, const struct hello *peer) {
  char lg[64], rg[64], sn[64];
  inet_ntop(AF_INET6, ib_dev_gid(d, sn, sizeof(sn)), lg, sizeof(lg));
  inet_ntop(AF_INET6, peer->ib.gid, rg, sizeof(rg));
  diag_put(o, ", between GID %d %s (%s) here and GID %d %s (%s, %s) of %s's %s", d->td->gid_index,
           lg, d->td->netdev[0] ? d->td->netdev : "no netdev", peer->ib.gid_index, rg,
           peer->ib.netdev[0] ? peer->ib.netdev : "no netdev",
           peer->ib.subnet[0] ? peer->ib.subnet : "no subnet", peer->host, peer->ib.dev);
}

static void status_text(struct diag_out *o, const struct ibv_wc *wc,
                        const struct ib_wc_context *cx) {
  diag_put(o, "%s%s completed with %s (%d), qp 0x%x, vendor_err 0x%x", cx->what,
           cx->mem == WC_MEM_GPU    ? " (GPU memory)"
           : cx->mem == WC_MEM_HOST ? " (host memory)"
                                    : "",
           verbs_wc_status_name(wc->status), wc->status, wc->qp_num, wc->vendor_err);
}

/* The first write of a connection never acknowledged, and the plugin knows
 * why: the cause and its fix, then the completion. true when it wrote it. */
static bool retry_specific(struct diag_out *o, const struct ib_dev *d, const struct hello *peer,
                           const struct ibv_wc *wc, const struct ib_wc_context *cx) {
  if (wc->status != IBV_WC_RETRY_EXC_ERR || !cx->is_first) return false;
  if (!diag_lead_cause(o, d, peer, "the first RDMA write after RTR was never acknowledged"))
    return false;
  diag_put(o, "; ");
  status_text(o, wc, cx);
  if (d->td->ll == TOPO_LL_ETH) path_brief(o, d, peer);
  return true;
}

/* Writes of up to some size were acknowledged, a larger one never was:
 * packets up to the path MTU carry the larger write, and a hop whose MTU
 * is below them drops them without a word (a path-MTU black hole; the
 * peer and the small packets, clear-to-sends and short messages, get
 * through). true when it wrote it. */
static bool mtu_specific(struct diag_out *o, const struct ib_dev *d, const struct hello *peer,
                         const struct ibv_wc *wc, const struct ib_wc_context *cx) {
  int path = d->mtu < peer->ib.mtu || peer->ib.mtu <= 0 ? d->mtu : peer->ib.mtu;
  uint32_t big = cx->write_bytes < (uint32_t)path ? cx->write_bytes : (uint32_t)path;
  if (wc->status != IBV_WC_RETRY_EXC_ERR || !cx->max_ok_bytes || path <= 0 ||
      cx->max_ok_bytes >= big)
    return false;
  char ip[64] = "<the peer's address>";
  if (!memcmp(peer->ib.gid, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12))
    inet_ntop(AF_INET, peer->ib.gid + 12, ip, sizeof(ip));
  diag_put(o,
           "path-MTU black hole suspected: messages of up to %u bytes were acknowledged on this "
           "connection, this one of %u bytes never was; its packets carry up to the path MTU (%d "
           "bytes: %d here, %d on %s), and a hop with a smaller MTU drops them. Fix: an MTU of at "
           "least %d on every hop between the two ports (the netdevs %s here and %s there, and "
           "the switches); check with ping -M do -s %d %s; ",
           cx->max_ok_bytes, cx->write_bytes, path, d->mtu, peer->ib.mtu, peer->host, path + 60,
           d->td->netdev[0] ? d->td->netdev : "-", peer->ib.netdev[0] ? peer->ib.netdev : "-",
           path + 32, ip);
  status_text(o, wc, cx);
  return true;
}

/* Writes never acknowledged while the peer's port was down, as its process
 * says: that flap is the cause, not the path or its settings. true when it
 * wrote it. */
static bool peer_port_said(struct diag_out *o, const struct hello *peer, const struct ibv_wc *wc,
                           const struct ib_wc_context *cx) {
  /* a return longer ago than the deadline (and a check interval) did not
   * fail this write */
  bool is_back_lately = cx->is_peer_back && cx->peer_port_s <= ib_qp_deadline_s() + 10;
  if (wc->status != IBV_WC_RETRY_EXC_ERR || (!cx->is_peer_down && !is_back_lately)) return false;
  char when[64];
  if (cx->is_peer_down) snprintf(when, sizeof(when), "has been down for %d s", cx->peer_port_s);
  else snprintf(when, sizeof(when), "was down until %d s ago", cx->peer_port_s);
  diag_put(o,
           ": the peer's RDMA port (%s's %s) %s, as its process's liveness answers say: the "
           "packets this queue pair sent meanwhile went unacknowledged past its deadline "
           "(NCCL_IB_TIMEOUT x NCCL_IB_RETRY_CNT); fix: that port's link (its log's 'port error' "
           "WARN; its cable, transceiver and switch port), and to ride out flaps this long raise "
           "NCCL_IB_TIMEOUT",
           peer->host, peer->ib.dev[0] ? peer->ib.dev : "device", when);
  return true;
}

void ib_diag_wc(const struct ib_dev *d, const struct hello *peer, const struct ibv_wc *wc,
                const struct ib_wc_context *cx, char *buf, size_t cap) {
  struct diag_out o = {buf, cap, 0};
  buf[0] = 0;
  bool port_down = cx->is_port_down || __atomic_load_n(&d->port_down, __ATOMIC_ACQUIRE);
  if (wc->status == IBV_WC_RETRY_EXC_ERR && d->td->ll == TOPO_LL_ETH)
    diag_log_details(d, peer, "IBV_WC_RETRY_EXC_ERR");
  if (!port_down && retry_specific(&o, d, peer, wc, cx)) return;
  if (!port_down && mtu_specific(&o, d, peer, wc, cx)) return;
  const char *cause, *fix;
  const struct wc_status_info *in =
    wc_status_advice((int)wc->status, cx->is_first && !port_down, cx->mem, &cause, &fix);
  /* On error only wr_id, status, qp_num and vendor_err are valid. */
  status_text(&o, wc, cx);
  /* A port that went down explains any error that follows it. */
  if (port_down && wc->status != IBV_WC_WR_FLUSH_ERR)
    diag_put(&o,
             ": %s went down during the transfer (a port error event; check its netdev %s and "
             "its link)",
             d->label, d->td->netdev[0] ? d->td->netdev : "netdev");
  if (port_down && cx->advice && wc->status != IBV_WC_WR_FLUSH_ERR) {
    diag_put(&o, "%s", cx->advice); /* the port explains it: its own fix, or a setting */
    return;
  }
  if (!port_down && peer_port_said(&o, peer, wc, cx)) return;
  if (in) diag_put(&o, ", %s: %s; fix: %s", in->what, cause, fix);
  else diag_put(&o, ": a transport or device error the verbs do not classify");
  if (wc->status == IBV_WC_WR_FLUSH_ERR)
    diag_put(&o,
             cx->first_error && cx->first_error[0] ? ". The first error was: %s"
                                                   : ". The first error was not seen here (on "
                                                     "the peer, or an async event)%s",
             cx->first_error && cx->first_error[0] ? cx->first_error : "");
  if (wc->status != IBV_WC_RETRY_EXC_ERR || d->td->ll != TOPO_LL_ETH) return;
  path_brief(&o, d, peer);
  forced_gid_note(&o, peer);
}
