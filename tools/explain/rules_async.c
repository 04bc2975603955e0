/* SPDX-License-Identifier: Apache-2.0 */
/* Async events from the HCA: "NET/IB : Got async event : port error" (up to
 * 2.19, no device), "NET/IB : mlx5_0:1 Got async event : port error"
 * (2.20-2.22), "... Got async error event: port error" (2.23-2.28.3),
 * "... Got non-fatal async event: port error(10)" (2.28.7+) and "... async
 * fatal event ...: <what>" (2.23+). */
#include <stdio.h>
#include <string.h>

#include "common/strutil.h"

#include "tools/explain/rules.h"

enum async_kind { AK_PORT, AK_ACCESS, AK_GID, AK_FATAL, AK_OTHER, AK_COUNT };

static bool async_event(const struct rec *r, enum async_kind *kind, char *dev, size_t cap) {
  const char *t = r->text;
  if (r->is_diag || r->level != REC_WARN || !strstr(t, "async")) return false;
  if (!strstr(t, "async event") && !strstr(t, "async error event") &&
      !strstr(t, "async fatal event"))
    return false;
  text_token(text_after(t, "NET/IB : "), "", dev, cap);
  /* up to 2.21 the event names no device: "NET/IB : Got async event : port error" */
  if (!strcmp(dev, "Got") || strstr(dev, "async")) scopy(dev, cap, "");
  *kind = strstr(t, "port error")               ? AK_PORT
          : strstr(t, "local access violation") ? AK_ACCESS
          : strstr(t, "GID table")              ? AK_GID
          : strstr(t, "fatal")                  ? AK_FATAL
                                                : AK_OTHER;
  return true;
}

bool async_match(const struct rec *r) {
  enum async_kind k;
  char dev[32];
  return async_event(r, &k, dev, sizeof(dev));
}

static struct finding *async_finding(const struct explain_ctx *cx, enum async_kind k,
                                     const struct rec *r, const char *dev) {
  static const enum confidence confs[AK_COUNT] = {CONF_HIGH, CONF_MEDIUM, CONF_MEDIUM, CONF_HIGH,
                                                  CONF_LOW};
  struct finding *f = finding_new(cx->out, "async-event", confs[k]);
  if (!f) return NULL;
  const char *host = r->host[0] ? r->host : "this host";
  char named[96];
  /* NCCL 2.21 and older name no device: say so rather than guess one */
  if (!dev[0]) dev = "(NCCL 2.21 and older do not name it)";
  snprintf(named, sizeof(named), "%s", dev);
  dev = named;
  switch (k) {
  case AK_PORT:
    finding_cause(
      f,
      "an RDMA port %s on %s went down during the job (the link flapped: cable, transceiver or switch port)",
      dev, host);
    finding_fix(
      f,
      "check the link on %s (ibstat or ibv_devinfo, dmesg, the switch port's error counters) and replace or reseat what flaps",
      host);
    break;
  case AK_ACCESS:
    finding_cause(
      f,
      "a queue pair on %s %s hit a local access violation: the peer sent more than the receive side allows, most often because the two ports run different MTUs",
      dev, host);
    finding_fix(
      f,
      "give every RDMA port the same MTU (netdev and switch for RoCE, the partition MTU for InfiniBand) and use the same NCCL everywhere");
    break;
  case AK_GID:
    finding_cause(
      f,
      "the GID table of %s on %s changed during the job (an address was added to or removed from its netdev): queue pairs keep the GID they started with",
      dev, host);
    finding_fix(
      f,
      "keep the RoCE netdev's addresses stable while jobs run (DHCP renewals, network managers); restart the job after the change");
    break;
  case AK_FATAL:
    finding_cause(f,
                  "%s on %s reported a fatal device or queue error: the HCA or its firmware failed",
                  dev, host);
    finding_fix(
      f,
      "check dmesg and the device's health on %s (mlxlink, firmware version); reset or replace the HCA",
      host);
    break;
  default:
    finding_cause(f, "no confident cause: %s on %s reported an async event: \"%.200s\"", dev, host,
                  r->text);
    finding_fix(f, "check dmesg and ibstat on %s", host);
  }
  return f;
}

void async_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *groups[AK_COUNT] = {0};
  for (size_t i = 0; i < h->n; i++) {
    enum async_kind k;
    char dev[32];
    if (!async_event(h->v[i], &k, dev, sizeof(dev))) continue;
    if (k == AK_ACCESS &&
        rules_consequence(cx, "mtu-mismatch", h->v[i],
                          "it shows as local access violations (a QP async event)"))
      continue;
    if (!groups[k] && !(groups[k] = async_finding(cx, k, h->v[i], dev))) return;
    finding_evidence(groups[k], h->v[i]);
  }
}

/* A completion error on a host whose port went down before it (earlier in
 * that host's log), or whose peer is that host, is that event's
 * consequence: queue pairs over a dead link fail with retry exceeded (12)
 * or are flushed (5). One finding, not two unrelated ones. */
/* Both lines timed (NCCL 2.26+'s WARN timestamp, a collector's, PyTorch's):
 * the completion must come after the port error, within the time queue
 * pairs take to give up on a dead link: 4.096 us x 2^NCCL_IB_TIMEOUT x
 * (NCCL_IB_RETRY_CNT + 1), 34 s at the defaults (20, 7), 137 s at 22. A
 * completion error hours later is a second fault. Across hosts the clocks
 * may differ by a few seconds. Untimed lines keep the line order. */
#define ASYNC_FOLLOW_MAX_S 150.0
#define ASYNC_CLOCK_SKEW_S 5.0
static bool async_follows(const struct rec *port, const struct rec *wc) {
  if (port->ts_kind == TS_NONE || port->ts_kind != wc->ts_kind) return true;
  double d = wc->ts - port->ts;
  double skew = strcmp(port->host, wc->host) ? ASYNC_CLOCK_SKEW_S : 0;
  return d >= -skew && d <= ASYNC_FOLLOW_MAX_S + skew;
}

bool async_port_consequence(const struct explain_ctx *cx, const struct rec *r,
                            const char *peer_host) {
  for (int i = 0; i < cx->out->n; i++) {
    struct finding *f = cx->out->v[i];
    if (strcmp(f->rule, "async-event") || !strstr(f->cause, "went down")) continue;
    for (size_t k = 0; k < f->ncovered; k++) {
      const struct rec *e = f->covered[k];
      bool same = !strcmp(e->host, r->host) && (e->file != r->file || e->idx < r->idx);
      if (!same && !(peer_host && !strcmp(e->host, peer_host))) continue;
      if (!async_match(e) || !async_follows(e, r)) continue;
      const char *note =
        "the completion errors that followed (retry exceeded or flushed work requests) are its consequence, not a second fault";
      size_t n = strlen(f->cause);
      if (!strstr(f->cause, note)) snprintf(f->cause + n, sizeof(f->cause) - n, "; %s", note);
      finding_evidence(f, r);
      return true;
    }
  }
  return false;
}
