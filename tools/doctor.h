/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag doctor: the report's shared state, filled by doctor.c and
 * printed by doctor_text.c (for people) or doctor_json.c (--json). */
#ifndef DIAG_TOOLS_DOCTOR_H
#define DIAG_TOOLS_DOCTOR_H

#include <stdbool.h>
#include <stdio.h>

#include "topo/qos.h"
#include "topo/topo.h"
#include "transport/ib/dev/ib.h"

#define DOCTOR_MAX_VARS 64

struct doctor_var {
  char name[64];
  char value[512];
};

struct doctor_env {
  int nvar;
  struct doctor_var vars[DOCTOR_MAX_VARS];
};

/* A problem doctor finds beyond the topology's (opening the ports through
 * verbs, GPUDirect RDMA): listed with them. */
#define DOCTOR_MAX_FINDINGS 40
struct doctor_finding {
  enum topo_severity severity;
  char text[1400];
  char fix[400];
};

/* A used RoCE port's QoS and its judgement (doctor_qos.c). */
struct doctor_qos {
  int port; /* index into topo_host.ports */
  struct topo_qos q;
  struct qos_verdict v;
};

struct doctor {
  char hostname[128];
  const struct topo_host *h;
  const struct topo_choice *c;
  struct doctor_env self; /* NCCL_* of this process (before --pid1) */
  struct doctor_env pid1; /* NCCL_* of PID 1 */
  bool has_pid1;          /* PID 1's environment was read */
  char pid1_src[256];     /* the file read */
  char pid1_why[256];     /* why it could not be read */
  bool is_pid1_applied;   /* --pid1: evaluated with PID 1's values */
  bool is_probed;         /* the chosen ports were opened through verbs (doctor_verbs.c) */
  char why_not_probed[300];
  const struct ib_probe *probe;
  int nfinding;
  struct doctor_finding findings[DOCTOR_MAX_FINDINGS];
  int nqos;
  struct doctor_qos *qos; /* nqos of them */
  int exit_status;
};

/* doctor_verbs.c: opens the chosen ports through verbs, when this host's
 * own devices are the ones described, and records what it finds. */
void doctor_probe(struct doctor *d);
/* Records a finding (NULL when the list is full). */
struct doctor_finding *doctor_finding(struct doctor *d, enum topo_severity s, const char *fix,
                                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* doctor_knobs.c: every NCCL_* value NCCL or the plugin will not take as
 * written is an error, named with what each of them does with it instead. */
void doctor_check_knobs(struct doctor *d);
/* doctor_qos.c: reads and judges the QoS of every used RoCE port. */
void doctor_check_qos(struct doctor *d);
void doctor_qos_free(struct doctor *d);
const struct doctor_qos *doctor_qos_of(const struct doctor *d, int port);
void doctor_qos_text(FILE *f, const struct doctor *d);
struct json;
void doctor_qos_json(struct json *w, const struct doctor *d, int port); /* "qos": {...} or null */
/* Whether the chosen ports can carry RDMA here (probed, or not probed). */
bool doctor_has_rdma(const struct doctor *d);
/* Problems of a severity, the topology's and doctor's own. */
int doctor_count(const struct doctor *d, enum topo_severity s);

/* The value of name in e, or NULL. */
const char *doctor_env_get(const struct doctor_env *e, const char *name);

/* A variable this process and PID 1 do not agree on; NULL = unset there. */
struct doctor_difference {
  const char *name;
  const char *process;
  const char *pid1;
};
/* Fills diffs (room for 2 * DOCTOR_MAX_VARS): first this process's
 * variables that PID 1 lacks or sets otherwise, in this process's order,
 * then those only PID 1 sets. Returns how many. */
int doctor_env_differences(const struct doctor *d, struct doctor_difference *diffs);

void doctor_print_text(FILE *f, const struct doctor *d);
void doctor_print_json(FILE *f, const struct doctor *d);

/* Shared wording of the two printers. */
const char *doctor_transport(const struct doctor *d); /* "RDMA" or "TCP" */
/* "10.1.2.0/24" of a chosen or rejected port's GID, "" when none. */
void doctor_port_subnet(const struct doctor *d, int port, char *buf, size_t cap);
/* Why GID entry k of port p was not chosen, "" when it was. */
const char *doctor_gid_verdict(const struct doctor *d, int port, int index);
const char *doctor_severity_name(enum topo_severity s);

#endif
