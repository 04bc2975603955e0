/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag explain FILE...: the command. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/explain/correlate.h"
#include "tools/explain/explain.h"
#include "tools/explain/rules.h"
#include "tools/opt.h"
#include "tools/tool.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-net-diag explain [--json[=FILE]] [-v] LOG... ('-' reads stdin)\n"
          "  Reads NCCL logs (NCCL_DEBUG=INFO or WARN output, NCCL_DEBUG_FILE files, whole job\n"
          "  logs with tracebacks, WARN lines pasted without their prefix; one file per rank or\n"
          "  host, or all in one) from NCCL 2.4 to 2.30, IB or Socket transport, aws-ofi-nccl or\n"
          "  this plugin, and names each failure's cause and fix with the lines that show it.\n"
          "  Reading all hosts' logs together lets it name the host that differs and the side\n"
          "  that failed first.\n"
          "  --json[=FILE]  {schema, version, input, findings} on stdout instead of the text, or\n"
          "           in FILE ('-' is stdout): input has the files, lines and hosts read, the\n"
          "           NCCL versions named and the lines not read; each finding is {rule,\n"
          "           confidence, cause, fix, exports, hosts, evidence}\n"
          "  -v       quote every line of evidence\n"
          "  --rules  list the failure signatures it knows\n"
          "Exit status: 0 nothing found in NCCL output, 1 findings (an error no rule knows is\n"
          "  a 'no confident cause' finding), 2 unreadable input, input with no NCCL output at\n"
          "  all, or bad usage.\n");
}

static void list_rules(void) {
  for (size_t i = 0; i < explain_nrules; i++)
    printf("%-19s %s (%s)\n", explain_rules[i].id, explain_rules[i].signature,
           explain_rules[i].versions);
}

int cmd_explain(int argc, char **argv) {
  struct json_dest json = {0};
  bool all = false;
  char why[512];
  enum { O_JSON = 1, O_RULES, O_VERBOSE, O_HELP };
  static const struct tool_opt opts[] = {{"json", 0, TOOL_OPT_OPTIONAL, O_JSON},
                                         {"rules", 0, TOOL_OPT_FLAG, O_RULES},
                                         {"verbose", 'v', TOOL_OPT_FLAG, O_VERBOSE},
                                         {"help", 'h', TOOL_OPT_FLAG, O_HELP},
                                         {NULL, 0, 0, 0}};
  struct tool_opts op;
  if (tool_opts_begin(&op, argc, argv, opts)) return tool_usage_error("explain", "out of memory");
  int id;
  const char *v;
  while ((id = tool_opt_next(&op, &v, why, sizeof(why))) > 0) {
    if (id == O_HELP || id == O_RULES) break;
    if (id == O_JSON && tool_opt_json(&json, v, why, sizeof(why))) break;
    if (id == O_VERBOSE) all = true;
  }
  char **files = NULL;
  int nfiles = id == TOOL_OPT_END ? tool_opts_operands(&op, &files) : 0;
  if (id == O_HELP || id == O_RULES) {
    tool_opts_end(&op);
    return id == O_HELP ? usage(stdout) : list_rules(), 0;
  }
  if (id) {
    tool_opts_end(&op);
    return tool_usage_error("explain", "%s", why);
  }
  if (!nfiles || json_dest_open(&json, why, sizeof(why))) {
    tool_opts_end(&op);
    if (!nfiles) return usage(stderr), 2;
    return tool_usage_error("explain", "%s", why);
  }
  struct logset ls = {0};
  for (int i = 0; i < nfiles; i++) {
    if (logset_read_path(&ls, files[i], why, sizeof(why))) {
      fprintf(stderr, "nccl-net-diag explain: %s\n", why);
      logset_free(&ls);
      json_dest_close(&json, why, sizeof(why));
      tool_opts_end(&op);
      return 2;
    }
  }
  tool_opts_end(&op);
  logset_finish(&ls);
  struct corr c;
  struct findings fs;
  int err = explain_analyse(&ls, &c, &fs);
  bool is_nccl = false;
  for (size_t i = 0; i < ls.nrecs && !is_nccl; i++) is_nccl = explain_rec_known(&ls.recs[i]);
  if (!err && !fs.n && !is_nccl) {
    fprintf(
      stderr,
      "nccl-net-diag explain: no NCCL output found in the input (no NCCL INFO or WARN lines, no NCCL error text): paste the job's output with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET set, or pass the NCCL_DEBUG_FILE files\n");
    err = -1;
  } else if (err) fprintf(stderr, "nccl-net-diag explain: %s\n", strerror(err));
  else {
    if (json.f) report_json(json.f, &ls, &c, &fs);
    if (json.f != stdout) report_text(stdout, &ls, &c, &fs, all);
  }
  int rc = err ? 2 : fs.n ? 1 : 0;
  if (json_dest_close(&json, why, sizeof(why))) {
    fprintf(stderr, "nccl-net-diag explain: %s\n", why);
    rc = 2;
  }
  findings_free(&fs);
  corr_free(&c);
  logset_free(&ls);
  return rc;
}
