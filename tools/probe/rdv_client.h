/* SPDX-License-Identifier: Apache-2.0 */
/* Every rank's connection to rank 0's rendezvous (rank 0's own included). */
#ifndef DIAG_TOOLS_PROBE_RDV_CLIENT_H
#define DIAG_TOOLS_PROBE_RDV_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "tools/probe/rdv_conn.h"

struct rdv_client {
  struct rdv_conn conn;
  char where[300]; /* "node01:29500 (MASTER_ADDR)", for messages */
};

/* Connects, retrying while rank 0 is not up yet, until deadline_ns. 0, or
 * an errno with the message for the user in why. */
int rdv_client_connect(struct rdv_client *c, const char *host, int port, const char *from,
                       int64_t deadline_ns, char *why, size_t cap);
/* Sends one message, waiting at most until deadline_ns. */
int rdv_client_send(struct rdv_client *c, struct wire_buf *b, int64_t deadline_ns, char *why,
                    size_t cap);
/* Waits up to timeout_ms (0: just looks) for the next whole message. */
enum rdv_io rdv_client_next(struct rdv_client *c, int timeout_ms, char *why, size_t cap);
void rdv_client_close(struct rdv_client *c);

#endif
