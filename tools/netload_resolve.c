/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL_NET_PLUGIN resolved as NCCL resolves it (netload_resolve.h). */
#include "tools/netload_resolve.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The tag plugin/version_tag.c puts in the .so: found without loading it,
 * so even a file this host's loader refuses is named with its release. */
#define VERSION_TAG "libnccl-net-diag version "

int netload_file_version(const char *path, char *out, size_t cap) {
  out[0] = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return errno;
  static char buf[1 << 16];
  size_t keep = 0, n;
  const size_t tag = sizeof(VERSION_TAG) - 1;
  while ((n = fread(buf + keep, 1, sizeof(buf) - keep - 1, f)) > 0) {
    size_t len = keep + n;
    buf[len] = 0;
    char *p = memmem(buf, len, VERSION_TAG, tag);
    if (p && memchr(p, 0, len - (size_t)(p - buf) + 1) && p + tag < buf + len) {
      snprintf(out, cap, "%.40s", p + tag);
      break;
    }
    keep = len < 80 ? len : 80; /* a tag split across two reads */
    memmove(buf, buf + len - keep, keep);
  }
  fclose(f);
  return 0;
}

static bool is_lib_so_form(const char *s) {
  size_t n = strlen(s);
  return n > 6 && !strncmp(s, "lib", 3) && !strcmp(s + n - 3, ".so");
}

static int newest_table(void *h) {
  for (int v = 12; v >= 5; v--) {
    char sym[32];
    snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
    if (dlsym(h, sym)) return v;
  }
  return 0;
}

static void add_why(struct netload_choice *c, const char *fmt, const char *a, const char *b) {
  size_t used = strlen(c->why);
  if (used + 3 >= sizeof(c->why)) return;
  snprintf(c->why + used, sizeof(c->why) - used, used ? "; " : "");
  used = strlen(c->why);
  snprintf(c->why + used, sizeof(c->why) - used, fmt, a, b);
}

/* dlopen's message, less the repeated name in front ("x.so: cannot ..."). */
static const char *short_error(const char *name, const char *e) {
  size_t n = strlen(name);
  if (e && !strncmp(e, name, n) && !strncmp(e + n, ": ", 2)) return e + n + 2;
  return e ? e : "unknown error";
}

/* One name: opened, a table found, the file recorded. */
static bool try_name(struct netload_choice *c, const char *entry, const char *name) {
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    add_why(c, "%s: %s", name, short_error(name, dlerror()));
    return false;
  }
  struct link_map *lm = NULL;
  char file[PATH_MAX] = "";
  if (!dlinfo(h, RTLD_DI_LINKMAP, &lm) && lm && lm->l_name && lm->l_name[0] &&
      !realpath(lm->l_name, file))
    snprintf(file, sizeof(file), "%s", lm->l_name);
  int abi = newest_table(h);
  dlclose(h);
  if (!abi) {
    add_why(c, "%s: %s exports no ncclNetPlugin table (not a network plugin)", name,
            file[0] ? file : name);
    return false;
  }
  c->is_loaded = true;
  c->abi = abi;
  snprintf(c->entry, sizeof(c->entry), "%s", entry);
  snprintf(c->file, sizeof(c->file), "%s", file[0] ? file : name);
  netload_file_version(c->file, c->version, sizeof(c->version));
  c->is_ours = c->version[0] != 0;
  return true;
}

int netload_resolve(const char *value, struct netload_choice *c) {
  memset(c, 0, sizeof(*c));
  c->is_set = value != NULL;
  snprintf(c->value, sizeof(c->value), "%s", value ? value : "");
  if (value && !strcasecmp(value, "none")) {
    c->is_none = true;
    return 0;
  }
  char list[sizeof(c->value)];
  snprintf(list, sizeof(list), "%s", value && *value ? value : "libnccl-net.so");
  int n = 0;
  char *save = NULL;
  for (char *e = strtok_r(list, ",", &save); e && n < NETLOAD_MAX_ENTRIES;
       e = strtok_r(NULL, ",", &save), n++) {
    if (strlen(e) >= 255) {
      add_why(c, "%s%s: longer than NCCL's 255 characters, skipped", "", e);
      continue;
    }
    if (try_name(c, e, e)) return 0;
    if (strchr(e, '/') || is_lib_so_form(e)) continue;
    char alt[300];
    snprintf(alt, sizeof(alt), "libnccl-net-%s.so", e);
    if (try_name(c, e, alt)) return 0;
  }
  return ENOENT;
}

void netload_choice_fix(const struct netload_choice *c, char *fix, size_t cap) {
  fix[0] = 0;
  if (c->is_none || (c->is_loaded && c->is_ours)) return;
  if (c->is_loaded)
    snprintf(fix, cap,
             "NCCL will load %s, which is not libnccl-net-diag: set NCCL_NET_PLUGIN=diag to use "
             "this plugin",
             c->file);
  else if (!c->is_set || !c->value[0])
    snprintf(fix, cap,
             "set NCCL_NET_PLUGIN=diag (with libnccl-net-diag.so where the loader finds it: "
             "installed in a library folder, or its folder in LD_LIBRARY_PATH)");
  else if (strchr(c->value, '/'))
    snprintf(fix, cap,
             "set NCCL_NET_PLUGIN to the full path of an existing libnccl-net-diag.so, or to diag "
             "with the plugin installed in a library folder");
  else
    snprintf(fix, cap,
             "install libnccl-net-diag (its package puts libnccl-net-diag.so in a library folder), "
             "add the folder that holds libnccl-net-diag.so to LD_LIBRARY_PATH, or set "
             "NCCL_NET_PLUGIN to that file's full path");
}
