/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL's configuration files, read as NCCL reads them (its
 * src/misc/param.cc): NCCL_CONF_FILE when set, else ~/.nccl.conf, then
 * /etc/nccl.conf. Each "NAME=VALUE" line (a line starting with '#' is a
 * comment; nothing is trimmed) sets NAME only where nothing set it before:
 * the environment wins, then the first file. */
#ifndef DIAG_TOOLS_NCCLCONF_H
#define DIAG_TOOLS_NCCLCONF_H

#include <stddef.h>

/* Sets this process's environment from the files, as NCCL would before the
 * plugin reads it, and remembers what came from where. */
void ncclconf_apply(void);
/* The file a variable's value came from, or NULL (the environment). */
const char *ncclconf_origin(const char *name);
/* The files read, in order, as "FILE (N settings)"; "" when none exists. */
void ncclconf_files(char *buf, size_t cap);
/* Calls fn for each line of the files that sets a name nothing reads (a
 * typo, or spaces around '='), with its one-line warning. */
void ncclconf_each_unknown(void (*fn)(void *arg, const char *msg), void *arg);

#endif
