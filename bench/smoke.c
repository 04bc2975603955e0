/* SPDX-License-Identifier: Apache-2.0 */
/* Smoke test of nccl-net-bench (TAP): a short run per placement whose
 * output must be well formed (the table, JSON that parses, an SVG) and
 * whose data must verify; a run with one damaged byte must fail loudly;
 * the RDMA functional check must skip cleanly where there is no RDMA
 * device; --compare drives NCCL's own Socket transport beside ours where
 * one can be built; several comm counts report what their connections
 * cost. Speed is not judged here. argv[1] is the bench executable. */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

static const char *bench, *dir;

/* Runs the bench with args, stdout+stderr into `log`; returns its exit
 * status and, through *pid, the process id (namespace names carry it). */
static int run(const char *const *args, const char *log, pid_t *pidp) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, 1), dup2(fd, 2);
    const char *argv[40] = {bench};
    for (int i = 0; args[i] && i < 38; i++) argv[i + 1] = args[i];
    execv(bench, (char *const *)argv);
    _exit(127);
  }
  if (pidp) *pidp = pid;
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "re");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
  if (b) b[n] = 0;
  fclose(f);
  return b;
}

/* --- a strict little JSON reader: 1 = the text is one valid value --- */
static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
  return p;
}

static const char *value(const char *p, int depth);

static const char *string(const char *p) {
  if (*p++ != '"') return NULL;
  for (; *p != '"'; p++) {
    if ((unsigned char)*p < 0x20) return NULL;
    if (*p == '\\') {
      p++;
      if (*p == 'u') {
        for (int i = 1; i <= 4; i++)
          if (!isxdigit((unsigned char)p[i])) return NULL;
        p += 4;
      } else if (!strchr("\"\\/bfnrt", *p) || !*p) {
        return NULL;
      }
    }
  }
  return p + 1;
}

static const char *number(const char *p) {
  const char *s = p;
  if (*p == '-') p++;
  if (!isdigit((unsigned char)*p)) return NULL;
  while (isdigit((unsigned char)*p)) p++;
  if (*p == '.') {
    if (!isdigit((unsigned char)*++p)) return NULL;
    while (isdigit((unsigned char)*p)) p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!isdigit((unsigned char)*p)) return NULL;
    while (isdigit((unsigned char)*p)) p++;
  }
  return p > s ? p : NULL;
}

static const char *members(const char *p, int depth, int obj) {
  char close = obj ? '}' : ']';
  p = ws(p + 1);
  if (*p == close) return p + 1;
  for (;;) {
    if (obj) {
      if (!(p = string(ws(p))) || *(p = ws(p)) != ':') return NULL;
      p++;
    }
    if (!(p = value(p, depth + 1))) return NULL;
    p = ws(p);
    if (*p == close) return p + 1;
    if (*p++ != ',') return NULL;
  }
}

static const char *value(const char *p, int depth) {
  p = ws(p);
  if (depth > 64) return NULL;
  if (*p == '{' || *p == '[') return members(p, depth, *p == '{');
  if (*p == '"') return string(p);
  if (!strncmp(p, "true", 4)) return p + 4;
  if (!strncmp(p, "false", 5)) return p + 5;
  if (!strncmp(p, "null", 4)) return p + 4;
  return number(p);
}

static int json_valid(const char *text) {
  const char *end = text ? value(text, 0) : NULL;
  return end && !*ws(end);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; p && (p = strstr(p, needle)); p++) n++;
  return n;
}

/* Distinct stroke colours of the SVG's lines (at most 16). */
static int colours(const char *svg) {
  char seen[16][8];
  int n = 0;
  for (const char *p = svg; p && (p = strstr(p, "<polyline fill='none' stroke='")); p++) {
    const char *c = p + strlen("<polyline fill='none' stroke='");
    int k = 0;
    while (k < n && strncmp(seen[k], c, 7)) k++;
    if (k == n && n < 16) memcpy(seen[n++], c, 7);
  }
  return n;
}

/* The table, the JSON and the SVG of one finished run. */
static void check_outputs(const char *log, const char *json, const char *svg, int blocks) {
  char *t = slurp(log), *j = slurp(json), *s = slurp(svg);
  CHECK(t && count(t, "# uni: ") == 1, "the table has a uni block");
  CHECK(t && count(t, "# bidir: ") == (blocks > 1), "bidir block present as asked");
  CHECK(t && count(t, "# lat: ") == (blocks > 2), "lat block present as asked");
  CHECK(t && !strstr(t, "BAD") && !strstr(t, "FAILED"), "no row failed verification");
  /* the targets are development goals: only --targets shows them */
  CHECK(t && !strstr(t, "# target: ") && !strstr(t, "MISSED"), "no target verdicts by default");
  CHECK(j && strstr(j, "\"targets\": []"), "the JSON's targets are empty by default");
  CHECK(json_valid(j), "%s parses as JSON", json);
  CHECK(j && strstr(j, "\"ok\": true"), "the JSON says the run was ok");
  int rows = j ? count(j, "\"mode\": ") : 0;
  CHECK(rows >= 2 && count(j, "\"verified\": true") == rows, "every one of %d rows verified", rows);
  CHECK(j && count(j, "\"baseline\": {") == rows, "every row has a baseline");
  CHECK(s && !strncmp(s, "<?xml", 5) && strstr(s, "<svg") && strstr(s, "</svg>") &&
          count(s, "<polyline") >= 2,
        "%s is an SVG with plugin and baseline lines", svg);
  if (t && tap_case_failed) printf("# --- bench output ---\n%s", t);
  free(t), free(j), free(s);
}

static void loopback(void) {
  char log[512], json[512], svg[512];
  snprintf(log, sizeof(log), "%s/lo.txt", dir);
  snprintf(json, sizeof(json), "%s/lo.json", dir);
  char jarg[600];
  snprintf(jarg, sizeof(jarg), "--json=%s", json);
  snprintf(svg, sizeof(svg), "%s/lo.svg", dir);
  const char *args[] = {
    "--sizes", "8,64K,1M",   "--lat-sizes", "8",           "--reps", "1",  "--target-bytes",
    "16M",     "--max-msgs", "2000",        "--lat-iters", "200",    jarg, "--svg",
    svg,       NULL};
  int rc = run(args, log, NULL);
  CHECK(rc == 0, "exit status %d", rc);
  check_outputs(log, json, svg, 3);
  char *s = slurp(svg);
  /* uni, bidir and lat, plugin and baseline each; each mode its colour */
  CHECK(s && count(s, "<polyline") == 6, "%s: %d lines, 6 expected", svg, count(s, "<polyline"));
  CHECK(s && colours(s) == 3, "%s: %d colours for uni, bidir and lat, 3 expected", svg,
        s ? colours(s) : 0);
  CHECK(s && strstr(s, "ping-pong p50 us"), "%s has the latency panel", svg);
  free(s);
}

static void corrupted(void) {
  char log[512];
  snprintf(log, sizeof(log), "%s/corrupt.txt", dir);
  const char *args[] = {"--modes",        "uni", "--sizes",   "64K", "--reps", "1",
                        "--target-bytes", "4M",  "--corrupt", NULL};
  int rc = run(args, log, NULL);
  char *t = slurp(log);
  CHECK(rc == 1, "exit status %d, 1 expected", rc);
  CHECK(t && strstr(t, "DATA MISMATCH"), "the damaged byte is reported");
  free(t);
}

/* Each table an older or newer NCCL binds moves verified data: v6 (NCCL
 * 2.13-2.18), v7 (2.19), v12 (2.30). A table the bench cannot drive is a
 * usage error. */
static void abi_tables(void) {
  static const char *const abis[] = {"6", "7", "12"};
  for (int i = 0; i < 3; i++) {
    char log[512], json[512], want[64], want_json[64], name[96];
    snprintf(log, sizeof(log), "%s/abi%s.txt", dir, abis[i]);
    snprintf(json, sizeof(json), "%s/abi%s.json", dir, abis[i]);
    char jarg[600];
    snprintf(jarg, sizeof(jarg), "--json=%s", json);
    snprintf(want, sizeof(want), "ABI v%s \"diag\"", abis[i]);
    snprintf(want_json, sizeof(want_json), "ABI v%s \\\"diag\\\"", abis[i]); /* escaped */
    snprintf(name, sizeof(name), "--abi %s: the plugin through ncclNetPlugin_v%s, data verified",
             abis[i], abis[i]);
    const char *args[] = {
      "--abi", abis[i],          "--modes", "uni",           "--sizes",    "8,64K,1M", "--reps",
      "1",     "--target-bytes", "8M",      "--no-baseline", "--max-msgs", "500",      jarg,
      NULL};
    tap_begin();
    int rc = run(args, log, NULL);
    char *t = slurp(log), *j = slurp(json);
    int rows = j ? count(j, "\"mode\": ") : 0;
    CHECK(rc == 0, "exit status %d", rc);
    CHECK(t && strstr(t, want), "the table does not say %s", want);
    CHECK(json_valid(j) && j && strstr(j, want_json), "%s parses and names %s", json, want);
    CHECK(rows == 3 && count(j, "\"verified\": true") == rows, "%d of 3 rows verified",
          j ? count(j, "\"verified\": true") : 0);
    if (t && tap_case_failed) printf("# --- bench output ---\n%s", t);
    free(t), free(j);
    tap_end(name);
  }
  tap_begin();
  char log[512];
  snprintf(log, sizeof(log), "%s/abi4.txt", dir);
  const char *bad[] = {"--abi", "4", NULL}, *bad13[] = {"--abi", "13", NULL};
  int rc4 = run(bad, log, NULL), rc13 = run(bad13, log, NULL);
  CHECK(rc4 == 2 && rc13 == 2, "--abi 4: status %d, --abi 13: status %d; 2 (usage) expected", rc4,
        rc13);
  tap_end("--abi outside 5..12 is a usage error");
}

static void netns(void) {
  if (geteuid() != 0) {
    tap_skip("netns placement: two namespace hosts", "needs root");
    return;
  }
  char log[512], json[512], svg[512], ns[128];
  snprintf(log, sizeof(log), "%s/ns.txt", dir);
  snprintf(json, sizeof(json), "%s/ns.json", dir);
  char jarg[600];
  snprintf(jarg, sizeof(jarg), "--json=%s", json);
  snprintf(svg, sizeof(svg), "%s/ns.svg", dir);
  const char *args[] = {
    "--placement",    "netns", "--modes",    "uni",  "--sizes", "8,1M",  "--reps", "1",
    "--target-bytes", "16M",   "--max-msgs", "2000", jarg,      "--svg", svg,      NULL};
  pid_t pid;
  int rc = run(args, log, &pid);
  if (rc == 77) {
    char *t = slurp(log);
    tap_diag("%s", t ? t : "");
    free(t);
    tap_skip("netns placement: two namespace hosts", "the bench cannot make namespaces here");
    return;
  }
  tap_begin();
  CHECK(rc == 0, "exit status %d", rc);
  check_outputs(log, json, svg, 1);
  snprintf(ns, sizeof(ns), "/var/run/netns/nbench-%d-a", (int)pid);
  CHECK(access(ns, F_OK) != 0, "namespace %s was removed", ns);
  tap_end("netns placement: two namespace hosts");
}

/* The compared plugin: NCCL_DIAG_COMPARE_PLUGIN (a .so), or built by
 * the build script of the peers folder that NCCL_DIAG_COMPARE_PEERS (or the build's
 * compare_peers option) names. NULL with why when there is none. */
static const char *compare_plugin(char *why, size_t cap) {
  static char path[600];
  const char *so = getenv("NCCL_DIAG_COMPARE_PLUGIN");
  if (so && *so)
    return access(so, R_OK) ? (snprintf(why, cap, "%s is not readable", so), NULL) : so;
  const char *peers = getenv("NCCL_DIAG_COMPARE_PEERS");
  if (!peers || !*peers) peers = getenv("SMOKE_COMPARE_PEERS");
  if (!peers || !*peers) {
    snprintf(why, cap,
             "no peer plugin: set NCCL_DIAG_COMPARE_PLUGIN=PATH or "
             "NCCL_DIAG_COMPARE_PEERS=DIR, or configure with -Dcompare_peers=DIR");
    return NULL;
  }
  char cmd[1400], log[512];
  snprintf(log, sizeof(log), "%s/peers.txt", dir);
  snprintf(cmd, sizeof(cmd), "sh '%s/build.sh' '%s/peers' >'%s' 2>&1", peers, dir, log);
  int st = system(cmd);
  int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  char *t = slurp(log);
  if (rc) {
    snprintf(why, cap, "%s/build.sh %s: %s", peers, rc == 77 ? "skips" : "failed",
             t ? strtok(t, "\n") : "no output");
    free(t);
    return NULL;
  }
  free(t);
  snprintf(path, sizeof(path), "%s/peers/libnccl-net-ncclsock.so", dir);
  return path;
}

/* --compare: NCCL's Socket transport measured beside ours, every row
 * verified, its column, JSON rows, plot line and target verdicts there. */
static void compare(void) {
  char why[600];
  const char *so = compare_plugin(why, sizeof(why));
  if (!so) {
    tap_skip("--compare: a second plugin in the same run", why);
    return;
  }
  char log[512], json[512], svg[512];
  snprintf(log, sizeof(log), "%s/cmp.txt", dir);
  snprintf(json, sizeof(json), "%s/cmp.json", dir);
  char jarg[600];
  snprintf(jarg, sizeof(jarg), "--json=%s", json);
  snprintf(svg, sizeof(svg), "%s/cmp.svg", dir);
  const char *args[] = {
    "--compare",   so,       "--modes", "uni,lat",        "--sizes", "8,64K",      "--lat-sizes",
    "8",           "--reps", "1",       "--target-bytes", "8M",      "--max-msgs", "1000",
    "--lat-iters", "100",    jarg,      "--svg",          svg,       "--targets",  NULL};
  tap_begin();
  int rc = run(args, log, NULL);
  char *t = slurp(log), *j = slurp(json), *s = slurp(svg);
  int rows = j ? count(j, "\"mode\": ") : 0;
  CHECK(rc == 0, "exit status %d", rc);
  CHECK(t && strstr(t, "# compare: ") && strstr(t, "plugin/compare"), "the table has the compare "
                                                                      "column and its ratio");
  CHECK(t && strstr(t, "GB/s >= 1.0x compare at every size") &&
          strstr(t, "8-byte p50 <= 1.0x "
                    "compare"),
        "the footer judges the compare targets");
  /* Each row's variants carry their names; "compare" also keys the
   * connection-cost block, which is not a row. */
  CHECK(json_valid(j) && rows == 3 && count(j, "\"name\": \"compare\"") == rows &&
          count(j, "\"verified\": true") == rows,
        "%s: every one of %d rows has the compared plugin and verified", json, rows);
  CHECK(s && count(s, "<polyline") == 6, "%s has plugin, compare and baseline lines, GB/s and p50",
        svg);
  if (t && tap_case_failed) printf("# --- bench output ---\n%s", t);
  free(t), free(j), free(s);
  tap_end("--compare: a second plugin in the same run");
}

/* --nccl-shape: NCCL's grid (here cut to 2 sizes and 2 channel counts by
 * the options after it), its table and JSON, with the compared plugin's
 * column when there is one. */
static void nccl_shape(void) {
  char why[600], log[512], json[512], jarg[600];
  const char *so = compare_plugin(why, sizeof(why));
  snprintf(log, sizeof(log), "%s/shape.txt", dir);
  snprintf(json, sizeof(json), "%s/shape.json", dir);
  snprintf(jarg, sizeof(jarg), "--json=%s", json);
  const char *args[] = {"--nccl-shape",
                        "--comms",
                        "2,4",
                        "--sizes",
                        "128K,512K",
                        "--reps",
                        "1",
                        "--max-msgs",
                        "64",
                        "--target-bytes",
                        "8M",
                        jarg,
                        so ? "--compare" : NULL,
                        so,
                        NULL};
  tap_begin();
  if (!so) tap_diag("no compared plugin (%s): ours only", why);
  int rc = run(args, log, NULL);
  char *t = slurp(log), *j = slurp(json);
  CHECK(rc == 0, "exit status %d", rc);
  CHECK(t && strstr(t, "# NCCL's shape: one connection per channel, 8 in flight"),
        "the table says what it plays");
  CHECK(t && count(t, "  one-way ") == 4 && count(t, "  both-ways ") == 4,
        "2 sizes x 2 channel counts each way: %d one-way, %d both-ways lines",
        t ? count(t, "  one-way ") : 0, t ? count(t, "  both-ways ") : 0);
  CHECK(t && strstr(t, "# baseline: none") && !strstr(t, "# target: "),
        "no baseline and no targets unless asked");
  CHECK(json_valid(j) && count(j, "\"direction\": ") == 8 && count(j, "\"channels\": 4") == 4,
        "%s: 8 nccl_shape cells", json);
  /* Only the shape's cells: the rows before them carry their own. */
  const char *from = j ? strstr(j, "\"nccl_shape\"") : NULL;
  const char *to = from ? strstr(from, "\n  ]") : NULL;
  char *cells = to ? strndup(from, (size_t)(to - from)) : NULL;
  CHECK(cells && count(cells, "\"compare_gbps\": null") == (so ? 0 : 8),
        "every cell has the compared plugin's GB/s when there is one, and null without");
  free(cells);
  if (t && tap_case_failed) printf("# --- bench output ---\n%s", t);
  free(t), free(j);
  tap_end("--nccl-shape: size x channels x direction, ours beside the compared plugin");
}

/* Several comm counts: each connected on its own, with its cost. */
static void comm_counts(void) {
  char log[512], json[512];
  snprintf(log, sizeof(log), "%s/comms.txt", dir);
  snprintf(json, sizeof(json), "%s/comms.json", dir);
  char jarg[600];
  snprintf(jarg, sizeof(jarg), "--json=%s", json);
  const char *args[] = {"--modes", "uni,bidir", "--sizes",        "4K", "--comms",    "1,24",
                        "--reps",  "1",         "--target-bytes", "4M", "--max-msgs", "200",
                        jarg,      NULL};
  int rc = run(args, log, NULL);
  char *t = slurp(log), *j = slurp(json);
  CHECK(rc == 0, "exit status %d", rc);
  CHECK(t && strstr(t, "# 24 comms each way per rank: ") && strstr(t, "per comm"),
        "the table says what 24 comms cost");
  CHECK(j && count(j, "\"name\": \"epoll\"") >= 2, "with 24 comms the epoll baseline runs");
  CHECK(json_valid(j) && count(j, "\"rss_kb\": ") >= 4 && count(j, "\"verified\": true") == 4,
        "%s: connection costs and 4 verified rows", json);
  if (t && tap_case_failed) printf("# --- bench output ---\n%s", t);
  free(t), free(j);
}

/* --rank-env sets a variable in one rank only: an interface that rank 1
 * lacks fails rank 1, named as such, and the header says who set what. */
static void rank_env(void) {
  char log[512];
  snprintf(log, sizeof(log), "%s/rank-env.txt", dir);
  const char *args[] = {"--modes",
                        "lat",
                        "--lat-sizes",
                        "8",
                        "--lat-iters",
                        "100",
                        "--reps",
                        "1",
                        "--no-baseline",
                        "--rank-env",
                        "1:NCCL_SOCKET_IFNAME==nosuch0",
                        NULL};
  int rc = run(args, log, NULL);
  char *t = slurp(log);
  CHECK(rc == 1, "exit status %d, 1 expected (rank 1 has no such interface)", rc);
  CHECK(t && strstr(t, "rank 1: the plugin offers no device") && !strstr(t, "rank 0: "),
        "rank 1, and only rank 1, fails");
  if (t && tap_case_failed) printf("# --- bench output ---\n%s", t);
  free(t);
  args[10] = "0:NCCL_DIAG_SPIN_US=10"; /* a harmless one: the run completes */
  rc = run(args, log, NULL);
  t = slurp(log);
  CHECK(rc == 0, "exit status %d with a harmless per-rank setting", rc);
  CHECK(t && strstr(t, "# set by --rank-env in rank 0 only: NCCL_DIAG_SPIN_US=10"),
        "the header names the per-rank setting");
  CHECK(t && strstr(t, "# set by the bench: NCCL_SOCKET_IFNAME==lo"),
        "the header says what the bench set itself");
  if (t && tap_case_failed) printf("# --- bench output ---\n%s", t);
  free(t);
}

static void rdma_skip(void) {
  char log[512];
  snprintf(log, sizeof(log), "%s/ib.txt", dir);
  const char *args[] = {"--transport", "ib",     "--modes", "uni", "--sizes",
                        "64K",         "--reps", "1",       NULL};
  if (getenv("NCCL_DIAG_IBVERBS_LIB")) {
    tap_skip("rdma functional check skips without a device", "NCCL_DIAG_IBVERBS_LIB is set");
    return;
  }
  int rc = run(args, log, NULL);
  char *t = slurp(log);
  CHECK(rc == 77 && t && strstr(t, "SKIP"), "exit status %d, 77 and a reason expected", rc);
  free(t);
}

/* The RDMA check over softverbs, where the build has it: the plugin's
 * verbs path on one host, data verified, no baseline. */
static void rdma_softverbs(void) {
  const char *lib = getenv("SMOKE_SOFTVERBS"), *sysfs = getenv("SMOKE_FIXTURE");
  if (!lib || !sysfs || access(lib, R_OK) || access(sysfs, R_OK)) {
    tap_skip("rdma functional check over softverbs", "softverbs is not built here");
    return;
  }
  char log[512], json[512], svg[512];
  snprintf(log, sizeof(log), "%s/sv.txt", dir);
  snprintf(json, sizeof(json), "%s/sv.json", dir);
  char jarg[600];
  snprintf(jarg, sizeof(jarg), "--json=%s", json);
  snprintf(svg, sizeof(svg), "%s/sv.svg", dir);
  setenv("NCCL_DIAG_SYSFS_ROOT", sysfs, 1);
  setenv("NCCL_DIAG_IFADDRS", "live", 1); /* control connections over lo */
  setenv("SOFTVERBS_WIRE", "loopback", 1);
  const char *args[] = {"--transport",
                        "ib",
                        "--verbs-lib",
                        lib,
                        "--sizes",
                        "8,64K,1M",
                        "--lat-sizes",
                        "8",
                        "--reps",
                        "1",
                        "--target-bytes",
                        "16M",
                        "--max-msgs",
                        "2000",
                        "--lat-iters",
                        "200",
                        jarg,
                        "--svg",
                        svg,
                        NULL};
  tap_begin();
  int rc = run(args, log, NULL);
  unsetenv("NCCL_DIAG_SYSFS_ROOT");
  unsetenv("NCCL_DIAG_IFADDRS");
  unsetenv("SOFTVERBS_WIRE");
  char *t = slurp(log), *j = slurp(json);
  int rows = j ? count(j, "\"mode\": ") : 0;
  CHECK(rc == 0, "exit status %d", rc);
  CHECK(t && strstr(t, "transport ib"), "the table says transport ib");
  CHECK(json_valid(j), "%s parses as JSON", json);
  CHECK(rows == 7 && count(j, "\"verified\": true") == rows, "all %d rows verified", rows);
  if (t && tap_case_failed) printf("# --- bench output ---\n%s", t);
  free(t), free(j);
  tap_end("rdma functional check over softverbs");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench-smoke PATH-TO-nccl-net-bench\n");
    return 2;
  }
  bench = argv[1];
  char tmpl[] = "/tmp/nccl-net-bench-smoke.XXXXXX";
  dir = mkdtemp(tmpl);
  if (!dir) return 2;
  TAP_CASE("loopback: table, JSON, SVG, data verified", loopback);
  TAP_CASE("a damaged byte fails the run", corrupted);
  compare();
  nccl_shape();
  TAP_CASE("several comm counts, each with what its connections cost", comm_counts);
  abi_tables();
  netns();
  TAP_CASE("--rank-env reaches one rank only", rank_env);
  TAP_CASE("rdma functional check skips without a device", rdma_skip);
  rdma_softverbs();
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd)) tap_diag("could not remove %s", dir);
  return tap_done();
}
