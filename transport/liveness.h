/* SPDX-License-Identifier: Apache-2.0 */
/* Liveness of the peer process behind a connection, answered by the peer's
 * plugin independently of its caller's progress: a peer that is alive but
 * has not posted the matching operation yet keeps answering; a process that
 * no longer runs (killed, stopped, frozen) or cannot be reached stops
 * answering, and after NCCL_DIAG_PEER_TIMEOUT_SEC every request of its
 * connections fails with the observation in words.
 *
 * A comm holds a reference to its peer's record (comm->live); the data
 * paths ask liveness_peer_lost() when a request has made no progress. */
#ifndef DIAG_TRANSPORT_LIVENESS_H
#define DIAG_TRANSPORT_LIVENESS_H

#include <stdbool.h>
#include <stddef.h>

struct liveness_peer;

/* true once the peer has stopped answering for the timeout; why then names
 * the peer and what was observed. p may be NULL (never lost). Cheap: an
 * atomic load unless lost. */
bool liveness_peer_lost(const struct liveness_peer *p, char *why, size_t cap);

#endif
