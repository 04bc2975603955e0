/* SPDX-License-Identifier: Apache-2.0 */
/* The run record's small helpers: problems, names. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "tools/probe/probe.h"

#define MAX_PROBLEMS 10000

const char *probe_sev_name(enum probe_sev s) {
  return s == SEV_ERROR ? "error" : s == SEV_WARNING ? "warning" : "note";
}

const char *probe_rank_host(const struct probe_run *r, int rank, char *buf, size_t cap) {
  if (rank >= 0 && rank < r->world && r->facts[rank].host[0]) scopy(buf, cap, r->facts[rank].host);
  else snprintf(buf, cap, "rank %d", rank);
  return buf;
}

int probe_add_problem(struct probe_run *r, enum probe_sev sev, const char *hosts, const char *fix,
                      const char *fmt, ...) {
  if (r->nproblem == MAX_PROBLEMS) return ENOSPC;
  struct probe_problem *grown = probe_grow(r->problems, r->nproblem, sizeof(*grown));
  if (!grown) return ENOMEM;
  r->problems = grown;
  struct probe_problem *p = &grown[r->nproblem++];
  memset(p, 0, sizeof(*p));
  p->sev = sev;
  scopy(p->hosts, sizeof(p->hosts), hosts ? hosts : "");
  scopy(p->fix, sizeof(p->fix), fix ? fix : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->text, sizeof(p->text), fmt, ap);
  va_end(ap);
  return 0;
}
