/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL_* settings of this process and of PID 1 (a platform that injects
 * them into PID 1 only leaves a job started from a shell without them). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/probe/facts.h"

extern char **environ;

#define ENV_MAX_VARS 256
#define ENV_VALUE_MAX 1024

const char *probe_env_get(const struct probe_env *e, const char *name) {
  for (int i = 0; i < e->n; i++)
    if (!strcmp(e->v[i].name, name)) return e->v[i].value;
  return NULL;
}

static void env_add(struct probe_env *e, const char *entry) {
  const char *eq = strchr(entry, '=');
  if (strncmp(entry, "NCCL_", 5) || !eq || e->n == ENV_MAX_VARS || eq - entry > 64) return;
  struct probe_var *grown = probe_grow(e->v, e->n, sizeof(*e->v));
  if (!grown) return;
  e->v = grown;
  char *name = strndup(entry, (size_t)(eq - entry));
  char *value = strndup(eq + 1, ENV_VALUE_MAX);
  if (!name || !value) {
    free(name);
    free(value);
    return;
  }
  e->v[e->n].name = name;
  e->v[e->n].value = value;
  e->n++;
}

void facts_env_process(struct probe_env *e) {
  for (char **p = environ; p && *p; p++) env_add(e, *p);
}

int facts_env_file(struct probe_env *e, const char *path, char *err, size_t cap) {
  FILE *f = fopen(path, "re");
  if (!f) {
    int e_no = errno;
    snprintf(err, cap, "%s cannot be read: %s%s", path, strerror(e_no),
             e_no == EACCES && geteuid() ? " (run as root to compare with PID 1's environment)"
                                         : "");
    return e_no;
  }
  size_t cap_buf = 1 << 20, n = 0;
  char *buf = malloc(cap_buf);
  if (!buf) {
    fclose(f);
    snprintf(err, cap, "out of memory reading %s", path);
    return ENOMEM;
  }
  n = fread(buf, 1, cap_buf - 1, f);
  fclose(f);
  buf[n] = 0;
  for (size_t i = 0; i < n; i++)
    if (buf[i] == '\n') buf[i] = 0; /* a copy may be one variable a line */
  for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
    if (buf[i]) env_add(e, buf + i);
  free(buf);
  return 0;
}

static void env_free(struct probe_env *e) {
  for (int i = 0; i < e->n; i++) free(e->v[i].name), free(e->v[i].value);
  free(e->v);
  e->v = NULL;
  e->n = 0;
}

void probe_facts_free(struct probe_facts *f) {
  env_free(&f->env);
  env_free(&f->pid1);
}
