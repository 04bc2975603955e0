/* SPDX-License-Identifier: Apache-2.0 */
/* A port's down and up events, timed against its QPs' deadline: a QP that
 * sends into a dead link gives up after NCCL_IB_RETRY_CNT + 1 tries of
 * 4.096 us x 2^NCCL_IB_TIMEOUT each. A flap shorter than that loses no
 * connection; a longer one fails those that sent while it was down (retry
 * exceeded). The port's return says which, from the connections that
 * failed while it was down (ib_fail counts them). */
#include <stdio.h>

#include "common/clock.h"
#include "common/log.h"
#include "transport/ib/dev/ib.h"
#include "transport/prefs.h"
#include "transport/run/port_state.h"

/* Seconds a QP outlives silence with these settings. */
static double qp_deadline_s(int timeout, int retry_cnt) {
  return 4.096e-6 * (double)(1ULL << timeout) * (retry_cnt + 1);
}

double ib_qp_deadline_s(void) {
  return qp_deadline_s((int)transport_prefs()->ib_timeout, (int)transport_prefs()->ib_retry_cnt);
}

void ib_flap_down(struct ib_dev *d) {
  /* flap_failed is not reset here: a failed completion may have found the
   * port down, and failed its connection, before this event came */
  /* its spell, for the port's return below and for the run-time verdicts */
  run_port_down(d->td->name, d->td->ib_port, clock_mono_ns(), (int64_t)(ib_qp_deadline_s() * 1e9));
}

/* "no connection of this process on it failed", "2 connections ... failed" */
static void failed_words(char *out, size_t cap, int n) {
  if (!n) snprintf(out, cap, "no connection of this process on it failed");
  else snprintf(out, cap, "%d connection%s of this process on it failed", n, n > 1 ? "s" : "");
}

/* The smallest NCCL_IB_TIMEOUT whose deadline covers down_s, or 0 when
 * none does (31 is the largest). */
static int timeout_for(double down_s, int retry_cnt) {
  for (int t = 1; t <= 31; t++)
    if (qp_deadline_s(t, retry_cnt) > down_s * 1.5) return t; /* a margin for the next flap */
  return 0;
}

/* A link that comes back has retrained: with lanes down or at a lower
 * speed when its cable or transceiver is failing, and then it paces every
 * ring through it with nothing failing. "" when it came back at the rate
 * it had when the job started, or the rate cannot be read. */
static void rate_after(const struct ib_dev *d, int port, char *out, size_t cap) {
  char rate[64] = "";
  out[0] = 0;
  int was = d->td->speed_mbps;
  double gbps = was > 0 ? run_port_rate(d->td->name, port, rate, sizeof(rate)) : 0;
  if (gbps <= 0 || gbps * 1000 >= 0.9 * was) return;
  snprintf(out, cap,
           "; and it came back at %s, below the %d Gb/sec it linked at when the job started: "
           "its link retrained with lanes down or at a lower speed (a failing cable or "
           "transceiver), and every ring and tree through it now moves at that rate: check the "
           "link (mlxlink -d %s -p %d) and reseat or replace its cable or transceiver",
           rate, was / 1000, d->td->name, port);
}

void ib_flap_up(struct ib_dev *d, int port) {
  int timeout = (int)transport_prefs()->ib_timeout,
      retry_cnt = (int)transport_prefs()->ib_retry_cnt;
  double deadline = qp_deadline_s(timeout, retry_cnt);
  int nfailed = __atomic_exchange_n(&d->flap_failed, 0, __ATOMIC_RELAXED);
  int64_t now = clock_mono_ns(), since = run_port_up(d->td->name, port, now);
  char slower[400];
  rate_after(d, port, slower, sizeof(slower));
  if (!since) { /* up without a down seen by this process */
    WARN("device %s port %d: port active%s", d->td->name, port, slower);
    return;
  }
  double down = (double)(now - since) * 1e-9;
  char failed[96];
  failed_words(failed, sizeof(failed), nfailed);
  if (down < deadline) {
    WARN("device %s port %d: port active again after %.3f s down, within its queue pairs' "
         "deadline of %.1f s (NCCL_IB_TIMEOUT=%d, NCCL_IB_RETRY_CNT=%d): %s%s%s",
         d->td->name, port, down, deadline, timeout, retry_cnt, failed,
         nfailed ? " while it was down (their WARNs say how)"
                 : ": its connections survived the flap",
         slower);
    return;
  }
  int t = timeout_for(down, retry_cnt);
  char fix[160];
  if (t)
    snprintf(fix, sizeof(fix), "to ride out flaps this long set NCCL_IB_TIMEOUT=%d (%.0f s)", t,
             qp_deadline_s(t, retry_cnt));
  else snprintf(fix, sizeof(fix), "no NCCL_IB_TIMEOUT rides out a flap this long: fix the link");
  /* What failed by now: a connection whose peer sent into the dead link
   * may hear of it only after the port is back. */
  WARN("device %s port %d: port active again after %.3f s down, longer than its queue pairs' "
       "deadline of %.1f s (NCCL_IB_TIMEOUT=%d, NCCL_IB_RETRY_CNT=%d): %s while it was down (a "
       "connection that sent into the dead link, or whose peer did, fails with retry-exceeded "
       "errors, some only once the port is back); %s%s",
       d->td->name, port, down, deadline, timeout, retry_cnt, failed, fix, slower);
}
