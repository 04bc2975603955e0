/* SPDX-License-Identifier: Apache-2.0 */
/* Linking tests/lib/env_safe.c replaces libc's setenv and unsetenv in a
 * test program with ones another thread's getenv can run beside. */
#ifndef DIAG_TESTS_ENV_SAFE_H
#define DIAG_TESTS_ENV_SAFE_H

/* How many changes went through the replacement: lets a program check
 * that its setenv is this one, not libc's. */
unsigned long env_safe_changes(void);

#endif
