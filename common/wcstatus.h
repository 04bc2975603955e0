/* SPDX-License-Identifier: Apache-2.0 */
/* What an RDMA completion status means in an NCCL job: its verbs name, what
 * the NIC reports, the usual cause and what to do. A pure table keyed by the
 * numeric ibv_wc_status (the values are fixed by the verbs ABI), so it needs
 * no verbs header and serves both the live plugin and the log reader. */
#ifndef DIAG_COMMON_WCSTATUS_H
#define DIAG_COMMON_WCSTATUS_H

#include <stdbool.h>

struct wc_status_info {
  int status;        /* enum ibv_wc_status value */
  const char *name;  /* "IBV_WC_RETRY_EXC_ERR" */
  const char *what;  /* what the NIC reports, in words */
  const char *cause; /* the usual cause in an NCCL job */
  const char *fix;   /* what to check or set */
  bool is_secondary; /* the consequence of an earlier error, not a cause */
  /* Refinements, when the one who reads the completion knows more (the live
   * plugin does; a log reader does not); NULL: cause and fix apply. */
  const char *cause_first, *fix_first; /* the connection's first operation failed */
  const char *cause_gpu, *fix_gpu;     /* the local buffer is GPU memory */
  const char *cause_host, *fix_host;   /* the local buffer is host memory */
};

enum wc_memory { WC_MEM_UNKNOWN, WC_MEM_HOST, WC_MEM_GPU };

/* The cause and fix of a status as far as the caller knows the case:
 * is_first, the first operation of the connection failed; mem, the local
 * buffer's memory. Falls back to the general ones; NULL for a status
 * outside the table. */
const struct wc_status_info *wc_status_advice(int status, bool is_first, enum wc_memory mem,
                                              const char **cause, const char **fix);

/* NULL for a status outside the table. */
const struct wc_status_info *wc_status_info(int status);

/* "IBV_WC_RETRY_EXC_ERR" or "RETRY_EXC_ERR" -> 12; -1 when unknown. */
int wc_status_from_name(const char *name);

#endif
