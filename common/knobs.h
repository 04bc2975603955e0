/* SPDX-License-Identifier: Apache-2.0 */
/* The knob table: every environment variable the plugin reads, with its
 * type, default and help text. NCCL's own names keep NCCL's meaning; ours are
 * NCCL_DIAG_*. Values are parsed once (knob_load); a bad value gets a WARN
 * that quotes it and says what is accepted, and the default is used. */
#ifndef DIAG_COMMON_KNOBS_H
#define DIAG_COMMON_KNOBS_H

#include <stdint.h>

enum knob_id {
  K_SOCKET_IFNAME,
  K_SOCKET_FAMILY,
  K_NSOCKS_PERTHREAD,
  K_SOCKET_NTHREADS,
  K_IB_DISABLE,
  K_IB_HCA,
  K_IB_GID_INDEX,
  K_IB_ADDR_FAMILY,
  K_IB_ADDR_RANGE,
  K_IB_ROCE_VERSION_NUM,
  K_IB_TIMEOUT,
  K_IB_RETRY_CNT,
  K_IB_SL,
  K_IB_TC,
  K_IB_FIFO_TC,
  K_IB_PKEY,
  K_IB_QPS_PER_CONNECTION,
  K_IB_SPLIT_DATA_ON_QPS,
  K_IB_ADAPTIVE_ROUTING,
  K_IB_AR_THRESHOLD,
  K_IB_PCI_RELAXED_ORDERING,
  K_IB_MQP_RETRY_CNT,
  K_IB_MQP_RETRY_SLEEP_MSEC,
  K_IB_MQP_RETRY_ALL,
  K_IB_ECE_ENABLE,
  K_IB_RETURN_ASYNC_EVENTS,
  K_GDR_FLUSH_DISABLE,
  K_IB_MERGE_NICS,
  K_IB_RESILIENCY_PORT_FAILOVER,
  K_IB_RESILIENCY_PORT_FAILOVER_MAX_ATTEMPTS,
  K_IB_RESILIENCY_PORT_FAILOVER_PROBE_DELAY,
  K_IB_RESILIENCY_PORT_RECOVERY,
  K_IB_RESILIENCY_PORT_RECOVERY_START_DELAY,
  K_IB_RESILIENCY_PORT_RECOVERY_ATTEMPTS_MAX,
  K_DIAG_FALLBACK,
  K_DIAG_LOG_FILE,
  K_DIAG_SYSFS_ROOT,
  K_DIAG_IFADDRS,
  K_DIAG_IBVERBS_LIB,
  K_IBVERBS_LIB,
  K_DIAG_CONNECT_TIMEOUT_MS,
  K_DIAG_HANDSHAKE_TIMEOUT_MS,
  K_DIAG_SOCKET_INLINE,
  K_DIAG_MIN_CHUNK,
  K_DIAG_CALLER_MAX,
  K_DIAG_SOCKET_POOL,
  K_DIAG_STALL_WARN_SEC,
  K_DIAG_STALL_SEC,
  K_DIAG_SLOW_PERCENT,
  K_DIAG_PEER_TIMEOUT_SEC,
  K_DIAG_FORCE_FLUSH,
  K_DIAG_SPIN_US,
  K_DIAG_IDLE_WAIT_US,
  K_DIAG_HWLOC,
  K_DIAG_PLANES,
  K_DIAG_REPAIR,
  K_DIAG_REPAIR_PORTS,
  K_DIAG_METRICS,
  K_DIAG_RUN_STATS,
  K_COUNT
};

enum knob_type { KT_INT, KT_BOOL, KT_STR, KT_ENUM };

struct knob_def {
  const char *name;
  enum knob_type type;
  const char *def;            /* default as text; NULL = unset */
  int64_t min, max;           /* KT_INT: accepted range */
  const char *const *choices; /* KT_ENUM: NULL-terminated, case-insensitive */
  const char *help;
};

/* Reads the environment (NCCL has already merged nccl.conf into it). Safe to
 * call more than once; the first call's values stay unless force is set. */
void knob_load(int force);
/* How many times the values were loaded: a reader that keeps values of its
 * own reads them again when this changes. */
unsigned knob_generation(void);

const struct knob_def *knob_def(enum knob_id id);
int64_t knob_int(enum knob_id id);
/* KT_STR: the value or NULL when unset; KT_ENUM: the canonical choice. */
const char *knob_str(enum knob_id id);
/* KT_ENUM: index into choices, -1 when unset with no default. */
int knob_enum(enum knob_id id);
/* Whether the user set it (to a valid value). */
int knob_is_set(enum knob_id id);
/* The raw environment text, valid or not (for reports). */
const char *knob_raw(enum knob_id id);

/* Parse one value without the environment: used by the loader and by tests.
 * Returns 0 and fills *out / *choice, or -1 with a reason in why. */
int knob_parse(const struct knob_def *k, const char *text, int64_t *out, char *why, int whylen);

/* Every setting NCCL 2.30.7's network transports read, with what this
 * plugin does with it (knobs_nccl.c): honoured (in the table above, NCCL's
 * meaning), clamped (honoured within a narrower range) or ignored; why
 * says what happens instead (NULL when honoured). */
enum nccl_knob_state { NK_HONOURED, NK_CLAMPED, NK_IGNORED };
struct nccl_knob {
  const char *name;
  enum nccl_knob_state state;
  const char *why;
};
const struct nccl_knob *nccl_knobs(int *n);
const char *nccl_knob_state_name(enum nccl_knob_state s);
/* Once per process: an INFO for each ignored one set in the environment
 * (clamped ones are said where the value is used). */
void nccl_knobs_note(void);

/* What NCCL's IB transport puts in a RoCE queue pair when NCCL_IB_TC and
 * NCCL_IB_SL are unset and the communicator sets no traffic class
 * (NCCL_IB_TC_DEFAULT, NCCL_IB_SL_DEFAULT in src/transport/net_ib.cc, 0 in
 * every release), and the first release that reads NCCL_IB_FIFO_TC. */
struct nccl_qos_defaults {
  int tc, sl;
  const char *fifo_tc_since;
};
const struct nccl_qos_defaults *nccl_qos_defaults(void);

enum { FALLBACK_AUTO = 0, FALLBACK_OFF = 1 };
enum { PLANES_AUTO = 0, PLANES_OFF = 1 };
enum { REPAIR_AUTO = 0, REPAIR_OFF = 1, REPAIR_WARN = 2 };

#endif
