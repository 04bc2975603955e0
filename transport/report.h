/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnoses about a peer that would otherwise repeat for every one of the
 * hundreds of connections a job opens: each distinct one is a WARN once per
 * process, later repeats are INFO. */
#ifndef DIAG_TRANSPORT_REPORT_H
#define DIAG_TRANSPORT_REPORT_H

#include <stdbool.h>

#include "transport/hello.h"

/* Whether key is seen for the first time in this process. */
bool report_first(const char *key);

/* Logs the handshake (INFO + event) and, when the records differ, one WARN
 * naming both hosts and each differing field. Returns the difference count. */
int report_hello(const struct hello *mine, const struct hello *peer, const char *peer_desc,
                 const char *role);

#endif
