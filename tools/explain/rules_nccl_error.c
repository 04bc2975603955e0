/* SPDX-License-Identifier: Apache-2.0 */
/* Which lines are an NCCL error at all: the unexplained-warn rule's match,
 * which the CUDA rule also asks so that the two split the lines between
 * them. It calls no rule. */
#include <string.h>

#include "tools/explain/rules.h"

/* NCCLCHECK's return trace ("group.cc:64 -> 2 [Async thread]", NCCL 2.4-2.30)
 * reaching the group that ran ncclCommInitRank: init failed, even when
 * the step that failed printed no WARN. Traces that stop lower down are
 * often harmless (a missing sysfs path), so only these count. */
bool rules_failed_init_trace(const char *t) {
  const char *a = strstr(t, " -> ");
  if (!a || a[4] < '1' || a[4] > '9') return false;
  return strstr(t, "[Async thread]") || strstr(t, "group.cc:");
}

/* An error as a program around NCCL prints it: PyTorch's exceptions, the
 * ncclResult_t names and texts, a failed verbs call quoted without NCCL's
 * prefix. */
bool unknown_match(const struct rec *r) {
  static const char *const errors[] = {
    "unhandled system error",
    "unhandled cuda error",
    "internal error",
    "remote process exited or there was a network error",
    "invalid usage",
    "invalid argument",
    "ncclSystemError",
    "ncclInternalError",
    "ncclRemoteError",
    "ncclUnhandledCudaError",
    "ncclInvalidUsage",
    "ncclInvalidArgument",
    "NCCL error",
    "NCCL Error",
    "DistBackendError",
    "NCCL communicator was aborted",
    "Failed to initialize any NET plugin",
    "Call to ibv_",
    "Test NCCL failure",                         /* nccl-tests */
    "watchdog thread terminated with exception", /* PyTorch 1.13-2.x */
  };
  const char *t = r->text;
  if (r->level == REC_WARN) return true;
  if (r->level == REC_INFO) return rules_failed_init_trace(t);
  if (r->level != REC_TEXT) return false;
  bool is_nccl = strstr(t, "NCCL") || strstr(t, "nccl") || strstr(t, "ibv_");
  for (size_t i = 0; is_nccl && i < sizeof(errors) / sizeof(errors[0]); i++)
    if (strstr(t, errors[i])) return true;
  return false;
}
