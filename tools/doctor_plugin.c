/* SPDX-License-Identifier: Apache-2.0 */
/* doctor: which file NCCL will load for NCCL_NET_PLUGIN on this host, its
 * release, and whether it loads. A missing plugin is the most common
 * mistake, and NCCL only says so at INFO level. */
#include "tools/doctor_plugin.h"

#include "common/knob_names.h"
#include "tools/json_out.h"
#include "tools/ncclconf.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct netload_choice choice;

const struct netload_choice *doctor_plugin(void) { return &choice; }

void doctor_check_plugin(struct doctor *d) {
  const char *value = getenv("NCCL_NET_PLUGIN");
  netload_resolve(value, &choice);
  char fix[400];
  netload_choice_fix(&choice, fix, sizeof(fix));
  if (choice.is_set && choice.value[0] && !choice.is_none && !choice.is_loaded)
    doctor_finding(d, TOPO_ERROR, fix,
                   "on %s NCCL_NET_PLUGIN=%s loads nothing, so NCCL runs without this plugin "
                   "(over its own transports, or not at all): %s",
                   d->hostname, choice.value, choice.why);
  /* Before 2.21 NCCL opened only libnccl-net-<value>.so (its net.cc). */
  bool is_file_form = choice.is_set && !strchr(choice.value, ',') && strcmp(choice.entry, "diag");
  if (choice.is_loaded && choice.is_ours && is_file_form)
    doctor_finding(d, TOPO_NOTE,
                   "NCCL_NET_PLUGIN=diag, with libnccl-net-diag.so where the loader finds it, "
                   "works with every NCCL release",
                   "NCCL_NET_PLUGIN=%s names the plugin by file, which NCCL 2.21 and later take; "
                   "earlier releases open only libnccl-net-<value>.so",
                   choice.value);
  if (choice.is_set && choice.is_loaded && !choice.is_ours)
    doctor_finding(d, TOPO_WARNING, fix,
                   "on %s NCCL_NET_PLUGIN=%s makes NCCL load %s, another network plugin, not "
                   "libnccl-net-diag",
                   d->hostname, choice.value, choice.file);
}

void doctor_plugin_line(char *buf, size_t cap) {
  const struct netload_choice *c = &choice;
  char from[1100];
  if (!c->is_set)
    snprintf(from, sizeof(from),
             "NCCL_NET_PLUGIN is unset, so NCCL looks for "
             "libnccl-net.so");
  else snprintf(from, sizeof(from), "NCCL_NET_PLUGIN=%s", c->value);
  if (c->is_none)
    snprintf(buf, cap, "none: NCCL uses only its own transports (NCCL_NET_PLUGIN=%s)", c->value);
  else if (c->is_loaded)
    snprintf(buf, cap, "%s (%s%s, ncclNetPlugin_v%d), from %s", c->file,
             c->is_ours ? "libnccl-net-diag " : "another plugin", c->is_ours ? c->version : "",
             c->abi, from);
  else if (!c->is_set || !c->value[0])
    snprintf(buf, cap,
             "none found: %s, which is not on the loader's path, so NCCL uses its own "
             "transports (set NCCL_NET_PLUGIN=diag to use this plugin)",
             from);
  else snprintf(buf, cap, "none loads: %s (see Problems)", from);
}

static void file_finding(void *arg, const char *msg) {
  doctor_finding(arg, TOPO_WARNING,
                 "correct the line in that file (NAME=VALUE, no spaces), or delete it", "%s", msg);
}

void doctor_check_names(struct doctor *d) {
  ncclconf_each_unknown(file_finding, d);
  for (int i = 0; i < d->self.nvar; i++) {
    const char *name = d->self.vars[i].name;
    char msg[900];
    if (ncclconf_origin(name) || !knob_name_unknown(name, NULL, msg, sizeof(msg))) continue;
    const char *near = knob_name_closest(name);
    char fix[300];
    if (near)
      snprintf(fix, sizeof(fix), "export %s=%s (and unset %s)", near, d->self.vars[i].value, name);
    else snprintf(fix, sizeof(fix), "unset %s, or spell it as NCCL's documentation does", name);
    doctor_finding(d, TOPO_WARNING, fix, "%s", msg);
  }
}

void doctor_plugin_json(struct json *w) {
  const struct netload_choice *c = &choice;
  json_obj(w, "net_plugin");
  json_str(w, "value", c->is_set ? c->value : NULL);
  json_bool(w, "none", c->is_none);
  json_bool(w, "loads", c->is_loaded);
  json_str(w, "file", c->is_loaded ? c->file : NULL);
  json_bool(w, "is_this_plugin", c->is_ours);
  json_str(w, "version", c->version[0] ? c->version : NULL);
  if (c->abi) json_int(w, "abi", c->abi);
  else json_null(w, "abi");
  json_str(w, "error", !c->is_loaded && !c->is_none ? c->why : NULL);
  json_close_obj(w);
}
