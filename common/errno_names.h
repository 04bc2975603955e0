/* SPDX-License-Identifier: Apache-2.0 */
/* The errnos the product names in its messages and reads in NCCL's: the
 * symbol ("ECONNREFUSED") and glibc's text ("Connection refused"), one
 * table for the plugin's log lines and for explain's reading of logs. */
#ifndef DIAG_COMMON_ERRNO_NAMES_H
#define DIAG_COMMON_ERRNO_NAMES_H

#include <stddef.h>

struct errno_name {
  int err;
  const char *name;  /* "ETIMEDOUT" */
  const char *words; /* "Connection timed out", as glibc's strerror */
};

extern const struct errno_name errno_names[];
extern const size_t errno_nnames;

/* The entry of err, or NULL when the table has none. */
const struct errno_name *errno_find(int err);
/* "ECONNREFUSED" etc. for log lines: "OK" for 0, "errno" when unknown. */
const char *errno_name(int err);

#endif
