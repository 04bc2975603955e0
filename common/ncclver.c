/* SPDX-License-Identifier: Apache-2.0 */
#include "common/ncclver.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef int (*get_version_fn)(int *version);

static int version_code;
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

static int find_libnccl(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
  base = base ? base + 1 : info->dlpi_name;
  if (base && !strncmp(base, "libnccl.so", 10)) {
    snprintf((char *)arg, 4096, "%s", info->dlpi_name);
    return 1;
  }
  return 0;
}

/* NCCL is usually in the global scope (linked by the application); when it
 * was dlopened RTLD_LOCAL we find it among the loaded objects instead. */
static void lookup_version(void) {
  get_version_fn fn = (get_version_fn)dlsym(RTLD_DEFAULT, "ncclGetVersion");
  void *h = NULL;
  if (!fn) {
    char path[4096] = {0};
    if (dl_iterate_phdr(find_libnccl, path) && path[0]) {
      h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
      if (h) fn = (get_version_fn)dlsym(h, "ncclGetVersion");
    }
  }
  int v = 0;
  if (fn && fn(&v) == 0) version_code = v;
  if (h) dlclose(h);
}

int nccl_version_code(void) {
  pthread_once(&version_once, lookup_version);
  return version_code;
}

/* Codes since 2.9 are major*10000 + minor*100 + patch; before, *1000. */
void nccl_version_str(int code, char *buf, size_t cap) {
  if (code <= 0) {
    snprintf(buf, cap, "unknown");
  } else if (code >= 20900) {
    snprintf(buf, cap, "%d.%d.%d", code / 10000, (code % 10000) / 100, code % 100);
  } else {
    snprintf(buf, cap, "%d.%d.%d", code / 1000, (code % 1000) / 100, code % 100);
  }
}
