/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL's configuration files (ncclconf.h). */
#include "tools/ncclconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/knob_names.h"

#define MAX_SET 256

struct conf_set {
  char name[128];
  char origin[300]; /* "FILE line N" */
  char file[256];
  char line[200]; /* the line as written, for the warning */
};

static struct conf_set sets[MAX_SET];
static int nset;
static char files_read[1024];

/* One file, NCCL's way: fgets lines of up to 4095 bytes, '#' comments,
 * the name is everything before the first '=', the value everything after;
 * setenv without overwrite. */
static void read_file(const char *path) {
  FILE *f = fopen(path, "re");
  if (!f) return;
  char line[4096];
  int lineno = 0, n = 0;
  while (fgets(line, sizeof(line), f)) {
    lineno++;
    size_t len = strlen(line);
    if (len && line[len - 1] == '\n') line[--len] = 0;
    if (len && line[len - 1] == '\r') line[--len] = 0;
    char *eq = strchr(line, '=');
    if (line[0] == '#' || !eq || eq == line) continue;
    n++;
    char name[1024];
    snprintf(name, sizeof(name), "%.*s", (int)(eq - line), line);
    if (getenv(name)) continue; /* the environment or an earlier file set it */
    setenv(name, eq + 1, 0);
    if (nset == MAX_SET) continue;
    struct conf_set *s = &sets[nset++];
    snprintf(s->name, sizeof(s->name), "%s", name);
    snprintf(s->origin, sizeof(s->origin), "%s line %d", path, lineno);
    snprintf(s->file, sizeof(s->file), "%s", path);
    snprintf(s->line, sizeof(s->line), "%s", line);
  }
  fclose(f);
  size_t o = strlen(files_read);
  snprintf(files_read + o, sizeof(files_read) - o, "%s%s (%d setting%s)", o ? ", " : "", path, n,
           n == 1 ? "" : "s");
}

void ncclconf_apply(void) {
  static int done;
  if (done++) return;
  const char *user = getenv("NCCL_CONF_FILE");
  char path[1024];
  if (user && *user) {
    read_file(user);
  } else if (getenv("HOME")) {
    snprintf(path, sizeof(path), "%s/.nccl.conf", getenv("HOME"));
    read_file(path);
  }
  read_file("/etc/nccl.conf");
}

const char *ncclconf_origin(const char *name) {
  for (int i = 0; i < nset; i++)
    if (!strcmp(sets[i].name, name)) return sets[i].origin;
  return NULL;
}

void ncclconf_files(char *buf, size_t cap) { snprintf(buf, cap, "%s", files_read); }

void ncclconf_each_unknown(void (*fn)(void *arg, const char *msg), void *arg) {
  for (int i = 0; i < nset; i++) {
    const struct conf_set *s = &sets[i];
    char msg[900], trimmed[128];
    /* NCCL keeps spaces: "NCCL_X = 1" sets "NCCL_X ", which nothing reads. */
    size_t b = strspn(s->name, " \t"), e = strlen(s->name);
    while (e > b && (s->name[e - 1] == ' ' || s->name[e - 1] == '\t')) e--;
    snprintf(trimmed, sizeof(trimmed), "%.*s", (int)(e - b), s->name + b);
    if (strcmp(trimmed, s->name) && knob_name_is_known(trimmed)) {
      snprintf(msg, sizeof(msg),
               "%s: the line '%s' sets '%s', not %s: NCCL keeps the spaces around '=', so it "
               "ignores this line; write %s=VALUE with no spaces",
               s->origin, s->line, s->name, trimmed, trimmed);
      fn(arg, msg);
    } else if (knob_name_unknown(s->name, s->origin, msg, sizeof(msg))) {
      fn(arg, msg);
    }
  }
}
