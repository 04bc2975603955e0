/* SPDX-License-Identifier: Apache-2.0 */
/* nccl_e2e: the options of `nccl_e2e run` and the usage text. */
#include "e2e.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

const char *const default_sizes = "0,1,3,4,8,100,1K,4099,64K,131073,1M,1048579,4M,16M,64M,256M";
const char *const all_checks = "allreduce,allreduce_inplace,allgather,reducescatter,"
                               "broadcast,sendrecv";

/* Bytes with an optional K/M/G suffix (powers of 1024), then "B" or "iB". */
static size_t parse_size(const char *s, int *ok) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) {
    *ok = 0;
    return 0;
  }
  switch (*end) {
  case 'K':
  case 'k':
    v <<= 10;
    end++;
    break;
  case 'M':
  case 'm':
    v <<= 20;
    end++;
    break;
  case 'G':
  case 'g':
    v <<= 30;
    end++;
    break;
  default: break;
  }
  if (*end && strcmp(end, "B") && strcmp(end, "iB")) *ok = 0;
  return (size_t)v;
}

static int parse_sizes(const char *list, struct opts *o) {
  char buf[1024];
  snprintf(buf, sizeof(buf), "%s", list);
  o->nsizes = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int ok = 1;
    size_t v = parse_size(t, &ok);
    if (!ok || o->nsizes == MAX_SIZES) {
      fprintf(stderr, "nccl_e2e: bad size '%s' (or more than %d sizes)\n", t, MAX_SIZES);
      return -1;
    }
    o->sizes[o->nsizes++] = v;
  }
  return 0;
}

void usage(FILE *f) {
  fprintf(f,
          "usage: nccl_e2e probe\n"
          "       nccl_e2e dlopen PLUGIN.so\n"
          "       nccl_e2e run --rank R --id-file FILE [options]\n"
          "  --nranks N        ranks in the communicator (default 2)\n"
          "  --device D        CUDA device (default 0; the ranks share it)\n"
          "  --hostid ID       set NCCL_HOSTID before any NCCL call\n"
          "  --checks LIST     collectives to check: %s, all or none (default all)\n"
          "  --sizes LIST      sizes in bytes, K/M/G suffixes (default %s)\n"
          "  --bw MIN:MAX      time all_reduce from MIN to MAX bytes, doubling (e.g. 1M:1G)\n"
          "  --bw-budget B     bytes to move per timed size (default 4G), within\n"
          "  --bw-iters A:B    at least A and at most B iterations (default 5:100)\n"
          "  --warmup N        untimed iterations per size (default 2)\n"
          "  --label NAME      tag for the BW lines (e.g. the network's name)\n"
          "  --timeout S       seconds one operation may take before it counts as hung (120)\n"
          "exit status: 0 all passed, 1 a check failed, 2 usage, 3 no GPU, 4 setup failed,\n"
          "5 hung (the watchdog ended it)\n",
          all_checks, default_sizes);
}

/* --bw MIN:MAX (MIN > 0, MAX >= MIN). Returns -1 without a colon. */
static int parse_bw_range(char *arg, struct opts *o, int *ok) {
  char *colon = strchr(arg, ':');
  if (!colon) return -1;
  *colon = 0;
  o->bw_min = parse_size(arg, ok);
  o->bw_max = parse_size(colon + 1, ok);
  if (!o->bw_min || o->bw_max < o->bw_min) *ok = 0;
  return 0;
}

static int parse_bw_iters(const char *arg, struct opts *o) {
  return sscanf(arg, "%d:%d", &o->bw_min_iters, &o->bw_max_iters) == 2 && o->bw_min_iters >= 1 &&
         o->bw_max_iters >= o->bw_min_iters;
}

int parse_run(int argc, char **argv, struct opts *o) {
  static const struct option lo[] = {{"rank", required_argument, 0, 'r'},
                                     {"nranks", required_argument, 0, 'n'},
                                     {"device", required_argument, 0, 'd'},
                                     {"id-file", required_argument, 0, 'i'},
                                     {"hostid", required_argument, 0, 'H'},
                                     {"checks", required_argument, 0, 'c'},
                                     {"sizes", required_argument, 0, 's'},
                                     {"bw", required_argument, 0, 'b'},
                                     {"bw-budget", required_argument, 0, 'B'},
                                     {"bw-iters", required_argument, 0, 'I'},
                                     {"warmup", required_argument, 0, 'w'},
                                     {"label", required_argument, 0, 'l'},
                                     {"timeout", required_argument, 0, 't'},
                                     {"help", no_argument, 0, 'h'},
                                     {0, 0, 0, 0}};
  *o = (struct opts){.rank = -1,
                     .nranks = 2,
                     .checks = "all",
                     .bw_budget = (size_t)4 << 30,
                     .bw_min_iters = 5,
                     .bw_max_iters = 100,
                     .warmup = 2,
                     .timeout_s = 120};
  if (parse_sizes(default_sizes, o)) return -1;
  int c, ok = 1;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (c) {
    case 'r': o->rank = atoi(optarg); break;
    case 'n': o->nranks = atoi(optarg); break;
    case 'd': o->device = atoi(optarg); break;
    case 'i': o->id_file = optarg; break;
    case 'H': o->hostid = optarg; break;
    case 'c': o->checks = optarg; break;
    case 's':
      if (parse_sizes(optarg, o)) return -1;
      break;
    case 'b':
      if (parse_bw_range(optarg, o, &ok)) return -1;
      break;
    case 'B': o->bw_budget = parse_size(optarg, &ok); break;
    case 'I':
      if (!parse_bw_iters(optarg, o)) ok = 0;
      break;
    case 'w': o->warmup = atoi(optarg); break;
    case 'l': o->label = optarg; break;
    case 't': o->timeout_s = atoi(optarg); break;
    case 'h': usage(stdout); exit(0);
    default: return -1;
    }
  }
  if (!ok || optind != argc || o->rank < 0 || o->nranks < 1 || o->rank >= o->nranks ||
      !o->id_file || o->timeout_s < 1 || o->warmup < 0)
    return -1;
  return 0;
}
