/* SPDX-License-Identifier: Apache-2.0 */
/* What this process holds right now: threads, open descriptors and
 * resident memory, for the bench's and the tests' cost-per-comm figures. */
#ifndef DIAG_TOOLS_PROC_USAGE_H
#define DIAG_TOOLS_PROC_USAGE_H

#include <stdint.h>

struct proc_usage {
  int threads, fds;
  int64_t rss_kb; /* held: read after freed heap pages went back to the system */
};

/* Resident memory is read after malloc_trim, so it is what the process
 * holds, not the transient peak of getting there. */
void proc_usage_now(struct proc_usage *u);

#endif
