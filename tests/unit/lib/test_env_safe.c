/* SPDX-License-Identifier: Apache-2.0 */
/* tests/lib/env_safe.c: a thread reading the environment while the main
 * thread adds and removes hundreds of variables (as softverbs' progress
 * thread reads its fault hooks while a case sets them) never reads freed
 * memory or a wrong value; setenv and unsetenv keep libc's meaning. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env_safe.h"
#include "tap.h"

#define ADDED 2000

static atomic_bool is_done;
static atomic_long reads, wrong;

static void *reader(void *arg) {
  (void)arg;
  while (!atomic_load(&is_done)) {
    const char *v = getenv("ENV_SAFE_PROBE");
    /* always set, to "a" or "b": anything else is a torn or freed read */
    if (!v || (strcmp(v, "a") && strcmp(v, "b"))) atomic_fetch_add(&wrong, 1);
    atomic_fetch_add(&reads, 1);
  }
  return NULL;
}

static void concurrent(void) {
  tap_begin();
  setenv("ENV_SAFE_PROBE", "a", 1);
  pthread_t t;
  CHECK(pthread_create(&t, NULL, reader, NULL) == 0, "reader thread");
  char name[32];
  for (int i = 0; i < ADDED; i++) {
    snprintf(name, sizeof(name), "ENV_SAFE_%d", i);
    setenv(name, "x", 1);
    setenv("ENV_SAFE_PROBE", i & 1 ? "a" : "b", 1);
  }
  for (int i = 0; i < ADDED; i++) {
    snprintf(name, sizeof(name), "ENV_SAFE_%d", i);
    unsetenv(name);
  }
  atomic_store(&is_done, true);
  pthread_join(t, NULL);
  CHECK(atomic_load(&wrong) == 0, "%ld of %ld reads saw a missing or wrong value",
        atomic_load(&wrong), atomic_load(&reads));
  CHECK(env_safe_changes() >= 3 * ADDED, "only %lu changes went through the replacement",
        env_safe_changes());
  tap_end("a reader beside 2,000 variables added and removed sees every value whole");
}

static void meaning(void) {
  tap_begin();
  CHECK(setenv("ENV_SAFE_ONE", "1", 1) == 0 && !strcmp(getenv("ENV_SAFE_ONE"), "1"), "set");
  CHECK(setenv("ENV_SAFE_ONE", "2", 0) == 0 && !strcmp(getenv("ENV_SAFE_ONE"), "1"),
        "overwrite 0 keeps the value");
  CHECK(setenv("ENV_SAFE_ONE", "", 1) == 0 && !strcmp(getenv("ENV_SAFE_ONE"), ""), "empty");
  CHECK(unsetenv("ENV_SAFE_ONE") == 0 && !getenv("ENV_SAFE_ONE"), "unset");
  CHECK(unsetenv("ENV_SAFE_ONE") == 0, "unsetting an unset name is no error");
  errno = 0;
  CHECK(setenv("A=B", "1", 1) == -1 && errno == EINVAL, "a name with '=' is EINVAL");
  errno = 0;
  CHECK(unsetenv("") == -1 && errno == EINVAL, "an empty name is EINVAL");
  tap_end("setenv and unsetenv keep libc's meaning");
}

int main(void) {
  const char *path = getenv("PATH");
  char *was = strdup(path ? path : "");
  concurrent();
  meaning();
  tap_begin();
  path = getenv("PATH");
  CHECK(!strcmp(path ? path : "", was), "PATH was %s, now %s", was, path ? path : "unset");
  tap_end("variables from the start are kept through every change");
  free(was);
  return tap_done();
}
