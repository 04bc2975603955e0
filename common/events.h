/* SPDX-License-Identifier: Apache-2.0 */
/* Optional JSON-lines event file (NCCL_DIAG_LOG_FILE): one object per
 * selection decision, handshake, QP transition and failure, and a closing
 * census. Building an event costs nothing when the file is not enabled. */
#ifndef DIAG_COMMON_EVENTS_H
#define DIAG_COMMON_EVENTS_H

#include <stddef.h>
#include <stdint.h>

/* Every event line's "schema" (docs/json.md). */
#define EV_SCHEMA "nccl-net-diag.event/1"

struct ev {
  char buf[8192];
  size_t len;
  int on;
};

int ev_enabled(void);
void ev_begin(struct ev *e, const char *type);
void ev_str(struct ev *e, const char *key, const char *val);
void ev_int(struct ev *e, const char *key, long long v);
void ev_dbl(struct ev *e, const char *key, double v);
void ev_bool(struct ev *e, const char *key, int v);
void ev_end(struct ev *e);

/* src as a JSON string's contents (common/json_escape.h). Writes at most
 * cap bytes (always NUL-terminated, whole characters only) and returns the
 * length written. */
size_t json_escape(char *dst, size_t cap, const char *src);

/* Census counters, reported in the closing "census" event. */
enum ev_counter {
  C_LISTENS,
  C_SEND_COMMS,
  C_RECV_COMMS,
  C_COMMS_IB,
  C_COMMS_TCP,
  C_FALLBACKS,
  C_BYTES_SENT,
  C_BYTES_RECV,
  C_CONN_FAILURES,
  C_REFUSED_CONNS,
  C_HELLO_MISMATCHES,
  C_DATA_ERRORS,
  C_COUNTERS
};
void ev_count(enum ev_counter c, int64_t delta);
int64_t ev_counter_value(enum ev_counter c);
/* Writes the census event now (also done once at process exit). */
void ev_census(const char *why);

#endif
