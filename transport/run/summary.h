/* SPDX-License-Identifier: Apache-2.0 */
/* The end-of-job line: when the process's last connection closes, one INFO
 * with the connections, bytes, the slowest link against the median, and
 * the stalls diagnosed. */
#ifndef DIAG_TRANSPORT_RUN_SUMMARY_H
#define DIAG_TRANSPORT_RUN_SUMMARY_H

#include "transport/run/conns.h"

/* Connections with fewer bytes or less busy time than this are too short
 * for their rate to mean anything, and are left out of "slowest". */
#define RUN_RATE_MIN_BYTES (1u << 20)
#define RUN_RATE_MIN_BUSY_NS 10000000LL

/* Whether a connection's figures are enough to judge its rate. */
int run_conn_is_measured(const struct run_conn_info *i);

void run_summary_log(void);

#endif
