/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag params: the knob table, with this process's values. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/agree.h"
#include "common/knobs.h"
#include "common/log.h"
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
  if (argc > 1 && !strcmp(argv[1], "--agree")) return print_agree();
  if (argc > 1 && !is_set_only) {
    fprintf(stderr, "usage: nccl-net-diag params [--set | --agree]\n");
    return 2;
  }
  log_set_stderr_level(LOG_LEVEL_WARN); /* a bad value is reported as NCCL would see it */
  knob_load(1);
  for (int i = 0; i < K_COUNT; i++) {
    const struct knob_def *k = knob_def((enum knob_id)i);
    const char *raw = knob_raw((enum knob_id)i);
    if (is_set_only && !raw) continue;
    printf("%s (%s, default %s)%s%s%s\n", k->name, type_name(k->type), k->def ? k->def : "unset",
           raw ? ": set to \"" : "", raw ? raw : "", raw ? "\"" : "");
    printf("    %s\n", k->help);
  }
  return 0;
}
