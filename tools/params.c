/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag params: the knob table, with this process's values. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/agree.h"
#include "common/knobs.h"
#include "common/log.h"
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

int cmd_params(int argc, char **argv) {
  bool is_set_only = argc > 1 && !strcmp(argv[1], "--set");
  if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    printf("usage: nccl-net-diag params [--set | --agree]\n"
           "Every environment variable the plugin reads: its default, its value here, its\n"
           "meaning. --set: only those set. --agree: which NCCL settings every node must share,\n"
           "which may differ, and why.\n");
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "--agree") && argc == 2) return print_agree();
  if (argc > 2 || (argc > 1 && !is_set_only))
    return tool_usage_error("params", "unknown option '%s'", argv[argc > 2 && is_set_only ? 2 : 1]);
  log_set_stderr_level(LOG_LEVEL_WARN); /* a bad value is reported as NCCL would see it */
  knob_load(1);
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
  text_wrap_close(&w);
  return 0;
}
