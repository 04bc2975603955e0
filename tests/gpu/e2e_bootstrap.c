/* SPDX-License-Identifier: Apache-2.0 */
/* nccl_e2e: the NCCL unique id travels from rank 0 to the others through a
 * file: the runner names it, so the ranks need no other channel. */
#include "e2e.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Written aside and renamed, so a reader never sees half an id. */
int write_id(const char *path, const ncclUniqueId *id) {
  char tmp[4096];
  snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f)) {
    printf("# cannot write %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  if (rename(tmp, path)) {
    printf("# cannot rename %s to %s: %s\n", tmp, path, strerror(errno));
    return -1;
  }
  return 0;
}

int read_id(const char *path, ncclUniqueId *id, int timeout_s) {
  double deadline = now_s() + timeout_s;
  struct timespec nap = {0, 20 * 1000 * 1000};
  for (;;) {
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t got = fread(id, sizeof(*id), 1, f);
      fclose(f);
      if (got == 1) return 0;
    }
    if (now_s() > deadline) {
      printf("# rank 0 did not publish the NCCL unique id in %s within %d s\n", path, timeout_s);
      return -1;
    }
    nanosleep(&nap, NULL);
  }
}
