/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/proc_usage.h"

#include <dirent.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

void proc_usage_now(struct proc_usage *u) {
  memset(u, 0, sizeof(*u));
  malloc_trim(0);
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  while (f && fgets(line, sizeof(line), f)) {
    long long v;
    if (sscanf(line, "Threads: %lld", &v) == 1) u->threads = (int)v;
    else if (sscanf(line, "VmRSS: %lld kB", &v) == 1) u->rss_kb = v;
  }
  if (f) fclose(f);
  DIR *d = opendir("/proc/self/fd");
  for (struct dirent *e; d && (e = readdir(d));) u->fds += e->d_name[0] != '.';
  if (d) {
    u->fds--; /* the directory's own descriptor */
    closedir(d);
  }
}
