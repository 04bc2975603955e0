/* SPDX-License-Identifier: Apache-2.0 */
/* The logger the probe hands to the plugin's init: it keeps the plugin's
 * WARN lines (its own diagnosis of a failed connection) so a failed pair
 * can carry them to rank 0, and the init line that names the plugin's
 * version. With -v every line also goes to stderr. Thread-safe: the plugin
 * logs from its own threads too. */
#ifndef DIAG_TOOLS_PROBE_CAPTURE_H
#define DIAG_TOOLS_PROBE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "plugin/abi/nccl_common.h"

void capture_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void capture_set_verbose(int verbose, const char *prefix);
/* A mark: the WARN lines logged after it can be read back. */
uint64_t capture_mark(void);
/* The WARN lines since mark, one per line, the "NET/diag " tag removed;
 * at most cap bytes (the earliest lines first: they name the cause). */
void capture_warns_since(uint64_t mark, char *buf, size_t cap);
/* The plugin's version from its init line, "" when it logged none. */
void capture_plugin_version(char *buf, size_t cap);

#endif
