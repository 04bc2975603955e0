/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag params: the knob table, with this process's values. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/agree.h"
#include "common/knobs.h"
#include "common/log.h"
#include "common/version.h"
#include "tools/json_out.h"
#include "tools/opt.h"
#include "tools/textwrap.h"
#include "tools/tool.h"

static const char *type_name(enum knob_type t) {
  switch (t) {
  case KT_INT: return "integer";
  case KT_BOOL: return "0|1";
  case KT_ENUM: return "choice";
  default: return "text";
  }
}

/* --agree: which NCCL settings every node must share, and why (the table
 * the handshake, doctor, probe and explain all read). */
static int print_agree(void) {
  size_t n;
  const struct agree_entry *t = agree_table(&n);
  for (size_t i = 0; i < n; i++)
    printf("%s\t%s\t%s\n", t[i].name, agree_class_name(t[i].cls), t[i].why);
  return 0;
}

/* nccl_knobs: [{name, state, value, why}]: every setting of NCCL 2.30.7's
 * network transports and what this plugin does with it. */
static void print_nccl_json(struct json *j, bool is_set_only) {
  int n;
  const struct nccl_knob *t = nccl_knobs(&n);
  json_arr(j, "nccl_knobs");
  for (int i = 0; i < n; i++) {
    const char *v = getenv(t[i].name);
    if (is_set_only && !v) continue;
    json_obj(j, NULL);
    json_str(j, "name", t[i].name);
    json_str(j, "state", nccl_knob_state_name(t[i].state));
    json_str(j, "value", v);
    json_str(j, "why", t[i].why);
    json_close_obj(j);
  }
  json_close_arr(j);
}

/* {schema, version, knobs: [{name, type, default, value, help}],
 *  nccl_knobs: [{name, state, value, why}], agree: [{name, class, why}]} */
static void print_json(FILE *f, bool is_set_only) {
  struct json j;
  json_begin(&j, f);
  json_str(&j, "schema", "nccl-net-diag.params/1");
  json_str(&j, "version", DIAG_VERSION);
  json_arr(&j, "knobs");
  for (int i = 0; i < K_COUNT; i++) {
    const struct knob_def *k = knob_def((enum knob_id)i);
    const char *raw = knob_raw((enum knob_id)i);
    if (is_set_only && !raw) continue;
    json_obj(&j, NULL);
    json_str(&j, "name", k->name);
    json_str(&j, "type", type_name(k->type));
    json_str(&j, "default", k->def);
    json_str(&j, "value", raw);
    json_str(&j, "help", k->help);
    json_close_obj(&j);
  }
  json_close_arr(&j);
  print_nccl_json(&j, is_set_only);
  size_t n;
  const struct agree_entry *t = agree_table(&n);
  json_arr(&j, "agree");
  for (size_t i = 0; i < n; i++) {
    json_obj(&j, NULL);
    json_str(&j, "name", t[i].name);
    json_str(&j, "class", agree_class_name(t[i].cls));
    json_str(&j, "why", t[i].why);
    json_close_obj(&j);
  }
  json_close_arr(&j);
  json_end(&j);
}

static void print_text(bool is_set_only) {
  struct text_wrap w;
  FILE *f = text_wrap_open(&w, stdout);
  for (int i = 0; i < K_COUNT; i++) {
    const struct knob_def *k = knob_def((enum knob_id)i);
    const char *raw = knob_raw((enum knob_id)i);
    if (is_set_only && !raw) continue;
    fprintf(f, "%s (%s, default %s)%s%s%s\n", k->name, type_name(k->type),
            k->def ? k->def : "unset", raw ? ": set to \"" : "", raw ? raw : "", raw ? "\"" : "");
    fprintf(f, "    %s\n", k->help);
  }
  int n;
  const struct nccl_knob *t = nccl_knobs(&n);
  fprintf(f, "\nNCCL 2.30.7's network settings this plugin does not take as NCCL does:\n");
  for (int i = 0; i < n; i++) {
    const char *v = getenv(t[i].name);
    if (t[i].state == NK_HONOURED || (is_set_only && !v)) continue;
    fprintf(f, "%s: %s%s%s%s\n    %s\n", t[i].name, nccl_knob_state_name(t[i].state),
            v ? " (set to \"" : "", v ? v : "", v ? "\")" : "", t[i].why);
  }
  text_wrap_close(&w);
}

int cmd_params(int argc, char **argv) {
  struct json_dest json = {0};
  bool is_set_only = false, is_agree = false;
  char why[512];
  enum { O_JSON = 1, O_SET, O_AGREE, O_HELP };
  static const struct tool_opt opts[] = {{"json", 0, TOOL_OPT_OPTIONAL, O_JSON},
                                         {"set", 0, TOOL_OPT_FLAG, O_SET},
                                         {"agree", 0, TOOL_OPT_FLAG, O_AGREE},
                                         {"help", 'h', TOOL_OPT_FLAG, O_HELP},
                                         {NULL, 0, 0, 0}};
  struct tool_opts op;
  if (tool_opts_begin(&op, argc, argv, opts)) return tool_usage_error("params", "out of memory");
  int id;
  const char *v;
  while ((id = tool_opt_next(&op, &v, why, sizeof(why))) > 0) {
    if (id == O_HELP || (id == O_JSON && tool_opt_json(&json, v, why, sizeof(why)))) break;
    if (id == O_SET) is_set_only = true;
    if (id == O_AGREE) is_agree = true;
  }
  if (id == TOOL_OPT_END) id = tool_opts_no_operands(&op, why, sizeof(why));
  tool_opts_end(&op);
  if (id == O_HELP) {
    printf("usage: nccl-net-diag params [--set | --agree] [--json[=FILE]]\n"
           "Every environment variable the plugin reads: its default, its value here, its\n"
           "meaning. --set: only those set. --agree: which NCCL settings every node must share,\n"
           "which may differ, and why. --json[=FILE]: both as one JSON document on stdout, or\n"
           "in FILE ('-' is stdout).\n");
    return 0;
  }
  if (id) return tool_usage_error("params", "%s", why);
  if (is_set_only && is_agree)
    return tool_usage_error("params", "--set and --agree list different tables: give one");
  if (json_dest_open(&json, why, sizeof(why))) return tool_usage_error("params", "%s", why);
  if (is_agree && !json.is_set) return print_agree();
  log_set_stderr_level(LOG_LEVEL_WARN); /* a bad value is reported as NCCL would see it */
  knob_load(1);
  if (json.f) print_json(json.f, is_set_only);
  else print_text(is_set_only);
  if (json_dest_close(&json, why, sizeof(why))) {
    fprintf(stderr, "nccl-net-diag params: %s\n", why);
    return 1;
  }
  return 0;
}
