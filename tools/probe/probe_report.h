/* SPDX-License-Identifier: Apache-2.0 */
/* Rank 0's report: text for people, JSON (--json[=FILE]) for tools. Both
 * carry the same content: the hosts and their facts, every pair tested,
 * and the problems with their fixes. */
#ifndef DIAG_TOOLS_PROBE_PROBE_REPORT_H
#define DIAG_TOOLS_PROBE_PROBE_REPORT_H

#include <stdio.h>

#include "tools/probe/probe.h"

void probe_report_text(FILE *f, const struct probe_run *r, int exit_status);
/* The JSON document on f; the caller checks and closes f. */
void probe_report_json(FILE *f, const struct probe_run *r, int exit_status);

/* Shared wording. */
void probe_report_nccl_version(const struct probe_facts *f, char *buf, size_t cap);
/* "never arrived", "gone", "" (took part). */
const char *probe_report_rank_state(const struct probe_run *r, int rank);

#endif
