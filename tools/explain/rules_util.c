/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers the rule builders share. They call no rule, so the rule files
 * depend on this file and on each other one way only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/explain/rules.h"

bool rules_version_before(const char *version, int major, int minor) {
  long a = 0, b = 0;
  if (!version || !text_long(version, &a)) return false;
  const char *dot = strchr(version, '.');
  if (!dot || !text_long(dot + 1, &b)) return false;
  return a < major || (a == major && b < minor);
}

bool rules_consequence(const struct explain_ctx *cx, const char *rule, const struct rec *r,
                       const char *note) {
  for (int i = 0; i < cx->out->n; i++) {
    struct finding *f = cx->out->v[i];
    if (strcmp(f->rule, rule)) continue;
    size_t n = strlen(f->cause);
    if (note && !strstr(f->cause, note)) snprintf(f->cause + n, sizeof(f->cause) - n, "; %s", note);
    finding_evidence(f, r);
    return true;
  }
  return false;
}

/* values[i] for each host through get(); NULL where unknown. */
int rules_split_by(const struct corr *c, const char *(*get)(const struct corr_host *), bool *is_odd,
                   char *buf, size_t cap) {
  const char **values = calloc((size_t)c->nhosts + 1, sizeof(*values));
  if (!values) return 0;
  for (int i = 0; i < c->nhosts; i++) values[i] = get(&c->hosts[i]);
  int n = corr_split(c, values, is_odd, buf, cap);
  free(values);
  return n;
}

const char *rules_version_of(const struct corr_host *h) {
  return h->version[0] ? h->version : NULL;
}

bool rules_version_split(const struct corr *c, char *buf, size_t cap) {
  bool *is_odd = calloc((size_t)c->nhosts + 1, sizeof(*is_odd));
  bool is_skew = is_odd && rules_split_by(c, rules_version_of, is_odd, buf, cap) > 1;
  free(is_odd);
  return is_skew;
}

void rules_add_version_evidence(const struct corr *c, struct finding *f) {
  for (int i = 0; i < c->nhosts; i++) finding_evidence(f, c->hosts[i].version_rec);
}
