/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL's device/interface list grammar, shared by NCCL_IB_HCA,
 * NCCL_SOCKET_IFNAME and NCCL_OOB_NET_IFNAME:
 *   [^][=]name[:port[:rail[:plane]]][,name...]
 * '^' first turns the list into an exclude list; '=' (after any '^') makes
 * names exact instead of prefixes; a missing or empty field is -1 ("any").
 * A (name, port) is selected when (some entry matches) XOR exclude. */
#ifndef DIAG_TOPO_FILTER_H
#define DIAG_TOPO_FILTER_H

#define FILT_MAX_ENTRIES 32
#define FILT_NAME_MAX 64

struct filt_entry {
  char name[FILT_NAME_MAX];
  int port, rail, plane;
  int hits; /* how many (name, port) pairs this entry matched */
};

struct filt {
  int exclude;
  int exact;
  int n;
  struct filt_entry e[FILT_MAX_ENTRIES];
};

/* 0 on success; -1 with a reason naming the offending entry in why. An
 * empty or NULL text parses to an empty include list (selects nothing). */
int filt_parse(const char *text, struct filt *f, char *why, int whylen);

/* 1 if selected. Counts hits on the entries that matched. port -1 = the
 * caller has no port (interfaces). */
int filt_select(struct filt *f, const char *name, int port);

/* Whether entry i matches (name, port), ignoring exclude. */
int filt_entry_matches(const struct filt *f, int i, const char *name, int port);

#endif
