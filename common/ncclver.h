/* SPDX-License-Identifier: Apache-2.0 */
/* The NCCL version of the process we are loaded into, for the hello record. */
#ifndef DIAG_COMMON_NCCLVER_H
#define DIAG_COMMON_NCCLVER_H

#include <stddef.h>

/* NCCL_VERSION_CODE of the process's NCCL, or 0 when there is none. */
int nccl_version_code(void);
/* "2.28.9", or "unknown" for 0. */
void nccl_version_str(int code, char *buf, size_t cap);

#endif
