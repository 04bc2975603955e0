/* SPDX-License-Identifier: Apache-2.0 */
/* Which NCCL_* names NCCL or this plugin reads, and the closest one to a
 * name that neither reads (a typo NCCL would ignore silently). */
#ifndef DIAG_COMMON_KNOB_NAMES_H
#define DIAG_COMMON_KNOB_NAMES_H

#include <stdbool.h>
#include <stddef.h>

bool knob_name_is_known(const char *name);
/* The known name within 3 edits of name, the closest; NULL when none. */
const char *knob_name_closest(const char *name);
/* For an NCCL_* name nothing reads: true, with the one-line warning in msg
 * (origin: the file it was set in, NULL for the environment). */
bool knob_name_unknown(const char *name, const char *origin, char *msg, size_t cap);
/* One WARN per NCCL_* variable of this process that nothing reads. */
void knob_names_warn_unknown(void);

#endif
