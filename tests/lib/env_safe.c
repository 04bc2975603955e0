/* SPDX-License-Identifier: Apache-2.0 */
/* setenv/unsetenv for test programs that change the environment while
 * other threads read it. softverbs' progress thread reads its fault hooks
 * (SOFTVERBS_WC_ERROR, SOFTVERBS_PORT_DOWN, ...) with getenv on every
 * completion, and cases set them mid-transfer. glibc's setenv grows the
 * environment array with realloc, so a getenv running beside it can walk
 * freed memory: a rare SIGSEGV under load, a heap-use-after-free under
 * ASan. Linked into a program, these definitions take the place of libc's
 * (an executable's symbols come first) and never free an array another
 * thread may be walking: each change publishes a new array and keeps the
 * old ones reachable. A test program changes its environment a few
 * hundred times at most, so what is kept stays small. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "env_safe.h"

extern char **environ;

/* Every array and entry ever published, so none is freed (and a leak
 * checker sees them reachable). */
struct env_kept {
  struct env_kept *next;
  char **arr;
  char *entry;
};
static struct env_kept *kept;
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long changes;

static int bad_name(const char *name) { return !name || !*name || strchr(name, '='); }

static size_t find(char **env, const char *name, size_t len, size_t *count) {
  size_t at = (size_t)-1, n = 0;
  for (; env && env[n]; n++)
    if (at == (size_t)-1 && !strncmp(env[n], name, len) && env[n][len] == '=') at = n;
  *count = n;
  return at;
}

/* Publishes a copy of the environment with entry at index at (replacing
 * it, or appended when at is past the end), or without index at when
 * entry is NULL. Called with env_lock held. */
static int publish(size_t at, size_t count, char *entry) {
  struct env_kept *k = malloc(sizeof(*k));
  char **arr = malloc((count + 2) * sizeof(*arr));
  if (!k || !arr) {
    free(k);
    free(arr);
    free(entry);
    errno = ENOMEM;
    return -1;
  }
  size_t n = 0;
  for (size_t i = 0; i < count; i++) {
    if (i != at) arr[n++] = environ[i];
    else if (entry) arr[n++] = entry;
  }
  if (entry && at >= count) arr[n++] = entry;
  arr[n] = NULL;
  *k = (struct env_kept){kept, arr, entry};
  kept = k;
  changes++;
  __atomic_store_n(&environ, arr, __ATOMIC_RELEASE);
  return 0;
}

int setenv(const char *name, const char *value, int overwrite) {
  if (bad_name(name)) {
    errno = EINVAL;
    return -1;
  }
  size_t len = strlen(name), vlen = strlen(value);
  pthread_mutex_lock(&env_lock);
  size_t count, at = find(environ, name, len, &count);
  int rc = 0;
  if (at == (size_t)-1 || overwrite) {
    char *entry = malloc(len + vlen + 2);
    if (!entry) {
      errno = ENOMEM;
      rc = -1;
    } else {
      memcpy(entry, name, len);
      entry[len] = '=';
      memcpy(entry + len + 1, value, vlen + 1);
      rc = publish(at == (size_t)-1 ? count : at, count, entry);
    }
  }
  pthread_mutex_unlock(&env_lock);
  return rc;
}

int unsetenv(const char *name) {
  if (bad_name(name)) {
    errno = EINVAL;
    return -1;
  }
  pthread_mutex_lock(&env_lock);
  size_t count, at = find(environ, name, strlen(name), &count);
  int rc = at == (size_t)-1 ? 0 : publish(at, count, NULL);
  pthread_mutex_unlock(&env_lock);
  return rc;
}

unsigned long env_safe_changes(void) {
  pthread_mutex_lock(&env_lock);
  unsigned long n = changes;
  pthread_mutex_unlock(&env_lock);
  return n;
}
