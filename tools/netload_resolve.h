/* SPDX-License-Identifier: Apache-2.0 */
/* Which file NCCL will load for NCCL_NET_PLUGIN, found by NCCL's own rules
 * (its src/plugin/plugin_open.cc): unset means libnccl-net.so; "none" means
 * no external plugin; otherwise a comma-separated list whose entries are
 * each opened as given (a path, or a name the loader searches for) and,
 * when that fails and the entry has no '/' and is not lib...so, as
 * libnccl-net-ENTRY.so. The first entry that opens and exports a network
 * table is the one NCCL uses. */
#ifndef DIAG_TOOLS_NETLOAD_RESOLVE_H
#define DIAG_TOOLS_NETLOAD_RESOLVE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* NCCL tries at most this many entries (16 plugins less its two own). */
#define NETLOAD_MAX_ENTRIES 14

struct netload_choice {
  char value[1024];    /* NCCL_NET_PLUGIN as NCCL reads it, "" when unset */
  bool is_set;         /* set (to anything, even empty) */
  bool is_none;        /* "none": NCCL uses only its own transports */
  bool is_loaded;      /* an entry opened and exports a network table */
  bool is_ours;        /* that file is libnccl-net-diag (it carries our version tag) */
  char entry[256];     /* the entry that loaded */
  char file[PATH_MAX]; /* the file it loaded, with links resolved */
  char version[64];    /* libnccl-net-diag's version in that file, "" if not ours */
  int abi;             /* the newest ncclNetPlugin_vN it exports */
  char why[1500];      /* when none loads: every name tried and why it failed */
};

/* Resolves value (NULL: unset) as NCCL does, opening each candidate with
 * dlopen(RTLD_NOW | RTLD_LOCAL) as NCCL does. Returns 0 when a plugin
 * loads (or for "none"), else ENOENT with c->why filled. */
int netload_resolve(const char *value, struct netload_choice *c);
/* The version tag in a libnccl-net-diag file (into out), or "" with 0. */
int netload_file_version(const char *path, char *out, size_t cap);
/* One line a user can act on when value loads nothing: "" when it does. */
void netload_choice_fix(const struct netload_choice *c, char *fix, size_t cap);

#endif
