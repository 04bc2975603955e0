/* SPDX-License-Identifier: Apache-2.0 */
/* Where the fixture hosts are: $SV_FIXTURES, a ':'-separated list of
 * folders holding hosts (the shared tests/fixtures/hosts, then softverbs'
 * own fixtures/). libc only: t_abi uses it without linking the library. */
#include "svt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *svt_host_dir(const char *host) {
  static char path[4][512];
  static int next;
  char *p = path[next++ % 4], list[2048];
  const char *env = getenv("SV_FIXTURES");
  snprintf(list, sizeof list, "%s", env ? env : "fixtures");
  char *save = NULL;
  for (char *dir = strtok_r(list, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    snprintf(p, sizeof path[0], "%s/%s", dir, host);
    if (!access(p, F_OK)) return p;
  }
  return p; /* the last candidate: the error that follows names it */
}

const char *svt_fixture(const char *host) {
  static char path[4][600];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, sizeof path[0], "%s/sysfs", svt_host_dir(host));
  return p;
}

void svt_use_host(const char *host) {
  setenv("NCCL_DIAG_SYSFS_ROOT", svt_fixture(host), 1);
  setenv("SOFTVERBS_WIRE", "loopback", 1);
}
