/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-bench: options, then the run, then the table's footer, the JSON
 * and the plot. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_report.h"
#include "common/size.h"
#include "common/version.h"
#include "tools/netload.h" /* the ABI versions --abi takes */
#include "tools/opt.h"

static const char usage_text[] =
  "usage: nccl-net-bench [options]\n"
  "Measures libnccl-net-diag.so through its exported ABI, driven as NCCL drives it, beside a\n"
  "raw TCP baseline with the same pattern (and optionally a second plugin), in one run; prints\n"
  "a table, optionally JSON and SVG.\n"
  "  --placement loopback|netns  where the two ranks run (netns: two namespace hosts joined\n"
  "                              by a veth pair, made and removed by the bench; needs root)\n"
  "  --transport tcp|ib          ib: functional check over the plugin's RDMA device (set\n"
  "                              NCCL_DIAG_IBVERBS_LIB or --verbs-lib); no baseline\n"
  "  --verbs-lib PATH            sets NCCL_DIAG_IBVERBS_LIB for the ranks\n"
  "  --modes LIST                uni,bidir,lat (default all)\n"
  "  --sizes LIST                bandwidth sizes (default 8,64,512,4K,32K,256K,1M,4M,16M,64M,256M)\n"
  "  --lat-sizes LIST            ping-pong sizes (default 8,256,4K,64K)\n"
  "  --comms LIST                comms (connections) at once, each direction, up to 8192; each\n"
  "                              count is connected on its own and its threads, descriptors\n"
  "                              and memory are reported (default 1)\n"
  "  --compare PATH              also measure this plugin (e.g. NCCL's own Socket transport as\n"
  "                              a plugin), driven the same way, interleaved in every repetition\n"
  "  --nccl-shape                what NCCL's proxy runs: --modes uni,bidir --sizes 128K,512K,1M,4M\n"
  "                              --comms 2,4,8,16 --no-baseline (options after it override\n"
  "                              these), and a table of size x channels x direction with ours,\n"
  "                              the compared plugin's (--compare) and the ratio\n"
  "  --targets                   judge the development targets under the table (and in the JSON)\n"
  "  --window N                  requests in flight per comm, 1..8 (default 8)\n"
  "  --reps N                    repetitions; medians are reported (default 3)\n"
  "  --target-bytes SIZE         payload per comm per measurement (default 1G)\n"
  "  --max-msgs N                at most this many messages per measurement (default 20000)\n"
  "  --lat-iters N               round trips per ping-pong measurement (default 5000)\n"
  "  --max-mem SIZE              buffer memory a rank may touch (default 1G; shrinks the window\n"
  "                              of the largest sizes)\n"
  "  --raw-shapes LIST           baseline shapes tried per size: socket counts, 's' = spin\n"
  "                              instead of sleeping in send/recv, '1e' = one socket per comm,\n"
  "                              every comm on one epoll thread (default 1,2,4,1s,2s; 1e is\n"
  "                              added with several comms, where it is the one that scales)\n"
  "  --raw-min-stripe SIZE       smallest piece of a message per baseline socket (default 64K)\n"
  "  --no-baseline               plugin only\n"
  "  --baseline                  the raw TCP baseline too (after --nccl-shape)\n"
  "  --lat-one-conn              also a latency baseline with both directions on one connection\n"
  "  --pin                       pin rank r (all its threads) to CPU r, both engines alike\n"
  "  --fuse LIST                 each rank fuses these devices into a virtual NIC (makeVDevice,\n"
  "                              as NCCL does for NCCL_NET_FORCE_MERGE) and measures over it\n"
  "  --rank-env R:NAME=VALUE     set NAME in rank R (0 or 1) only, before it loads a plugin\n"
  "                              (e.g. 0:NCCL_IB_HCA==rxe0 1:NCCL_IB_HCA==rxe1); repeatable\n"
  "  --wait-quiet                before each measurement, wait until the host is >= 90 % idle\n"
  "  --json[=FILE]               the whole record as JSON on stdout (the table goes to stderr),\n"
  "                              or in FILE ('-' is stdout)\n"
  "  --svg FILE                  GB/s against size, plugin and baseline\n"
  "  --select-reps N             pilot repetitions that choose each size's baseline shape, which\n"
  "                              is then measured against the plugin on fresh repetitions\n"
  "                              (default 2; 0 = choose on the measured repetitions themselves)\n"
  "  --driver-idle-us N          experiment, not NCCL: the plugin's driving thread sleeps N us\n"
  "                              instead of sched_yield() when a pass made no progress\n"
  "  --plugin PATH  --abi 5..12  --dev N  -v  --version\n"
  "A SIZE is bytes, or a number with K, M, G or T, each 1024 times the one before (1.5G, 64KiB).\n"
  "Exit status: 0 measured and verified, 1 failed (bad data, errors), 77 skipped (said why).\n";

/* A size (common/size.h); 0 for a bad one, which no option takes. */
static uint64_t size_arg(const char *s) {
  uint64_t v;
  return size_parse(s, &v) ? 0 : v;
}

/* A comma list of sizes (or plain counts) into out; *n of them, at least
 * one. 0, or EINVAL. */
static int parse_list(const char *s, uint64_t *out, int max, bool are_sizes, int *n) {
  char buf[1024];
  snprintf(buf, sizeof(buf), "%s", s);
  *n = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (*n == max) return EINVAL;
    uint64_t v = are_sizes ? size_arg(t) : strtoull(t, NULL, 10);
    if (!v) return EINVAL;
    out[(*n)++] = v;
  }
  return *n ? 0 : EINVAL;
}

static int parse_ints(const char *s, int *out, int max, int lo, int hi, int *n) {
  uint64_t v[BENCH_MAX_SIZES];
  int err = parse_list(s, v, max < BENCH_MAX_SIZES ? max : BENCH_MAX_SIZES, false, n);
  for (int i = 0; !err && i < *n; i++) {
    if (v[i] < (uint64_t)lo || v[i] > (uint64_t)hi) return EINVAL;
    out[i] = (int)v[i];
  }
  return err;
}

/* "1,2,4,1s": socket counts, "s" = the threads spin (poll with
 * MSG_DONTWAIT and sched_yield) instead of sleeping in send/recv. */
static int parse_shapes(const char *s, struct raw_shape *out, int *n) {
  char buf[128];
  snprintf(buf, sizeof(buf), "%s", s);
  *n = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    char *end;
    long v = strtol(t, &end, 10);
    if (*n == BENCH_MAX_SHAPES || v < 1 || v > BENCH_MAX_SOCKS ||
        (*end && strcmp(end, "s") && strcmp(end, "e")) || (*end == 'e' && v != 1))
      return EINVAL;
    out[(*n)++] = (struct raw_shape){(int)v, *end == 's', false, *end == 'e'};
  }
  return *n ? 0 : EINVAL;
}

/* "1:NCCL_IB_HCA==rxe1": the rank, then an environment entry. */
static int parse_rank_env(struct opts *o, const char *v) {
  if ((v[0] != '0' && v[0] != '1') || v[1] != ':' || !strchr(v + 2, '=') || v[2] == '=')
    return EINVAL;
  if (o->nrank_envs == BENCH_MAX_RANK_ENVS) return EINVAL;
  o->rank_env_ranks[o->nrank_envs] = v[0] - '0';
  o->rank_envs[o->nrank_envs++] = v + 2;
  return 0;
}

static int parse_modes(const char *s, int *modes) {
  char buf[128];
  snprintf(buf, sizeof(buf), "%s", s);
  memset(modes, 0, sizeof(int) * MODE_COUNT);
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int k = 0;
    while (k < MODE_COUNT && strcmp(t, mode_name[k])) k++;
    if (k == MODE_COUNT) return EINVAL;
    modes[k] = 1;
  }
  return 0;
}

static void defaults(struct opts *o) {
  memset(o, 0, sizeof(*o));
  o->placement = "loopback";
  o->transport = "tcp";
  o->dev = -1;
  o->has_baseline = true;
  for (int i = 0; i < MODE_COUNT; i++) o->modes[i] = 1;
  parse_list("8,64,512,4K,32K,256K,1M,4M,16M,64M,256M", o->sizes, BENCH_MAX_SIZES, true,
             &o->nsizes);
  parse_list("8,256,4K,64K", o->lat_sizes, BENCH_MAX_SIZES, true, &o->nlat_sizes);
  o->comms[0] = 1;
  o->ncomms_list = 1;
  parse_shapes("1,2,4,1s,2s", o->raw_shapes, &o->nraw_shapes);
  o->window = BENCH_MAX_WINDOW;
  o->reps = 3;
  o->select_reps = 2;
  o->target_bytes = 1ULL << 30;
  o->max_mem = 1ULL << 30;
  o->raw_min_stripe = 64 << 10;
  o->max_msgs = 20000;
  o->lat_iters = 5000;
}

enum option_result { OPT_TAKEN, OPT_UNKNOWN, OPT_BAD_VALUE };

/* One option with its value. */
static enum option_result option(struct opts *o, const char *k, const char *v) {
  int bad = 0;
  if (!strcmp(k, "--placement"))
    o->placement = v, bad = strcmp(v, "loopback") && strcmp(v, "netns");
  else if (!strcmp(k, "--transport")) o->transport = v, bad = strcmp(v, "tcp") && strcmp(v, "ib");
  else if (!strcmp(k, "--verbs-lib")) bad = setenv("NCCL_DIAG_IBVERBS_LIB", v, 1);
  else if (!strcmp(k, "--modes")) bad = parse_modes(v, o->modes);
  else if (!strcmp(k, "--sizes")) bad = parse_list(v, o->sizes, BENCH_MAX_SIZES, true, &o->nsizes);
  else if (!strcmp(k, "--lat-sizes"))
    bad = parse_list(v, o->lat_sizes, BENCH_MAX_SIZES, true, &o->nlat_sizes);
  else if (!strcmp(k, "--comms"))
    bad = parse_ints(v, o->comms, BENCH_MAX_COMM_COUNTS, 1, BENCH_MAX_COMMS, &o->ncomms_list);
  else if (!strcmp(k, "--raw-shapes")) bad = parse_shapes(v, o->raw_shapes, &o->nraw_shapes);
  else if (!strcmp(k, "--window"))
    o->window = atoi(v), bad = o->window < 1 || o->window > BENCH_MAX_WINDOW;
  else if (!strcmp(k, "--reps")) o->reps = atoi(v), bad = o->reps < 1 || o->reps > BENCH_MAX_REPS;
  else if (!strcmp(k, "--target-bytes")) bad = !(o->target_bytes = size_arg(v));
  else if (!strcmp(k, "--max-mem")) bad = !(o->max_mem = size_arg(v));
  else if (!strcmp(k, "--raw-min-stripe")) bad = !(o->raw_min_stripe = size_arg(v));
  else if (!strcmp(k, "--max-msgs")) bad = !(o->max_msgs = strtoull(v, NULL, 10));
  else if (!strcmp(k, "--lat-iters")) bad = !(o->lat_iters = strtoull(v, NULL, 10));
  else if (!strcmp(k, "--svg")) o->svg = v;
  else if (!strcmp(k, "--plugin")) o->plugin = v;
  else if (!strcmp(k, "--compare")) o->compare = v;
  else if (!strcmp(k, "--driver-idle-us")) o->idle_us = atoi(v), bad = o->idle_us < 0;
  else if (!strcmp(k, "--select-reps"))
    o->select_reps = atoi(v), bad = o->select_reps < 0 || o->select_reps > BENCH_MAX_REPS;
  else if (!strcmp(k, "--abi"))
    o->abi = atoi(v), bad = o->abi < NETLOAD_ABI_MIN || o->abi > NETLOAD_ABI_MAX;
  else if (!strcmp(k, "--dev")) o->dev = atoi(v), bad = o->dev < 0;
  else if (!strcmp(k, "--fuse")) o->fuse = v, bad = !*v || strspn(v, "0123456789,") != strlen(v);
  else if (!strcmp(k, "--rank-env")) bad = parse_rank_env(o, v);
  else return OPT_UNKNOWN;
  return bad ? OPT_BAD_VALUE : OPT_TAKEN;
}

static int check_sizes(const struct opts *o) {
  for (int i = 0; i < o->nsizes; i++)
    if (o->sizes[i] % 8 || o->sizes[i] > (1ULL << 30)) return EINVAL;
  for (int i = 0; i < o->nlat_sizes; i++)
    if (o->lat_sizes[i] % 8 || o->lat_sizes[i] > (1ULL << 30)) return EINVAL;
  return 0;
}

/* NCCL's traffic: Simple-protocol steps (512 KiB), p2p chunks (128 KiB),
 * 1 and 4 MiB buffers; 2-16 channels, each its own connection; judged
 * against NCCL's own transport, so no socket baseline. */
static void nccl_shape(struct opts *o) {
  o->is_nccl_shape = true;
  o->has_baseline = false;
  parse_modes("uni,bidir", o->modes);
  parse_list("128K,512K,1M,4M", o->sizes, BENCH_MAX_SIZES, true, &o->nsizes);
  parse_ints("2,4,8,16", o->comms, BENCH_MAX_COMM_COUNTS, 1, BENCH_MAX_COMMS, &o->ncomms_list);
}

enum parse_outcome { PARSE_RUN, PARSE_HELP, PARSE_VERSION, PARSE_BAD };

/* Every option with a value goes through option() by its name. */
enum {
  O_HELP = 1,
  O_VERSION,
  O_VERBOSE,
  O_NO_BASELINE,
  O_LAT_ONE,
  O_QUIET,
  O_PIN,
  O_CORRUPT,
  O_BASELINE,
  O_NCCL_SHAPE,
  O_TARGETS,
  O_JSON,
  O_VALUE
};
static const struct tool_opt bench_opts[] = {
  {"help", 'h', TOOL_OPT_FLAG, O_HELP},
  {"version", 0, TOOL_OPT_FLAG, O_VERSION},
  {"verbose", 'v', TOOL_OPT_FLAG, O_VERBOSE},
  {"no-baseline", 0, TOOL_OPT_FLAG, O_NO_BASELINE},
  {"lat-one-conn", 0, TOOL_OPT_FLAG, O_LAT_ONE},
  {"wait-quiet", 0, TOOL_OPT_FLAG, O_QUIET},
  {"pin", 0, TOOL_OPT_FLAG, O_PIN},
  {"corrupt", 0, TOOL_OPT_FLAG, O_CORRUPT}, /* test hook: proves checks bite */
  {"baseline", 0, TOOL_OPT_FLAG, O_BASELINE},
  {"nccl-shape", 0, TOOL_OPT_FLAG, O_NCCL_SHAPE},
  {"targets", 0, TOOL_OPT_FLAG, O_TARGETS},
  {"json", 0, TOOL_OPT_OPTIONAL, O_JSON},
#define BENCH_VALUE_FIRST 12 /* the index of the first option with a value */
  {"placement", 0, TOOL_OPT_VALUE, O_VALUE},
  {"transport", 0, TOOL_OPT_VALUE, O_VALUE + 1},
  {"verbs-lib", 0, TOOL_OPT_VALUE, O_VALUE + 2},
  {"modes", 0, TOOL_OPT_VALUE, O_VALUE + 3},
  {"sizes", 0, TOOL_OPT_VALUE, O_VALUE + 4},
  {"lat-sizes", 0, TOOL_OPT_VALUE, O_VALUE + 5},
  {"comms", 0, TOOL_OPT_VALUE, O_VALUE + 6},
  {"raw-shapes", 0, TOOL_OPT_VALUE, O_VALUE + 7},
  {"window", 0, TOOL_OPT_VALUE, O_VALUE + 8},
  {"reps", 0, TOOL_OPT_VALUE, O_VALUE + 9},
  {"target-bytes", 0, TOOL_OPT_VALUE, O_VALUE + 10},
  {"max-mem", 0, TOOL_OPT_VALUE, O_VALUE + 11},
  {"raw-min-stripe", 0, TOOL_OPT_VALUE, O_VALUE + 12},
  {"max-msgs", 0, TOOL_OPT_VALUE, O_VALUE + 13},
  {"lat-iters", 0, TOOL_OPT_VALUE, O_VALUE + 14},
  {"svg", 0, TOOL_OPT_VALUE, O_VALUE + 15},
  {"plugin", 0, TOOL_OPT_VALUE, O_VALUE + 16},
  {"compare", 0, TOOL_OPT_VALUE, O_VALUE + 17},
  {"driver-idle-us", 0, TOOL_OPT_VALUE, O_VALUE + 18},
  {"select-reps", 0, TOOL_OPT_VALUE, O_VALUE + 19},
  {"abi", 0, TOOL_OPT_VALUE, O_VALUE + 20},
  {"dev", 0, TOOL_OPT_VALUE, O_VALUE + 21},
  {"rank-env", 0, TOOL_OPT_VALUE, O_VALUE + 22},
  {"fuse", 0, TOOL_OPT_VALUE, O_VALUE + 23},
  {NULL, 0, 0, 0}};

/* One flag or option: PARSE_RUN to go on, or the outcome (why set). */
static enum parse_outcome one_option(struct opts *o, int id, const char *v, char *why, size_t cap) {
  if (id == O_HELP) return PARSE_HELP;
  if (id == O_VERSION) return PARSE_VERSION;
  if (id == O_VERBOSE) o->is_verbose = true;
  if (id == O_NO_BASELINE) o->has_baseline = false;
  if (id == O_LAT_ONE) o->is_lat_one_conn = true;
  if (id == O_QUIET) o->is_wait_quiet = true;
  if (id == O_PIN) o->is_pinned = true;
  if (id == O_CORRUPT) o->is_corrupting = true;
  if (id == O_BASELINE) o->has_baseline = true;
  if (id == O_NCCL_SHAPE) nccl_shape(o);
  if (id == O_TARGETS) o->has_targets = true;
  if (id == O_JSON && tool_opt_json(&o->json, v, why, cap)) return PARSE_BAD;
  if (id < O_VALUE) return PARSE_RUN;
  char name[64];
  snprintf(name, sizeof(name), "--%s", bench_opts[id - O_VALUE + BENCH_VALUE_FIRST].name);
  if (option(o, name, v) == OPT_TAKEN) return PARSE_RUN;
  snprintf(why, cap, "bad value '%s' for %s", v, name);
  return PARSE_BAD;
}

static enum parse_outcome parse_args(struct opts *o, int argc, char **argv) {
  defaults(o);
  size_t n = (size_t)snprintf(o->command, sizeof(o->command), "nccl-net-bench");
  for (int i = 1; i < argc && n < sizeof(o->command); i++)
    n += (size_t)snprintf(o->command + n, sizeof(o->command) - n, " %s", argv[i]);
  char why[512];
  struct tool_opts op;
  if (tool_opts_begin(&op, argc, argv, bench_opts)) return PARSE_BAD;
  enum parse_outcome out = PARSE_RUN;
  int id;
  const char *v;
  while (out == PARSE_RUN && (id = tool_opt_next(&op, &v, why, sizeof(why))) > 0)
    out = one_option(o, id, v, why, sizeof(why));
  if (out == PARSE_RUN && id == TOOL_OPT_END && tool_opts_no_operands(&op, why, sizeof(why)))
    id = TOOL_OPT_ERROR;
  tool_opts_end(&op);
  if (out == PARSE_RUN && id == TOOL_OPT_ERROR) out = PARSE_BAD;
  if (out == PARSE_BAD) fprintf(stderr, "nccl-net-bench: %s (-h lists the options)\n", why);
  if (out != PARSE_RUN) return out;
  if (check_sizes(o)) {
    fprintf(stderr, "nccl-net-bench: sizes must be multiples of 8 bytes, at most 1G\n");
    return PARSE_BAD;
  }
  if (!strcmp(o->transport, "ib")) o->has_baseline = false; /* softverbs speed means nothing */
  return PARSE_RUN;
}

static void host_facts(struct report *rep) {
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(rep->started, sizeof(rep->started), "%Y-%m-%d %H:%M:%S", &tm);
  rep->ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
  double l[1] = {0};
  if (getloadavg(l, 1) == 1) rep->load1 = l[0];
}

int main(int argc, char **argv) {
  static struct opts o;
  static struct report rep;
  enum parse_outcome pr = parse_args(&o, argc, argv);
  if (pr == PARSE_VERSION) {
    printf("nccl-net-bench %s\n", DIAG_VERSION);
    return 0;
  }
  if (pr != PARSE_RUN) {
    fputs(usage_text, pr == PARSE_HELP ? stdout : stderr);
    return pr == PARSE_HELP ? 0 : 2;
  }
  rep.o = &o;
  host_facts(&rep);
  char why[512];
  if (json_dest_open(&o.json, why, sizeof(why))) { /* now, not after the whole run */
    fprintf(stderr, "nccl-net-bench: %s\n", why);
    return 2;
  }
  int saved = -1;
  if (o.json.f == stdout) { /* stdout is the JSON: the table goes to stderr */
    fflush(stdout);
    saved = dup(1);
    dup2(2, 1);
  }
  int rc = bench_run(&rep);
  if (rc == 77) return rc;
  report_shape(stdout, &rep);
  report_targets(stdout, &rep);
  fflush(stdout);
  if (saved >= 0) dup2(saved, 1);
  if (o.json.f) report_json(&rep, o.json.f);
  if (json_dest_close(&o.json, why, sizeof(why))) {
    fprintf(stderr, "nccl-net-bench: %s\n", why);
    rc = 1;
  }
  int err;
  if (o.svg && (err = plot_svg(&rep, o.svg))) {
    fprintf(stderr, "nccl-net-bench: cannot write %s: %s\n", o.svg, strerror(err));
    rc = 1;
  }
  return rc;
}
