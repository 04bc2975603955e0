/* SPDX-License-Identifier: Apache-2.0 */
/* Which NCCL settings every rank must agree on, which may differ, and why:
 * one table, each entry justified from NCCL's source, read by the
 * handshake, doctor, probe and explain alike. */
#ifndef DIAG_COMMON_AGREE_H
#define DIAG_COMMON_AGREE_H

#include <stdbool.h>
#include <stddef.h>

enum agree_class {
  AGREE_IGNORE,   /* logging, test hooks, per-process ids: never compared */
  AGREE_LOCAL,    /* this end's own, or NCCL reconciles the ends: may differ */
  AGREE_DIFFERS,  /* not known to break a job; a difference is worth a look */
  AGREE_PER_HOST, /* names this node's hardware: may differ, must pick one network */
  AGREE_MUST,     /* every rank must use the same value, or the job fails or hangs */
};

struct agree_entry {
  const char *name; /* a trailing '*' matches a prefix */
  enum agree_class cls;
  bool changes_sizes;   /* sizes or cuts messages: a truncation's cause */
  bool is_in_handshake; /* compared in the plugin's hello: both ends run this
                           plugin, so settings that choose the plugin or the
                           network are equal there by construction */
  const char *why;      /* NCCL's file at v2.28.9-1, and what breaks */
};

/* The entry that governs NAME: first match wins; never NULL for NCCL_*. */
const struct agree_entry *agree_lookup(const char *name);
enum agree_class agree_classify(const char *name);
/* Every entry, in table order (the last is the NCCL_* catch-all). */
const struct agree_entry *agree_table(size_t *n);
const char *agree_class_name(enum agree_class cls);

#endif
