/* SPDX-License-Identifier: Apache-2.0 */
/* A minimal TAP producer for our test programs: every case prints one
 * "ok N - name" / "not ok N - name" line (or "# SKIP reason"), so the
 * runner can count cases across all programs. Header-only. */
#ifndef DIAG_TESTS_TAP_H
#define DIAG_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Weak, so every file of a test program shares one counter set. */
__attribute__((weak)) int tap_n, tap_failed, tap_case_failed;

static inline void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void tap_diag(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("# ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
}

/* Within a case: records a failure with its location, keeps going. */
#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      tap_case_failed = 1;                                                                         \
      printf("#   check failed at %s:%d: %s\n#   ", __FILE__, __LINE__, #cond);                    \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
      fflush(stdout);                                                                              \
    }                                                                                              \
  } while (0)

static inline void tap_begin(void) { tap_case_failed = 0; }

static inline void tap_end(const char *name) {
  tap_n++;
  if (tap_case_failed) tap_failed++;
  printf("%sok %d - %s\n", tap_case_failed ? "not " : "", tap_n, name);
  fflush(stdout);
}

static inline void tap_skip(const char *name, const char *why) {
  tap_n++;
  printf("ok %d - %s # SKIP %s\n", tap_n, name, why);
  fflush(stdout);
}

/* Runs fn as one case. */
#define TAP_CASE(name, fn)                                                                         \
  do {                                                                                             \
    tap_begin();                                                                                   \
    fn();                                                                                          \
    tap_end(name);                                                                                 \
  } while (0)

static inline int tap_done(void) {
  printf("1..%d\n", tap_n);
  fflush(stdout);
  return tap_failed ? 1 : 0;
}

#endif
