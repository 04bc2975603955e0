/* SPDX-License-Identifier: Apache-2.0 */
/* doctor: the network plugin NCCL will load here (NCCL_NET_PLUGIN, resolved
 * as NCCL resolves it). */
#ifndef DIAG_TOOLS_DOCTOR_PLUGIN_H
#define DIAG_TOOLS_DOCTOR_PLUGIN_H

#include <stddef.h>
#include <stdio.h>

#include "tools/doctor.h"
#include "tools/netload_resolve.h"

/* Resolves NCCL_NET_PLUGIN; a value that loads nothing is an error, one that
 * loads another plugin a warning. */
void doctor_check_plugin(struct doctor *d);
/* NCCL_* names of this process and of NCCL's configuration files that
 * neither NCCL nor the plugin reads: a warning each, with the closest name. */
void doctor_check_names(struct doctor *d);
/* doctor_gids.c: one line per GID, as show_gids prints them. */
void doctor_print_gids(FILE *f, const struct doctor *d);
struct json;
/* "net_plugin": the same as the text's NCCL plugin line. */
void doctor_plugin_json(struct json *w);
/* The resolution doctor_check_plugin made. */
const struct netload_choice *doctor_plugin(void);
/* "FILE (libnccl-net-diag 0.2.0, ncclNetPlugin_v12), from NCCL_NET_PLUGIN=diag". */
void doctor_plugin_line(char *buf, size_t cap);

#endif
