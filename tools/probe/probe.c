/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag probe: options, then every rank's part (facts, tasks) and
 * rank 0's (rendezvous, comparison, report).
 *
 * Exit status, rank 0: 0 when every pair passed and nothing that matters
 * differs, 1 when problems were found, 2 on a usage error. Other ranks: 0
 * unless they themselves failed (1), 2 on a usage error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/knobs.h"
#include "common/log.h"
#include "common/size.h"
#include "tools/opt.h"
#include "tools/probe/capture.h"
#include "tools/probe/coord.h"
#include "tools/probe/facts.h"
#include "tools/probe/plugin_events.h"
#include "tools/probe/probe_report.h"
#include "tools/probe/rdv_secret.h"
#include "tools/probe/transfer.h"
#include "tools/probe/worker.h"
#include "tools/tool.h"

#define CONNECT_GRACE_NS (10LL * 1000000000) /* a rank may start before rank 0 */

static void usage(FILE *f) {
  fprintf(f,
          "usage: nccl-net-diag probe [options]   (one process per node, under a launcher)\n"
          "  whole-cluster preflight: every rank reports its host's NCCL, plugin, settings,\n"
          "  interfaces and RDMA ports to rank 0, every pair of hosts moves verified data\n"
          "  through the plugin on every device, and rank 0 prints what differs, what failed\n"
          "  and what to set. Rank and world size come from torchrun (RANK, WORLD_SIZE,\n"
          "  LOCAL_RANK, MASTER_ADDR, MASTER_PORT), Open MPI (OMPI_COMM_WORLD_*), MPICH and\n"
          "  Intel MPI (PMI_RANK, PMI_SIZE) or srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID;\n"
          "  rank 0 is on the first node of SLURM_STEP_NODELIST). No GPU is needed.\n"
          "  --json[=FILE]        rank 0 writes the report as JSON on stdout (the text goes to\n"
          "                       stderr), or in FILE ('-' is stdout)\n"
          "  --timeout SEC        the whole probe ends within this (default 300)\n"
          "  --bytes SIZE         moved each way per pair and device (default 64M; K, M, G, T\n"
          "                       are powers of 1024: 1.5G, 64KiB)\n"
          "  --pings N            round trips timed per pair (default 20)\n"
          "  --pairs MODE         all, ring, or sample:N (the ring plus N random pairs);\n"
          "                       default all up to --all-pairs-max hosts, else sample:HOSTS\n"
          "  --all-pairs-max N    (default 64)\n"
          "  --seed N             for the random sample (default 1)\n"
          "  --slow-ratio R       flag a pair below R times its kind's median (default 0.33)\n"
          "  --rendezvous H:P     rank 0's host and port (default MASTER_ADDR:MASTER_PORT,\n"
          "                       port %d)\n"
          "  --job-id ID          keeps two probes on one port apart (default: the launcher's)\n"
          "  --nccl-lib PATH      the NCCL library to report (default libnccl.so.2 as the\n"
          "                       loader finds it)\n"
          "  --plugin PATH        the plugin to test (default as nccl-net-diag finds it)\n"
          "  --abi N              the plugin's ncclNetPlugin_vN table (default the newest)\n"
          "  -v                   every rank logs the plugin's lines on stderr\n"
          "exit status: 0 all pairs passed and nothing differs that matters, 1 problems found,\n"
          "2 usage; ranks other than 0 exit 0 unless they themselves failed\n",
          PROBE_DEFAULT_PORT);
}

static int parse_pairs(struct probe_opts *o, const char *v) {
  if (!strcmp(v, "all")) o->pairs = PAIRS_ALL;
  else if (!strcmp(v, "ring")) o->pairs = PAIRS_RING;
  else if (!strncmp(v, "sample:", 7) && atoi(v + 7) >= 0 && v[7]) {
    o->pairs = PAIRS_SAMPLE;
    o->sample_n = atoi(v + 7);
  } else return EINVAL;
  return 0;
}

/* An integer option in [lo, hi]; the range goes in why when it is not. */
static int int_option(const char *v, long lo, long hi, int *out, const char **why) {
  static char text[96];
  long x;
  if (tool_parse_int(v, lo, hi, &x)) {
    snprintf(text, sizeof(text), "an integer from %ld to %ld", lo, hi);
    *why = text;
    return EINVAL;
  }
  *out = (int)x;
  return 0;
}

/* One option with its value: 0, ENOENT for a name it does not know, EINVAL
 * for a bad value (why says what it takes). */
static int option(struct probe_opts *o, const char *name, const char *v, const char **why) {
  *why = "";
  if (!strcmp(name, "--timeout")) return int_option(v, 5, 86400, &o->timeout_s, why);
  else if (!strcmp(name, "--bytes")) {
    uint64_t bytes;
    if (size_parse(v, &bytes) || !bytes || bytes > SIZE_MAX)
      return *why = "a size such as 64M or 1.5G (K = 1024)", EINVAL;
    o->bytes = (size_t)bytes;
  } else if (!strcmp(name, "--pings")) return int_option(v, 0, 100000, &o->pings, why);
  else if (!strcmp(name, "--pairs")) {
    if (parse_pairs(o, v)) return *why = "all, ring or sample:HOSTS", EINVAL;
  } else if (!strcmp(name, "--all-pairs-max"))
    return int_option(v, 2, 1000000, &o->all_pairs_max, why);
  else if (!strcmp(name, "--seed")) o->seed = (unsigned)strtoul(v, NULL, 0);
  else if (!strcmp(name, "--slow-ratio")) {
    char *end;
    o->slow_ratio = strtod(v, &end);
    if (end == v || *end || o->slow_ratio <= 0 || o->slow_ratio >= 1)
      return *why = "a number between 0 and 1, such as 0.33", EINVAL;
  } else if (!strcmp(name, "--rendezvous")) o->rendezvous = v;
  else if (!strcmp(name, "--job-id")) o->job_id = v;
  else if (!strcmp(name, "--nccl-lib")) o->nccl_lib = v;
  else if (!strcmp(name, "--plugin")) o->plugin = v;
  else if (!strcmp(name, "--abi"))
    return int_option(v, NETLOAD_ABI_MIN, NETLOAD_ABI_MAX, &o->abi, why);
  else return ENOENT;
  return 0;
}

/* 0, 1 for -h, 2 with the reason printed. */
static int parse(struct probe_opts *o, int argc, char **argv) {
  *o = (struct probe_opts){.timeout_s = 300,
                           .bytes = 64u << 20,
                           .all_pairs_max = 64,
                           .pings = 20,
                           .seed = 1,
                           .slow_ratio = 0.33};
  enum { O_HELP = 1, O_VERBOSE, O_JSON, O_VALUE };
  /* Every option with a value goes through option() by its name. */
  static const struct tool_opt opts[] = {{"help", 'h', TOOL_OPT_FLAG, O_HELP},
                                         {"verbose", 'v', TOOL_OPT_FLAG, O_VERBOSE},
                                         {"json", 0, TOOL_OPT_OPTIONAL, O_JSON},
                                         {"timeout", 0, TOOL_OPT_VALUE, O_VALUE},
                                         {"bytes", 0, TOOL_OPT_VALUE, O_VALUE + 1},
                                         {"pings", 0, TOOL_OPT_VALUE, O_VALUE + 2},
                                         {"pairs", 0, TOOL_OPT_VALUE, O_VALUE + 3},
                                         {"all-pairs-max", 0, TOOL_OPT_VALUE, O_VALUE + 4},
                                         {"seed", 0, TOOL_OPT_VALUE, O_VALUE + 5},
                                         {"slow-ratio", 0, TOOL_OPT_VALUE, O_VALUE + 6},
                                         {"rendezvous", 0, TOOL_OPT_VALUE, O_VALUE + 7},
                                         {"job-id", 0, TOOL_OPT_VALUE, O_VALUE + 8},
                                         {"nccl-lib", 0, TOOL_OPT_VALUE, O_VALUE + 9},
                                         {"plugin", 0, TOOL_OPT_VALUE, O_VALUE + 10},
                                         {"abi", 0, TOOL_OPT_VALUE, O_VALUE + 11},
                                         {NULL, 0, 0, 0}};
  struct tool_opts op;
  char text[512];
  if (tool_opts_begin(&op, argc, argv, opts)) return tool_usage_error("probe", "out of memory");
  int id;
  const char *v;
  while ((id = tool_opt_next(&op, &v, text, sizeof(text))) > 0) {
    if (id == O_HELP || (id == O_JSON && tool_opt_json(&o->json, v, text, sizeof(text)))) break;
    if (id == O_VERBOSE) o->verbose = 1;
    if (id < O_VALUE) continue;
    char name[64];
    const char *why;
    snprintf(name, sizeof(name), "--%s", opts[id - O_VALUE + 3].name);
    if (option(o, name, v, &why)) {
      snprintf(text, sizeof(text), "bad value '%s' for %s: %s", v, name, why);
      break;
    }
  }
  if (id == TOOL_OPT_END) id = tool_opts_no_operands(&op, text, sizeof(text));
  tool_opts_end(&op);
  if (id == O_HELP) return usage(stdout), 1;
  if (id) return tool_usage_error("probe", "%s", text);
  const char *bad = o->timeout_s < 5                    ? "--timeout must be at least 5 seconds"
                    : !o->bytes                         ? "--bytes must be a size such as 64M"
                    : o->pings < 0 || o->pings > 100000 ? "--pings must be 0 to 100000"
                    : o->all_pairs_max < 2              ? "--all-pairs-max must be at least 2"
                    : o->slow_ratio <= 0 || o->slow_ratio >= 1 ? "--slow-ratio must be in (0, 1)"
                    : o->abi && (o->abi < NETLOAD_ABI_MIN || o->abi > NETLOAD_ABI_MAX)
                      ? "--abi must be 5 to 12"
                      : NULL;
  if (bad) fprintf(stderr, "nccl-net-diag probe: %s\n", bad);
  return bad ? 2 : 0;
}

static const char *env_get(const char *name, void *arg) {
  (void)arg;
  return getenv(name);
}

static int verdict_status(const struct probe_run *r) {
  for (int i = 0; i < r->nproblem; i++)
    if (r->problems[i].sev >= SEV_WARNING) return 1;
  return 0;
}

/* Rank 0, once everything is in: judge, compare, report. */
static int finish(struct probe_run *r) {
  probe_judge(r);
  probe_compare(r);
  int status = verdict_status(r);
  struct json_dest json = r->opts->json; /* opened by cmd_probe, closed here */
  probe_report_text(json.f == stdout ? stderr : stdout, r, status);
  fflush(stdout);
  if (json.f) {
    char why[512];
    probe_report_json(json.f, r, status);
    if (json_dest_close(&json, why, sizeof(why))) {
      fprintf(stderr, "nccl-net-diag probe: %s\n", why);
      status = 1;
    }
  }
  return status;
}

static int run_ranks(const struct probe_opts *o, const struct probe_launch *l,
                     struct probe_run *run) {
  struct coord *c = l->rank == 0 ? calloc(1, sizeof(*c)) : NULL;
  int64_t t0 = clock_mono_ns();
  if (l->rank == 0) {
    if (!c || coord_listen(c, o, l, run) || coord_start(c)) {
      fprintf(stderr, "nccl-net-diag probe: %s\n", c ? c->listen_why : "out of memory");
      if (c) coord_free(c);
      free(c);
      return 1;
    }
  }
  struct probe_facts f = {0};
  struct facts_ctx fx;
  facts_gather(&f, &fx, o, l->rank, l->local_rank);
  struct worker w = {.o = o, .l = l, .fx = &fx};
  w.deadline_ns = t0 + (int64_t)o->timeout_s * 1000000000 + CONNECT_GRACE_NS;
  int failed = l->rank == 0 ? worker_run(&w, &f, "127.0.0.1", l->port, "this rank's own")
                            : worker_run(&w, &f, l->host, l->port, l->host_from);
  if (failed) fprintf(stderr, "nccl-net-diag probe: rank %d: %s\n", l->rank, w.why);
  probe_facts_free(&f);
  facts_release(&fx);
  plugin_events_close();
  if (l->rank != 0) return failed;
  coord_join(c);
  int status = finish(run);
  coord_free(c);
  free(c);
  return status ? status : failed;
}

int cmd_probe(int argc, char **argv) {
  struct probe_opts o;
  int r = parse(&o, argc, argv);
  if (r) return r == 1 ? 0 : 2;
  struct probe_launch l;
  char why[1024];
  if (probe_launch_read(&l, o.rendezvous, env_get, NULL, why, sizeof(why))) {
    fprintf(stderr, "nccl-net-diag probe: %s\n", why);
    return 2;
  }
  if (o.job_id) snprintf(l.job, sizeof(l.job), "%s", o.job_id);
  rdv_secret_derive(&l, o.job_id, env_get, NULL);
  log_set_stderr_level(o.verbose ? LOG_LEVEL_INFO : LOG_LEVEL_NONE);
  knob_load(1);
  char prefix[64];
  snprintf(prefix, sizeof(prefix), "[rank %d] ", l.rank);
  capture_set_verbose(o.verbose, prefix);
  static struct probe_run run;
  run.opts = &o;
  run.world = l.world;
  snprintf(run.launcher, sizeof(run.launcher), "%s", l.launcher);
  snprintf(run.rendezvous, sizeof(run.rendezvous), "%s:%d (%s)", l.host, l.port, l.host_from);
  snprintf(run.job, sizeof(run.job), "%s", l.job);
  if (l.rank == 0 && json_dest_open(&o.json, why, sizeof(why))) /* now, not at the end */
    return tool_usage_error("probe", "%s", why);
  /* After the usage errors, which come first; one rank alone has no rank to claim. */
  char note[700];
  rdv_secret_note(&l, note, sizeof(note));
  if (l.rank == 0 && l.world > 1 && note[0]) fprintf(stderr, "nccl-net-diag probe: %s\n", note);
  if (l.rank == 0) {
    run.facts = calloc((size_t)l.world, sizeof(*run.facts));
    run.ranks = calloc((size_t)l.world, sizeof(*run.ranks));
    if (!run.facts || !run.ranks) {
      fprintf(stderr, "nccl-net-diag probe: out of memory for %d ranks\n", l.world);
      return 1;
    }
  }
  return run_ranks(&o, &l, &run);
}
