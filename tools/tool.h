/* SPDX-License-Identifier: Apache-2.0 */
/* Shared bits of the nccl-net-diag command. */
#ifndef DIAG_TOOLS_TOOL_H
#define DIAG_TOOLS_TOOL_H

#include <stddef.h>

#include "plugin/abi/nccl_common.h"
#include "tools/json_dest.h"

extern int tool_verbose;

/* Prints the plugin's log: WARNs always, init-time INFO (NCCL_INIT) by
 * default, everything with -v, like NCCL_DEBUG=INFO does. */
void tool_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The one CLI convention: -h/--help prints usage on stdout and exits 0;
 * a usage error's first line on stderr names it ("nccl-net-diag CMD:
 * unknown option '--x'", "... option --x needs a value", "... bad value 'v'
 * for --x: the range"), then where to look; it exits 2. Returns 2. */
int tool_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An integer in [lo, hi] written in full ("12", not "12x"): 0, or EINVAL. */
int tool_parse_int(const char *s, long lo, long hi, long *out);

int cmd_selftest(int argc, char **argv);
int cmd_params(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_probe(int argc, char **argv);

#endif
