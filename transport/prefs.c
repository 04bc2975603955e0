/* SPDX-License-Identifier: Apache-2.0 */
/* The one place the transport layer reads its settings (prefs.h). */
#include "transport/prefs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "common/knobs.h"

static struct transport_prefs prefs;
static pthread_mutex_t prefs_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint read_generation; /* knob_generation() of the last read; 0 = never */

static void read_sockets(struct transport_prefs *p) {
  p->socket_ifname = knob_str(K_SOCKET_IFNAME);
  p->socket_family = knob_enum(K_SOCKET_FAMILY);
  p->socket_nthreads = knob_int(K_SOCKET_NTHREADS);
  p->nsocks_perthread = knob_int(K_NSOCKS_PERTHREAD);
  p->socket_inline = knob_int(K_DIAG_SOCKET_INLINE);
  p->min_chunk = knob_int(K_DIAG_MIN_CHUNK);
  p->caller_max = knob_int(K_DIAG_CALLER_MAX);
  p->socket_pool = knob_int(K_DIAG_SOCKET_POOL);
  p->connect_timeout_ms = knob_int(K_DIAG_CONNECT_TIMEOUT_MS);
  p->handshake_timeout_ms = knob_int(K_DIAG_HANDSHAKE_TIMEOUT_MS);
  p->peer_timeout_sec = knob_int(K_DIAG_PEER_TIMEOUT_SEC);
  p->fallback = knob_enum(K_DIAG_FALLBACK);
  p->repair = knob_enum(K_DIAG_REPAIR);
  p->is_repair_ports = knob_int(K_DIAG_REPAIR_PORTS) != 0;
  p->spin_us = knob_int(K_DIAG_SPIN_US);
  p->idle_wait_us = knob_int(K_DIAG_IDLE_WAIT_US);
  p->stall_warn_sec = knob_int(K_DIAG_STALL_WARN_SEC);
  p->stall_sec = knob_int(K_DIAG_STALL_SEC);
  const char *m = knob_str(K_DIAG_METRICS);
  p->metrics_dir = m && *m ? m : NULL;
  p->is_run_stats = knob_int(K_DIAG_RUN_STATS) != 0;
  p->slow_percent = knob_int(K_DIAG_SLOW_PERCENT);
}

static void read_rdma(struct transport_prefs *p) {
  p->diag_ibverbs_lib = knob_is_set(K_DIAG_IBVERBS_LIB) ? knob_str(K_DIAG_IBVERBS_LIB) : NULL;
  p->ibverbs_lib = knob_str(K_IBVERBS_LIB);
  p->ib_gid_index_text = knob_is_set(K_IB_GID_INDEX) ? knob_raw(K_IB_GID_INDEX) : NULL;
  p->ib_relaxed_ordering = knob_int(K_IB_PCI_RELAXED_ORDERING);
  p->is_gdr_flush_disabled = knob_int(K_GDR_FLUSH_DISABLE) != 0;
  p->is_flush_forced = knob_int(K_DIAG_FORCE_FLUSH) != 0;
  p->is_ece_enabled = knob_int(K_IB_ECE_ENABLE) != 0;
  p->is_async_events_returned = knob_int(K_IB_RETURN_ASYNC_EVENTS) != 0;
  p->ib_timeout = knob_int(K_IB_TIMEOUT);
  p->ib_retry_cnt = knob_int(K_IB_RETRY_CNT);
  p->ib_sl = knob_int(K_IB_SL);
  p->ib_tc = knob_int(K_IB_TC);
  p->ib_fifo_tc = knob_int(K_IB_FIFO_TC);
  p->ib_pkey = knob_int(K_IB_PKEY);
  p->ib_qps_per_connection = knob_int(K_IB_QPS_PER_CONNECTION);
  p->is_split_data_on_qps = knob_int(K_IB_SPLIT_DATA_ON_QPS) != 0;
  p->ib_adaptive_routing = knob_int(K_IB_ADAPTIVE_ROUTING);
  p->ib_ar_threshold = knob_int(K_IB_AR_THRESHOLD);
  p->ib_mqp_retry_cnt = knob_int(K_IB_MQP_RETRY_CNT);
  p->ib_mqp_retry_sleep_msec = knob_int(K_IB_MQP_RETRY_SLEEP_MSEC);
  p->is_mqp_retry_all = knob_int(K_IB_MQP_RETRY_ALL) != 0;
  p->is_merge_nics = knob_int(K_IB_MERGE_NICS) != 0;
  p->is_port_failover = knob_int(K_IB_RESILIENCY_PORT_FAILOVER) != 0;
  p->port_failover_max_attempts = knob_int(K_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS);
  p->is_port_recovery = knob_int(K_IB_RESILIENCY_PORT_RECOVERY) != 0;
  p->port_recovery_delay_ms = knob_int(K_IB_RESILIENCY_PORT_RECOVERY_START_DELAY);
  p->port_recovery_max = knob_int(K_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX);
}

void transport_prefs_read(void) {
  pthread_mutex_lock(&prefs_lock);
  knob_load(0); /* no-op once loaded: whoever loaded them chose when */
  unsigned gen = knob_generation();
  if (atomic_load(&read_generation) != gen) {
    struct transport_prefs p;
    memset(&p, 0, sizeof(p));
    read_sockets(&p);
    read_rdma(&p);
    prefs = p;
    atomic_store(&read_generation, gen);
  }
  pthread_mutex_unlock(&prefs_lock);
}

const struct transport_prefs *transport_prefs(void) {
  unsigned gen = knob_generation();
  if (!gen || atomic_load_explicit(&read_generation, memory_order_acquire) != gen)
    transport_prefs_read();
  return &prefs;
}
