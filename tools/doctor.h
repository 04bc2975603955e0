/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag doctor: the report's shared state, filled by doctor.c and
 * printed by doctor_text.c (for people) or doctor_json.c (--json). */
#ifndef DIAG_TOOLS_DOCTOR_H
#define DIAG_TOOLS_DOCTOR_H

#include <stdio.h>

#include "topo/topo.h"

#define DOC_MAX_VARS 64

struct doc_var {
  char name[64];
  char value[512];
};

struct doc_env {
  int n;
  struct doc_var v[DOC_MAX_VARS];
};

struct doctor {
  char hostname[128];
  const struct topo_host *h;
  const struct topo_choice *c;
  struct doc_env self; /* NCCL_* of this process (before --pid1) */
  struct doc_env pid1; /* NCCL_* of PID 1 */
  int pid1_ok;
  char pid1_src[256]; /* the file read */
  char pid1_err[256]; /* why it could not be read */
  int pid1_applied;   /* --pid1: evaluated with PID 1's values */
  int exit_status;
};

/* The value of name in e, or NULL. */
const char *doc_env_get(const struct doc_env *e, const char *name);

void doctor_print_text(FILE *f, const struct doctor *d);
void doctor_print_json(FILE *f, const struct doctor *d);

/* Shared wording of the two printers. */
const char *doc_transport(const struct doctor *d); /* "RDMA" or "TCP" */
/* "10.1.2.0/24" of a chosen or rejected port's GID, "" when none. */
void doc_port_subnet(const struct doctor *d, int port, char *buf, size_t cap);
/* The GID of port p at index i as text, "" when not populated. */
void doc_port_gid(const struct doctor *d, int port, int index, char *buf, size_t cap);
/* Why GID entry k of port p was not chosen, "" when it was. */
const char *doc_gid_verdict(const struct doctor *d, int port, int index);
const char *doc_sev_name(enum topo_sev s);

#endif
