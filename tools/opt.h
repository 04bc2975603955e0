/* SPDX-License-Identifier: Apache-2.0 */
/* The one option convention of nccl-net-diag's commands and nccl-net-bench,
 * GNU's, through getopt_long: "--opt=value" and "--opt value" both work for
 * an option that takes a value, a unique prefix of a long name works, and
 * options and operands may come in any order. --json takes its FILE only
 * after '=' (json_dest.h), so "--json FILE" is refused with that hint. */
#ifndef DIAG_TOOLS_OPT_H
#define DIAG_TOOLS_OPT_H

#include <stdbool.h>
#include <stddef.h>

enum tool_opt_arg { TOOL_OPT_FLAG, TOOL_OPT_VALUE, TOOL_OPT_OPTIONAL };

/* One option: its long name (without "--"; "" for a letter only), its
 * short letter (0: none),
 * and the id tool_opt_next returns for it (> 0). */
struct tool_opt {
  const char *name;
  char letter;
  enum tool_opt_arg arg;
  int id;
};

#define TOOL_OPT_END 0    /* no more options: the operands follow */
#define TOOL_OPT_ERROR -1 /* a usage error, described in why */

struct tool_opts {
  int argc;
  char **args;     /* a copy of argv, which getopt_long reorders */
  char **argv;     /* as given, for messages */
  void *longs;     /* struct option[] */
  char shorts[96]; /* getopt's optstring */
  const struct tool_opt *opts;
  int n;
  int first_operand; /* in args, after TOOL_OPT_END */
};

/* 0, or ENOMEM. opts ends with an entry whose name is NULL. */
int tool_opts_begin(struct tool_opts *p, int argc, char **argv, const struct tool_opt *opts);
/* The next option's id with its value in *value (NULL when it has none),
 * TOOL_OPT_END, or TOOL_OPT_ERROR with why: "unknown option '--x'",
 * "option --x needs a value", "option --x takes no value". */
int tool_opt_next(struct tool_opts *p, const char **value, char *why, size_t cap);
/* The operands (arguments that are not options), in their order. */
int tool_opts_operands(const struct tool_opts *p, char ***operands);
/* For commands that take no operand: TOOL_OPT_ERROR with why naming the
 * first one (and the --json=FILE hint where it follows --json), else 0. */
int tool_opts_no_operands(const struct tool_opts *p, char *why, size_t cap);
void tool_opts_end(struct tool_opts *p);

struct json_dest;
/* --json's value (NULL: none given): into d, or TOOL_OPT_ERROR with why. */
int tool_opt_json(struct json_dest *d, const char *value, char *why, size_t cap);

#endif
