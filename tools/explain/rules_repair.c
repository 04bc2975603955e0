/* SPDX-License-Identifier: Apache-2.0 */
/* Connections the plugin repaired: the configured GID pair could not reach
 * (a GID entry; a cross-rail pair; a storage NIC), and the plugin moved the
 * connection to another GID, port or NIC that reaches
 * (NCCL_DIAG_REPAIR=auto) or, with warn, fell back and named the path that
 * would work. The job runs, so nothing else flags it: a setting
 * is still wrong on some host, and this names it as a problem to fix. */
#include <stdio.h>
#include <string.h>

#include "tools/explain/rules.h"

#define REPAIRED "Repaired, not moved to TCP"
#define WOULD "would carry it at RDMA speed"

bool repair_match(const struct rec *r) {
  return r->is_diag && r->level == REC_WARN &&
         (strstr(r->text, REPAIRED) || strstr(r->text, WOULD));
}

/* "GID index 5 is empty on pod-b (10.0.0.7), mlx5_0 port 1": the text
 * between the path and the verdict. */
static void broken_of(const char *t, char *out, size_t cap) {
  const char *p = strstr(t, "): ");
  p = p ? p + 3 : t;
  const char *end = strstr(p, ". "); /* the cause has none: addresses, never ". " */
  int n = end ? (int)(end - p) : (int)strlen(p);
  snprintf(out, cap, "%.*s", n > 400 ? 400 : n, p);
}

void repair_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *f = finding_new(cx->out, "repaired-pair", CONF_HIGH);
  if (!f) return;
  size_t repaired = 0;
  for (size_t i = 0; i < h->n; i++) {
    finding_evidence(f, h->v[i]);
    repaired += strstr(h->v[i]->text, REPAIRED) != NULL;
  }
  const char *t = h->v[0]->text;
  char broken[420];
  broken_of(t, broken, sizeof(broken));
  size_t fell = h->n - repaired;
  if (repaired)
    finding_cause(f, "%zu connection%s on RDMA only because the plugin repaired %s: %s%s", repaired,
                  repaired == 1 ? " runs" : "s run", repaired == 1 ? "it" : "them", broken,
                  fell ? "; others fell back to TCP although another path reaches" : "");
  else
    finding_cause(f,
                  "%zu connection%s fell back to TCP although another GID, port or NIC of the "
                  "two hosts reaches (NCCL_DIAG_REPAIR=warn on a host): %s",
                  fell, fell == 1 ? "" : "s", broken);
  const char *fix = text_after(t, "Fix the configuration: ");
  const char *end = fix ? strstr(fix, " (NCCL_DIAG_REPAIR=off") : NULL;
  int n = !fix ? 0 : end ? (int)(end - fix) : (int)strlen(fix);
  if (fix && n) finding_fix(f, "%.*s", n > 600 ? 600 : n, fix);
  else finding_fix(f, "as the plugin's message says (quoted as evidence)");
}
