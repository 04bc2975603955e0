/* SPDX-License-Identifier: Apache-2.0 */
/* getopt_long over a table of options (opt.h). */
#include "tools/opt.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/json_dest.h"

/* getopt_long's value for an option without a letter: above any char. */
#define LONG_ONLY_BASE 0x1000

int tool_opts_begin(struct tool_opts *p, int argc, char **argv, const struct tool_opt *opts) {
  memset(p, 0, sizeof(*p));
  while (opts[p->n].name) p->n++;
  struct option *longs = calloc((size_t)p->n + 1, sizeof(*longs));
  p->args = calloc((size_t)argc + 1, sizeof(*p->args));
  if (!longs || !p->args) {
    free(longs);
    free(p->args);
    return ENOMEM;
  }
  memcpy(p->args, argv, (size_t)argc * sizeof(*argv));
  p->argc = argc;
  p->argv = argv;
  p->opts = opts;
  p->longs = longs;
  size_t o = 0;
  int nlong = 0;
  p->shorts[o++] = ':'; /* a missing value is ':', not '?' */
  for (int i = 0; i < p->n; i++) {
    const char *colons = opts[i].arg == TOOL_OPT_VALUE      ? ":"
                         : opts[i].arg == TOOL_OPT_OPTIONAL ? "::"
                                                            : "";
    int val = opts[i].letter ? opts[i].letter : LONG_ONLY_BASE + i;
    if (opts[i].name[0]) /* "" for an option with a letter only */
      longs[nlong++] = (struct option){opts[i].name,
                                       opts[i].arg == TOOL_OPT_VALUE      ? required_argument
                                       : opts[i].arg == TOOL_OPT_OPTIONAL ? optional_argument
                                                                          : no_argument,
                                       NULL, val};
    if (opts[i].letter && o + 4 < sizeof(p->shorts))
      o += (size_t)snprintf(p->shorts + o, sizeof(p->shorts) - o, "%c%s", opts[i].letter, colons);
  }
  optind = 0; /* glibc: start afresh */
  opterr = 0;
  return 0;
}

/* The option as the user wrote it, without "=value". */
static void written(const struct tool_opts *p, char *buf, size_t cap) {
  const char *a = optind > 0 && optind <= p->argc ? p->args[optind - 1] : "";
  snprintf(buf, cap, "%.*s", (int)strcspn(a, "="), a);
}

int tool_opt_next(struct tool_opts *p, const char **value, char *why, size_t cap) {
  int idx = -1;
  *value = NULL;
  int c = getopt_long(p->argc, p->args, p->shorts, p->longs, &idx);
  if (c == -1) {
    p->first_operand = optind;
    return TOOL_OPT_END;
  }
  char name[128];
  if (c == '?' || c == ':') {
    if (optopt && optopt < LONG_ONLY_BASE && c == '?') snprintf(name, sizeof(name), "-%c", optopt);
    else written(p, name, sizeof(name));
    bool is_known = false;
    for (int i = 0; i < p->n && !is_known; i++)
      is_known = !strncmp(name, "--", 2) && p->opts[i].name[0] &&
                 !strncmp(name + 2, p->opts[i].name, strlen(name + 2));
    if (c == ':') snprintf(why, cap, "option %s needs a value", name);
    else if (is_known) snprintf(why, cap, "option %s takes no value", name);
    else snprintf(why, cap, "unknown option '%s'", name);
    return TOOL_OPT_ERROR;
  }
  *value = optarg;
  for (int i = 0; i < p->n; i++)
    if (c == (p->opts[i].letter ? p->opts[i].letter : LONG_ONLY_BASE + i)) return p->opts[i].id;
  snprintf(why, cap, "unknown option '-%c'", c);
  return TOOL_OPT_ERROR;
}

int tool_opts_operands(const struct tool_opts *p, char ***operands) {
  *operands = p->args + p->first_operand;
  return p->argc - p->first_operand;
}

int tool_opts_no_operands(const struct tool_opts *p, char *why, size_t cap) {
  if (p->first_operand >= p->argc) return 0;
  const char *first = p->args[p->first_operand];
  for (int i = 1; i < p->argc; i++)
    if (p->argv[i] == first && json_dest_stray(p->argv[i - 1], first, why, cap))
      return TOOL_OPT_ERROR;
  snprintf(why, cap, "unexpected argument '%s' (this command takes options only)", first);
  return TOOL_OPT_ERROR;
}

void tool_opts_end(struct tool_opts *p) {
  free(p->longs);
  free(p->args);
  p->longs = NULL;
  p->args = NULL;
}

int tool_opt_json(struct json_dest *d, const char *value, char *why, size_t cap) {
  if (value && !*value) {
    snprintf(why, cap, "option --json= needs a file name: --json=FILE, or --json alone for stdout");
    return TOOL_OPT_ERROR;
  }
  d->is_set = true;
  d->path = value && strcmp(value, "-") ? value : NULL; /* value lives in argv */
  return 0;
}
