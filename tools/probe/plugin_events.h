/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's structured account of a failed connection: the probe points
 * the plugin's event file (NCCL_DIAG_LOG_FILE) at a private temporary file
 * and, after a pair's task, reads the cause code of the plugin's
 * "connect_failed" events, so a pair is labelled by what the plugin found,
 * never by words in its messages. It also gives the plugin a connect
 * timeout well inside a pair's time, so the plugin's diagnosis arrives
 * before rank 0 gives the pair up. */
#ifndef DIAG_TOOLS_PROBE_PLUGIN_EVENTS_H
#define DIAG_TOOLS_PROBE_PLUGIN_EVENTS_H

#include <stddef.h>

#include "tools/probe/probe.h"

/* The connect timeout the probe gives the plugin for a --timeout, in ms. */
long plugin_connect_timeout_ms(int timeout_s);
/* Sets the plugin's settings in this process's environment: call before
 * the plugin's init. Never fails: without an event file, pairs are
 * labelled by what the probe itself saw. */
void plugin_events_setup(const struct probe_opts *o);
/* Where the events written from now on start. */
long plugin_events_mark(void);
/* The cause code of the first "connect_failed" event since mark ("" none),
 * e.g. "no_answer", "refused", "no_route"; or "repaired" from a "repaired"
 * event: the connection runs on another GID pair than configured. */
void plugin_events_cause(long mark, char *code, size_t cap);
/* Removes the temporary file. */
void plugin_events_close(void);

#endif
