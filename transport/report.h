/* SPDX-License-Identifier: Apache-2.0 */
/* Diagnoses about a peer that would otherwise repeat for every one of the
 * hundreds of connections a job opens: each distinct one is a WARN once per
 * process, later repeats are INFO. */
#ifndef DIAG_TRANSPORT_REPORT_H
#define DIAG_TRANSPORT_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "transport/hello.h"

/* Whether key is seen for the first time in this process. */
bool report_first(const char *key);

/* The NCCL_SOCKET_IFNAME value that selects, on every node, the
 * interfaces two hosts share a network through: "bond0" when both name it
 * alike, "eno1,eth0" when they differ (NCCL takes a comma list of name
 * prefixes). lo and empty names are never offered. false when no name is
 * left. */
bool report_job_ifname(const char *if_a, const char *if_b, char *buf, size_t cap);

/* The setting that selects the interface other nodes most likely reach
 * this host through (topo/netif.h, netif_routable_pick), for a fix:
 * "NCCL_SOCKET_IFNAME=eth0 (here eth0 has 10.0.0.5/24, is up and holds the
 * default route)". skip (or NULL) is the interface that does not work.
 * false when no interface qualifies. */
bool report_routable_ifname(const char *skip, char *buf, size_t cap);

/* The cause of a message larger than the receive posted for it, for the
 * WARN of the side that detects it: the fields in which the two hosts'
 * records differ (versions, the NCCL_* settings that shape messages) when
 * there are any (settings_diff), else the application's own calls, which
 * then disagree. */
void report_size_mismatch(const char *settings_diff, const char *peer_host, char *buf, size_t cap);
/* What the two hello records differ in, for report_size_mismatch: kept by
 * a comm from its setup, so the records need not be; NULL when they agree
 * (or, with *err = ENOMEM, when it could not be kept). */
char *report_settings_diff(const struct hello *mine, const struct hello *peer, int *err);

/* Logs the handshake (INFO + event) and, when the records differ, one WARN
 * naming both hosts and each differing field. Returns the difference count. */
int report_hello(const struct hello *mine, const struct hello *peer, const char *peer_desc,
                 const char *role);

#endif
