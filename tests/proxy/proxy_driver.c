/* SPDX-License-Identifier: Apache-2.0 */
/* proxy_driver: two ranks (forked processes, optionally each in its own
 * network namespace) drive the plugin as NCCL's proxy thread does; see
 * proxy.h. TAP out: per rank, one case each for connection setup, the
 * data (every byte checked) and the close.
 *
 *   proxy_driver [--abi 5..12] [--channels N] [--steps N] [--group N]
 *     [--depth N] [--max-size BYTES] [--seed N] [--late-accept MS]
 *     [--close-lag MS] [--slow-last MS] [--flush] [--listen-per-channel]
 *     [--in-step] [--rounds N] [--timeout S] [--transport tcp|ib]
 *     [--netns RANK0_NS,RANK1_NS]
 *     [--env K=V] [--env-recv K=V] [--env-send K=V] [--label TEXT]
 *
 * --env-recv applies to rank 0 and --env-send to rank 1, so the api
 * suite's namespace scripts (tests/api/netns.sh, netns_ib.sh) run it too. */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proxy.h"
#include "tap.h"

static int usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [--abi 5..12] [--channels N] [--steps N] [--group N] [--depth N]\n"
          "       [--max-size BYTES] [--seed N] [--late-accept MS] [--close-lag MS]\n"
          "       [--slow-last MS] [--flush]\n"
          "       [--listen-per-channel] [--in-step] [--rounds N] [--timeout S]\n"
          "       [--transport tcp|ib]\n"
          "       [--netns RANK0,RANK1] [--env K=V] [--env-recv K=V] [--env-send K=V]\n"
          "       [--label TEXT]\n",
          argv0);
  return 2;
}

static void add_env(struct proxy_opts *o, int rank, const char *kv) {
  if (o->nenv[rank] < PROXY_MAX_ENV) o->envs[rank][o->nenv[rank]++] = kv;
}

static int int_opt(const char *name, const char *v, int lo, int hi, int *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*end || x < lo || x > hi) {
    fprintf(stderr, "%s %s: expected a number from %d to %d\n", name, v, lo, hi);
    return -1;
  }
  *out = (int)x;
  return 0;
}

static int parse(struct proxy_opts *o, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0, x;
    if (!strcmp(a, "--flush")) o->flush = 1;
    else if (!strcmp(a, "--listen-per-channel")) o->listen_per_channel = 1;
    else if (!strcmp(a, "--in-step")) o->in_step = 1;
    else if (!v) return -1;
    else if (++i, !strcmp(a, "--abi"))
      bad = int_opt(a, v, NETLOAD_ABI_MIN, NETLOAD_ABI_MAX, &o->abi);
    else if (!strcmp(a, "--channels")) bad = int_opt(a, v, 1, 256, &o->channels);
    else if (!strcmp(a, "--steps")) bad = int_opt(a, v, 1, 1000000, &o->steps);
    else if (!strcmp(a, "--group")) bad = int_opt(a, v, 1, PROXY_MAX_GROUP, &o->group);
    else if (!strcmp(a, "--depth")) bad = int_opt(a, v, 1, PROXY_STEPS, &o->depth);
    else if (!strcmp(a, "--late-accept")) bad = int_opt(a, v, 0, 600000, &o->late_accept_ms);
    else if (!strcmp(a, "--slow-last")) bad = int_opt(a, v, 0, 600000, &o->slow_last_ms);
    else if (!strcmp(a, "--close-lag")) bad = int_opt(a, v, 0, 600000, &o->close_lag_ms);
    else if (!strcmp(a, "--rounds")) bad = int_opt(a, v, 1, 10000, &o->rounds);
    else if (!strcmp(a, "--timeout")) bad = int_opt(a, v, 1, 3600, &o->timeout_s);
    else if (!strcmp(a, "--max-size"))
      bad = int_opt(a, v, 0, 64 << 20, &x), o->max_size = (size_t)x;
    else if (!strcmp(a, "--seed")) o->seed = strtoull(v, NULL, 0);
    else if (!strcmp(a, "--transport")) o->transport_ib = !strcmp(v, "ib");
    else if (!strcmp(a, "--label")) o->label = v;
    else if (!strcmp(a, "--env")) add_env(o, 0, v), add_env(o, 1, v);
    else if (!strcmp(a, "--env-recv")) add_env(o, 0, v);
    else if (!strcmp(a, "--env-send")) add_env(o, 1, v);
    else if (!strcmp(a, "--netns")) {
      static char buf[256];
      snprintf(buf, sizeof(buf), "%s", v);
      char *comma = strchr(buf, ',');
      if (!comma) return -1;
      *comma = 0;
      o->netns[0] = buf, o->netns[1] = comma + 1;
    } else return -1;
    if (bad) return -1;
  }
  return 0;
}

static int enter(const struct proxy_opts *o, int rank) {
  for (int i = 0; i < o->nenv[rank]; i++) {
    char kv[4096];
    snprintf(kv, sizeof(kv), "%s", o->envs[rank][i]);
    char *eq = strchr(kv, '=');
    if (eq) *eq = 0, setenv(kv, eq + 1, 1);
  }
  if (!o->netns[rank]) return 0;
  char path[300];
  snprintf(path, sizeof(path), "/var/run/netns/%s", o->netns[rank]);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET)) {
    printf("#   rank %d: cannot enter network namespace %s\n", rank, o->netns[rank]);
    return -1;
  }
  close(fd);
  return 0;
}

static pid_t spawn(const struct proxy_opts *o, int rank, int ctl, int other_ctl, int *report_rd) {
  int p[2];
  if (pipe(p)) return -1;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]), close(other_ctl);
    alarm((unsigned)o->timeout_s + 30);
    struct proxy_rank r = {.rank = rank, .peer = 1 - rank, .ctl = ctl, .o = o};
    int bad = enter(o, rank) ? 1 : proxy_rank_run(&r, p[1]);
    fflush(stdout);
    _exit(bad);
  }
  close(p[1]);
  *report_rd = p[0];
  return pid;
}

/* One TAP case per phase the rank reported; a phase it never reached (it
 * died) fails. */
static void tap_rank(const struct proxy_opts *o, int rank, int fd, int status) {
  static const char *phases[] = {"connect", "data", "close"};
  char buf[4096] = "", name[600];
  size_t len = 0;
  ssize_t n;
  while (len + 1 < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
    len += (size_t)n;
  buf[len] = 0;
  close(fd);
  for (int ph = 0; ph < 3; ph++) {
    char *line = buf, *found = NULL;
    size_t plen = strlen(phases[ph]);
    for (; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
      if (!strncmp(line, phases[ph], plen) && line[plen] == ' ') found = line;
    tap_begin();
    if (!found) {
      tap_case_failed = 1;
      snprintf(name, sizeof(name), "%s: rank %d %s: not reported (%s %d)", o->label, rank,
               phases[ph], WIFSIGNALED(status) ? "killed by signal" : "exit status",
               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    } else {
      char *end = strchr(found, '\n');
      if (end) *end = 0;
      tap_case_failed = found[plen + 1] != '1';
      snprintf(name, sizeof(name), "%s: rank %d %s: %s", o->label, rank, phases[ph],
               found + plen + 3);
      if (end) *end = '\n';
    }
    tap_end(name);
  }
}

int main(int argc, char **argv) {
  struct proxy_opts o = {.abi = 11,
                         .channels = 4,
                         .steps = 64,
                         .group = 1,
                         .timeout_s = 60,
                         .rounds = 1,
                         .max_size = 4 << 20,
                         .seed = 1,
                         .close_lag_ms = 5};
  if (parse(&o, argc, argv)) return usage(argv[0]);
  char label[200];
  if (!o.label) {
    snprintf(label, sizeof(label), "v%d %s%s %dx%d%s", o.abi, o.transport_ib ? "ib" : "tcp",
             o.netns[0] ? " netns" : "", o.channels, o.steps, o.group > 1 ? " grouped" : "");
    o.label = label;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  tap_diag(
    "%s: seed %llu, sizes 0 to %zu bytes, late accept %d ms, close lag %d ms, slow last test %d ms%s%s",
    o.label, (unsigned long long)o.seed, o.max_size, o.late_accept_ms, o.close_lag_ms,
    o.slow_last_ms, o.flush ? ", iflush" : "",
    o.listen_per_channel ? ", a listen comm per channel" : "");
  int sv[2], rd[2], st[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return 1;
  pid_t pids[2];
  pids[0] = spawn(&o, 0, sv[0], sv[1], &rd[0]);
  pids[1] = spawn(&o, 1, sv[1], sv[0], &rd[1]);
  close(sv[0]), close(sv[1]);
  for (int i = 0; i < 2; i++) waitpid(pids[i], &st[i], 0);
  for (int i = 0; i < 2; i++) tap_rank(&o, i, rd[i], st[i]);
  return tap_done();
}
