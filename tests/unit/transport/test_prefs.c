/* SPDX-License-Identifier: Apache-2.0 */
/* transport/prefs.c: the transport's settings are read once, from the
 * environment through the knob table; a reload of the knobs (a tool that
 * applied its options) is seen, a bare change of the environment is not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/knobs.h"
#include "common/log.h"
#include "tap.h"
#include "transport/prefs.h"

/* Nothing loaded yet: the first call reads the environment itself. */
static void first_call_reads(void) {
  const struct transport_prefs *p = transport_prefs();
  CHECK(p->socket_ifname && !strcmp(p->socket_ifname, "=eth9"), "NCCL_SOCKET_IFNAME: %s",
        p->socket_ifname ? p->socket_ifname : "(null)");
  CHECK(p->connect_timeout_ms == 1234, "NCCL_DIAG_CONNECT_TIMEOUT_MS: %lld",
        (long long)p->connect_timeout_ms);
  CHECK(p->socket_family == 1, "NCCL_SOCKET_FAMILY=AF_INET6 is choice 1: %d", p->socket_family);
  CHECK(p->ib_gid_index_text && !strcmp(p->ib_gid_index_text, "3"), "NCCL_IB_GID_INDEX text");
  CHECK(p->is_port_failover && p->is_split_data_on_qps, "booleans set to 1");
  CHECK(p->fallback == FALLBACK_OFF, "NCCL_DIAG_FALLBACK=off: %d", p->fallback);
}

/* Defaults where unset or invalid, and the empty metrics directory is none. */
static void defaults(void) {
  const struct transport_prefs *p = transport_prefs();
  CHECK(p->ib_timeout == 20, "NCCL_IB_TIMEOUT=99 is out of range: the default 20, not %lld",
        (long long)p->ib_timeout);
  CHECK(p->ib_retry_cnt == 7 && p->peer_timeout_sec == 120 && p->socket_nthreads == -2,
        "defaults: retry %lld, peer timeout %lld, threads %lld", (long long)p->ib_retry_cnt,
        (long long)p->peer_timeout_sec, (long long)p->socket_nthreads);
  CHECK(p->metrics_dir == NULL, "NCCL_DIAG_METRICS empty is unset");
  CHECK(p->diag_ibverbs_lib == NULL, "NCCL_DIAG_IBVERBS_LIB unset: none forced");
  CHECK(p->is_run_stats && p->is_ece_enabled && !p->is_flush_forced, "boolean defaults");
}

/* The environment changes after the read: the values stay until a reload. */
static void read_once(void) {
  setenv("NCCL_DIAG_CONNECT_TIMEOUT_MS", "5678", 1);
  unsetenv("NCCL_IB_GID_INDEX");
  const struct transport_prefs *p = transport_prefs();
  CHECK(p->connect_timeout_ms == 1234, "no reload, same value: %lld",
        (long long)p->connect_timeout_ms);
  knob_load(1);
  p = transport_prefs();
  CHECK(p->connect_timeout_ms == 5678, "after a reload: %lld", (long long)p->connect_timeout_ms);
  CHECK(p->ib_gid_index_text == NULL, "NCCL_IB_GID_INDEX unset after the reload");
}

int main(void) {
  log_set_stderr_level(LOG_LEVEL_NONE);
  setenv("NCCL_SOCKET_IFNAME", "=eth9", 1);
  setenv("NCCL_SOCKET_FAMILY", "AF_INET6", 1);
  setenv("NCCL_DIAG_CONNECT_TIMEOUT_MS", "1234", 1);
  setenv("NCCL_IB_GID_INDEX", "3", 1);
  setenv("NCCL_IB_RESILIENCY_PORT_FAILOVER", "1", 1);
  setenv("NCCL_IB_SPLIT_DATA_ON_QPS", "1", 1);
  setenv("NCCL_DIAG_FALLBACK", "off", 1);
  setenv("NCCL_IB_TIMEOUT", "99", 1);
  setenv("NCCL_DIAG_METRICS", "", 1);
  TAP_CASE("the first call reads the environment through the knob table", first_call_reads);
  TAP_CASE("unset or invalid settings take the knob's default", defaults);
  TAP_CASE("read once: a changed environment is seen after the knobs reload", read_once);
  return tap_done();
}
