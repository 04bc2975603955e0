/* SPDX-License-Identifier: Apache-2.0 */
/* Private to netload*.c: dispatch of a call that has the same shape in every
 * table version (name, devices, deregMr, iflush, test, close*). */
#ifndef DIAG_TOOLS_NETLOAD_CALL_H
#define DIAG_TOOLS_NETLOAD_CALL_H

#include "tools/netload.h"

#define NL_SAME(nl, call)                                                                          \
  ((nl)->version == 5    ? (nl)->v5->call                                                          \
   : (nl)->version == 6  ? (nl)->v6->call                                                          \
   : (nl)->version == 7  ? (nl)->v7->call                                                          \
   : (nl)->version == 8  ? (nl)->v8->call                                                          \
   : (nl)->version == 9  ? (nl)->v9->call                                                          \
   : (nl)->version == 10 ? (nl)->v10->call                                                         \
   : (nl)->version == 11 ? (nl)->v11->call                                                         \
                         : (nl)->v12->call)

#endif
