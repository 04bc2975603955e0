/* SPDX-License-Identifier: Apache-2.0 */
/* A port's down and up events, timed against its QPs' deadline: a QP that
 * sends into a dead link gives up after NCCL_IB_RETRY_CNT + 1 tries of
 * 4.096 us x 2^NCCL_IB_TIMEOUT each. A flap shorter than that loses no
 * connection; a longer one fails the connections that had data in flight
 * while it was down (retry exceeded), and idle ones at their next send. */
#include <stdio.h>

#include "common/clock.h"
#include "common/log.h"
#include "transport/ib/dev/ib.h"
#include "transport/prefs.h"

void ib_flap_down(struct ib_dev *d) {
  if (!d->down_since_ns) d->down_since_ns = clock_mono_ns();
}

/* Seconds a QP outlives silence with these settings. */
static double qp_deadline_s(int timeout, int retry_cnt) {
  return 4.096e-6 * (double)(1ULL << timeout) * (retry_cnt + 1);
}

/* The smallest NCCL_IB_TIMEOUT whose deadline covers down_s, or 0 when
 * none does (31 is the largest). */
static int timeout_for(double down_s, int retry_cnt) {
  for (int t = 1; t <= 31; t++)
    if (qp_deadline_s(t, retry_cnt) > down_s * 1.5) return t; /* a margin for the next flap */
  return 0;
}

void ib_flap_up(struct ib_dev *d, int port) {
  int timeout = (int)transport_prefs()->ib_timeout,
      retry_cnt = (int)transport_prefs()->ib_retry_cnt;
  double deadline = qp_deadline_s(timeout, retry_cnt);
  if (!d->down_since_ns) { /* up without a down seen by this process */
    WARN("device %s port %d: port active", d->td->name, port);
    return;
  }
  double down = (double)(clock_mono_ns() - d->down_since_ns) * 1e-9;
  d->down_since_ns = 0;
  if (down < deadline) {
    WARN("device %s port %d: port active again after %.3f s down, within its queue pairs' "
         "deadline of %.1f s (NCCL_IB_TIMEOUT=%d, NCCL_IB_RETRY_CNT=%d): its connections "
         "survived the flap",
         d->td->name, port, down, deadline, timeout, retry_cnt);
    return;
  }
  int t = timeout_for(down, retry_cnt);
  char fix[160];
  if (t)
    snprintf(fix, sizeof(fix), "to ride out flaps this long set NCCL_IB_TIMEOUT=%d (%.0f s)", t,
             qp_deadline_s(t, retry_cnt));
  else snprintf(fix, sizeof(fix), "no NCCL_IB_TIMEOUT rides out a flap this long: fix the link");
  WARN("device %s port %d: port active again after %.3f s down, longer than its queue pairs' "
       "deadline of %.1f s (NCCL_IB_TIMEOUT=%d, NCCL_IB_RETRY_CNT=%d): its connections with data "
       "in flight failed with retry-exceeded errors; %s",
       d->td->name, port, down, deadline, timeout, retry_cnt, fix);
}
