/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL's device/interface list grammar, shared by NCCL_IB_HCA,
 * NCCL_SOCKET_IFNAME and NCCL_OOB_NET_IFNAME:
 *   [^][=]name[:port[:rail[:plane]]][,name...]
 * '^' first turns the list into an exclude list; '=' (after any '^') makes
 * names exact instead of prefixes; a missing or empty field is -1 ("any").
 * A (name, port) is selected when (some entry matches) XOR exclude. */
#ifndef DIAG_TOPO_FILTER_H
#define DIAG_TOPO_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#define FILTER_MAX_ENTRIES 32
#define FILTER_NAME_MAX 64

struct filter_entry {
  char name[FILTER_NAME_MAX];
  int port, rail, plane;
  int hits; /* how many (name, port) pairs this entry matched */
};

struct filter {
  bool is_exclude; /* '^' */
  bool is_exact;   /* '=' */
  int nentry;
  struct filter_entry entries[FILTER_MAX_ENTRIES];
};

/* 0, or EINVAL with a reason naming the offending entry in why. An empty
 * or NULL text parses to an empty include list (selects nothing). */
int filter_parse(const char *text, struct filter *f, char *why, size_t cap);

/* Whether selected. Counts hits on the entries that matched. port -1 = the
 * caller has no port (interfaces). */
bool filter_select(struct filter *f, const char *name, int port);

/* Whether entry i matches (name, port), ignoring exclude. */
bool filter_entry_matches(const struct filter *f, int i, const char *name, int port);

#endif
