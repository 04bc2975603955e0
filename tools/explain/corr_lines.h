/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the correlation: what one line adds to its host's facts. */
#ifndef DIAG_TOOLS_EXPLAIN_CORR_LINES_H
#define DIAG_TOOLS_EXPLAIN_CORR_LINES_H

#include "tools/explain/correlate.h"

void corr_read_rec(struct corr_host *h, const struct rec *r);
/* Adds a port (merging one already seen with the same device and GID). */
void corr_add_port(struct corr_host *h, const struct corr_port *p);

#endif
