/* SPDX-License-Identifier: Apache-2.0 */
/* The words for a stalled connection's path (stall.c): both of its ends
 * and the counters that show whether it moves anything. Read once per
 * stall episode from the proxy thread: getsockopt calls that never block. */
#ifndef DIAG_TRANSPORT_RUN_PATH_WORDS_H
#define DIAG_TRANSPORT_RUN_PATH_WORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/liveness.h"

struct transport_comm;

/* WARN that c's path moves nothing: is_cut when the liveness check's own
 * socket shows the path drops everything (lp), else both ends run and post. */
void run_say_link(const struct transport_comm *c, bool is_cut, const struct liveness_path *lp,
                  const char *what, long long secs);
struct ipaddr;
/* This end's address on c's path (a TCP comm's data socket); false when unknown. */
bool run_path_local(const struct transport_comm *c, struct ipaddr *a);

#endif
