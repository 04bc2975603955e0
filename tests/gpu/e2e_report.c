/* SPDX-License-Identifier: Apache-2.0 */
/* nccl_e2e: TAP lines and human-readable sizes. */
#include "e2e.h"

void tap_result(struct rank_state *s, int ok, const char *name) {
  s->tap_n++;
  if (!ok) s->tap_failed++;
  printf("%sok %d - %s\n", ok ? "" : "not ", s->tap_n, name);
  fflush(stdout);
}

/* After a hang or an asynchronous error every later call would hang too. */
void tap_skip(struct rank_state *s, const char *name) {
  s->tap_n++;
  printf("ok %d - %s # SKIP NCCL stopped answering earlier\n", s->tap_n, name);
}

void size_str(size_t b, char *buf, size_t cap) {
  if (b >= (1u << 30) && b % (1u << 30) == 0) snprintf(buf, cap, "%zu GiB", b >> 30);
  else if (b >= (1u << 20) && b % (1u << 20) == 0) snprintf(buf, cap, "%zu MiB", b >> 20);
  else if (b >= 1024 && b % 1024 == 0) snprintf(buf, cap, "%zu KiB", b >> 10);
  else snprintf(buf, cap, "%zu B", b);
}
