/* SPDX-License-Identifier: Apache-2.0 */
/* A port that failed while the job ran and the connections that moved off
 * it (NCCL_IB_RESILIENCY_PORT_FAILOVER): NCCL's own IB transport (2.29+)
 * says "NET/IB: Device N marked as failed. Initiating recovery? Yes|No" and,
 * when the move cannot save the connection, "NET/IB: The error is fatal
 * (No functional devices left)" or "NET/IB: Fatal error. Detected N failed
 * devices out of M"; this plugin says "...; moved from mlx5_0 port 1 to
 * mlx5_1 port 1 ..." on each end. A job that survived still runs on less:
 * the port is the finding, named with its host. */
#include <stdio.h>
#include <string.h>

#include "tools/explain/rules.h"

enum fo_line { FO_NONE, FO_MOVED, FO_NCCL_FAILED, FO_NCCL_FATAL };

static enum fo_line fo_kind(const struct rec *r) {
  const char *t = r->text;
  if (r->level != REC_WARN) return FO_NONE;
  if (r->is_diag)
    return strstr(t, "; moved from ") && strstr(t, "NCCL_IB_RESILIENCY_PORT_FAILOVER=1") ? FO_MOVED
                                                                                         : FO_NONE;
  if (strstr(t, "NET/IB: Device ") && strstr(t, " marked as failed")) return FO_NCCL_FAILED;
  if (strstr(t, "NET/IB: The error is fatal (") || strstr(t, "NET/IB: Fatal error. Detected "))
    return FO_NCCL_FATAL;
  return FO_NONE;
}

bool failover_match(const struct rec *r) { return fo_kind(r) != FO_NONE; }

/* The failed port and its host as this plugin's cause names them: "mlx5_0
 * port 1 on host-a: ..." or "... mlx5_0 port 1 went down"; else the line's
 * own port ("moved from mlx5_0 port 1") and host. */
static void failed_port(const struct rec *r, char *port, size_t pcap, char *host, size_t hcap) {
  const char *t = r->text, *on = strstr(t, " port ");
  snprintf(host, hcap, "%s", r->host[0] ? r->host : "this host");
  port[0] = 0;
  for (const char *p = on; p; p = strstr(p + 1, " port ")) {
    const char *start = p;
    while (start > t && start[-1] != ' ' && start[-1] != '(' && start[-1] != ':') start--;
    int n = 0, len = 0;
    if (sscanf(p, " port %d%n", &n, &len) != 1) continue;
    if (!strncmp(p + len, " on ", 4)) {
      const char *h = p + len + 4;
      size_t hl = strcspn(h, ": ,;)");
      snprintf(host, hcap, "%.*s", (int)hl, h);
      snprintf(port, pcap, "%.*s", (int)(p + len - start), start);
      return;
    }
    if (!port[0] && !strncmp(p + len, " went down", 10))
      snprintf(port, pcap, "%.*s", (int)(p + len - start), start);
  }
  const char *from = strstr(t, "; moved from ");
  if (!port[0] && from) {
    from += 13;
    size_t l = (size_t)(strstr(from, " to ") ? strstr(from, " to ") - from : 0);
    snprintf(port, pcap, "%.*s", (int)l, from);
  }
}

void failover_build(const struct explain_ctx *cx, const struct hits *h) {
  const struct rec *first = NULL, *fatal = NULL;
  int moved = 0, nccl_failed = 0;
  for (size_t i = 0; i < h->n; i++) {
    enum fo_line k = fo_kind(h->v[i]);
    if (!first && k != FO_NCCL_FATAL) first = h->v[i];
    if (k == FO_NCCL_FATAL && !fatal) fatal = h->v[i];
    moved += k == FO_MOVED;
    nccl_failed += k == FO_NCCL_FAILED;
  }
  if (!first && !fatal) return;
  struct finding *f = finding_new(cx->out, "port-failover", CONF_HIGH);
  if (!f) return;
  char port[96] = "", host[96];
  const struct rec *r = first ? first : fatal;
  if (first && fo_kind(first) == FO_MOVED)
    failed_port(first, port, sizeof(port), host, sizeof(host));
  else snprintf(host, sizeof(host), "%s", r->host[0] ? r->host : "this host");
  if (fatal)
    finding_cause(
      f,
      "a port of the virtual NIC on %s failed during the job and port fail-over could not "
      "save its connections: %s",
      host,
      strstr(fatal->text, "No functional devices left") ? "no port of the virtual NIC was left"
      : strstr(fatal->text, "Detected ")
        ? "more than one of its ports failed (NCCL moves connections off one failed "
          "port only)"
        : "the completion's error is not one a move can fix");
  else if (moved)
    finding_cause(f,
                  "%s on %s failed during the job; NCCL_IB_RESILIENCY_PORT_FAILOVER moved its "
                  "connections to another port (said on %d connection end%s), so the job ran on "
                  "with less bandwidth",
                  port[0] ? port : "an RDMA port", host, moved, moved == 1 ? "" : "s");
  else
    finding_cause(f,
                  "an RDMA port of the virtual NIC on %s failed during the job (%d connection "
                  "ends saw it); NCCL_IB_RESILIENCY_PORT_FAILOVER moved their connections to "
                  "another port, so the job ran on with less bandwidth",
                  host, nccl_failed);
  finding_fix(f,
              "check the link on %s (ibstat or ibv_devinfo, dmesg, the switch port's error "
              "counters) and reseat or replace what failed; NCCL_IB_RESILIENCY_PORT_RECOVERY=1 "
              "(NCCL 2.30) moves connections back once the port returns",
              host);
  for (size_t i = 0; i < h->n; i++) finding_evidence(f, h->v[i]);
}
