/* SPDX-License-Identifier: Apache-2.0 */
/* Pairs that passed only because the plugin repaired them (its "repaired"
 * event: the configured pair could not reach, another GID, port or NIC
 * carried the data): a problem to fix, not a healthy pair. */
#include <stdio.h>
#include <string.h>

#include "common/strutil.h"
#include "tools/probe/verdict.h"

void verdict_repaired(struct probe_pair *p, const struct wire_result *rx,
                      const struct wire_result *tx, int have_tx) {
  bool is_tx = have_tx && !strcmp(tx->cause, "repaired");
  if (!is_tx && strcmp(rx->cause, "repaired")) return;
  scopy(p->code, sizeof(p->code), "repaired");
  scopy(p->error, sizeof(p->error), is_tx && tx->warns[0] ? tx->warns : rx->warns);
}

/* The fix the plugin's repair message names, up to its note on the knob. */
static void repair_fix(const char *warns, char *fix, size_t cap) {
  const char *at = strstr(warns, "Fix the configuration: ");
  if (!at) {
    snprintf(fix, cap, "as the plugin's message says");
    return;
  }
  at += strlen("Fix the configuration: ");
  const char *end = strstr(at, " (NCCL_DIAG_REPAIR=off");
  int n = end ? (int)(end - at) : (int)strcspn(at, "\n");
  snprintf(fix, cap, "%.*s (the plugin's own diagnosis)", n, at);
}

void verdict_repaired_pairs(struct probe_run *r) {
  for (int i = 0; i < r->npair; i++) {
    const struct probe_pair *p = &r->pairs[i];
    if (!p->tested || !p->ok || strcmp(p->code, "repaired")) continue;
    char s[PROBE_HOST_MAX + 16], d[PROBE_HOST_MAX + 16], hosts[200], fix[1500];
    probe_rank_host(r, p->src, s, sizeof(s));
    probe_rank_host(r, p->dst, d, sizeof(d));
    snprintf(hosts, sizeof(hosts), "%s,%s", s, d);
    repair_fix(p->error, fix, sizeof(fix));
    probe_add_problem(r, SEV_WARNING, hosts, fix,
                      "%s -> %s on device %d (%s on %s, %s on %s) ran on RDMA only because the "
                      "plugin repaired a pair that cannot reach: %s",
                      s, d, p->dev, p->dev_name, s, p->dst_dev_name[0] ? p->dst_dev_name : "?", d,
                      p->error);
  }
}
