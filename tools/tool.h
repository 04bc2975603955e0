/* SPDX-License-Identifier: Apache-2.0 */
/* Shared bits of the nccl-net-diag command. */
#ifndef DIAG_TOOLS_TOOL_H
#define DIAG_TOOLS_TOOL_H

#include <stddef.h>

#include "plugin/abi/nccl_common.h"

extern int tool_verbose;

/* Prints the plugin's log: WARNs always, init-time INFO (NCCL_INIT) by
 * default, everything with -v, like NCCL_DEBUG=INFO does. */
void tool_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* "64M", "1G", "4096" -> bytes; 0 on error. */
size_t tool_parse_size(const char *s);

int cmd_selftest(int argc, char **argv);
int cmd_params(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_probe(int argc, char **argv);

#endif
