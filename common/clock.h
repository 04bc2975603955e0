/* SPDX-License-Identifier: Apache-2.0 */
/* The one monotonic clock of the project: deadlines, timeouts and
 * durations in nanoseconds. CLOCK_MONOTONIC, never the wall clock (NTP steps
 * it). Inline so the tools and the bench, which do not link the plugin's
 * core, use the same one. */
#ifndef DIAG_COMMON_CLOCK_H
#define DIAG_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t clock_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
