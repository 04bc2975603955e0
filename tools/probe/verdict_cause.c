/* SPDX-License-Identifier: Apache-2.0 */
/* The short cause of a failed pair, for the matrix and the JSON. It comes
 * from what is known for certain: the probe's own reasons (a host gone, no
 * device, the time ran out, bad data), a stall of large messages while
 * small ones pass, the plugin's cause code from its event file, and the
 * subnets of the two RDMA ports. The plugin's messages are shown in full
 * but never searched for words: "subnet" in a firewall diagnosis is no
 * plane mismatch. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/strutil.h"
#include "tools/probe/verdict.h"

struct label {
  const char *key, *cause;
};

/* The probe's own reasons that say the pair never really ran. */
static const struct label gone_labels[] = {
  {"no network device", "no device"}, {"stopped during", "host gone"}, {"was gone", "host gone"},
  {"ran out of time", "out of time"}, {"not tested", "not tested"},
};

/* The probe's own reasons of a pair that ran. */
static const struct label own_labels[] = {
  {"corrupted", "bad data"},
  {"out of order", "bad data"},
  {"did not report", "timeout"},
  {"did not finish", "timeout"},
};

/* The plugin's connect_failed cause codes (transport/connect_report.c). */
static const struct label code_labels[] = {
  {"no_answer", "no answer"},    {"refused", "refused"},        {"no_route", "unreachable"},
  {"invalid", "unreachable"},    {"link_local", "link-local"},  {"no_link", "link-local"},
  {"peer_loopback", "loopback"}, {"forbidden", "forbidden"},    {"rejected", "rejected"},
  {"busy", "peer busy"},         {"local_socket", "no socket"},
};

static const char *lookup(const struct label *t, size_t n, const char *text, int exact) {
  for (size_t i = 0; text && i < n; i++)
    if (exact ? !strcmp(text, t[i].key) : strcasestr(text, t[i].key) != NULL) return t[i].cause;
  return NULL;
}

#define LOOKUP(t, text, exact) lookup(t, sizeof(t) / sizeof(t[0]), text, exact)

void verdict_cause(struct probe_pair *p) {
  const char *c = LOOKUP(gone_labels, p->error, 0);
  if (!c) c = LOOKUP(own_labels, p->error, 0);
  scopy(p->cause, sizeof(p->cause), c ? c : "failed");
}

/* The RDMA port of a host behind a plugin device name ("mlx5_4" or "mlx5_4:1"). */
static const struct probe_rdma *port_of(const struct probe_facts *f, const char *dev) {
  for (int i = 0; dev[0] && i < f->nrdma; i++) {
    size_t n = strlen(f->rdma[i].name);
    if (!strncmp(dev, f->rdma[i].name, n) && (!dev[n] || dev[n] == ':')) return &f->rdma[i];
  }
  return NULL;
}

/* Both ends are RDMA ports on different subnets: no path between them. */
static int cross_plane(const struct probe_run *r, const struct probe_pair *p) {
  if (strcmp(p->transport, "RDMA")) return 0;
  const struct probe_rdma *a = port_of(&r->facts[p->src], p->dev_name);
  const struct probe_rdma *b = port_of(&r->facts[p->dst], p->dst_dev_name);
  return a && b && a->subnet[0] && b->subnet[0] && strcmp(a->subnet, b->subnet);
}

/* The first code of a list ("no_answer,refused"). */
static void first_code(const char *codes, char *out, size_t cap) {
  size_t n = strcspn(codes, ",");
  snprintf(out, cap, "%.*s", (int)n, codes);
}

void verdict_label(const struct probe_run *r, struct probe_pair *p, const char *fail,
                   const struct wire_result *rx, int have_rx, const struct wire_result *tx,
                   int have_tx) {
  const char *own[3] = {fail, have_tx ? tx->error : NULL, have_rx ? rx->error : NULL};
  const char *c = NULL;
  for (int i = 0; i < 3 && !c; i++) c = LOOKUP(gone_labels, own[i], 0);
  if (have_tx && tx->stall) p->stall_bytes = tx->stall;
  if (have_rx && rx->stall) p->stall_bytes = rx->stall;
  if (!c && p->stall_bytes) c = "path MTU";
  /* The side that connected and failed has the code; either side may. */
  if (have_tx && tx->cause[0]) first_code(tx->cause, p->code, sizeof(p->code));
  else if (have_rx && rx->cause[0]) first_code(rx->cause, p->code, sizeof(p->code));
  if (!c && p->code[0]) {
    c = LOOKUP(code_labels, p->code, 1);
    if (!c) c = "connect failed";
  }
  if (!c && cross_plane(r, p)) c = "cross-plane";
  for (int i = 0; i < 3 && !c; i++) c = LOOKUP(own_labels, own[i], 0);
  scopy(p->cause, sizeof(p->cause), c ? c : "failed");
}
