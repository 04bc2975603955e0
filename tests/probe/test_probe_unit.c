/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag probe's pure parts: the launchers' environments, Slurm's
 * node lists, the pair schedules and the rendezvous protocol. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tools/probe/launch.h"
#include "tools/probe/rdv_secret.h"
#include "tools/probe/rdv_wire.h"
#include "tools/probe/schedule.h"
#include "unit.h"

/* ------------------------------------------------------------ launchers */

struct fake_env {
  const char *const *kv; /* "NAME=value", NULL-terminated */
};

static const char *fake_get(const char *name, void *arg) {
  const struct fake_env *e = arg;
  size_t n = strlen(name);
  for (const char *const *p = e->kv; *p; p++)
    if (!strncmp(*p, name, n) && (*p)[n] == '=') return *p + n + 1;
  return NULL;
}

static int launch(const char *const *kv, const char *given, struct probe_launch *l, char *why) {
  struct fake_env e = {kv};
  return probe_launch_read(l, given, fake_get, &e, why, 512);
}

static void t_slurm(void) {
  static const char *const ok[][2] = {
    {"node[01-04,07],gpu-a1", "node01"}, {"gpu-a1", "gpu-a1"}, {"rack[1-2]-n[3,5]", "rack1-n3"},
    {"node[001-100]", "node001"},        {"a,b", "a"},         {"n[7]", "n7"},
    {"x[10-12,3],y[1-2]", "x10"},
  };
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    char out[64], why[128] = "";
    int r = slurm_first_node(ok[i][0], out, sizeof(out), why, sizeof(why));
    CHECK(r == 0 && !strcmp(out, ok[i][1]), "%s -> %s (%s), want %s", ok[i][0], r ? "error" : out,
          why, ok[i][1]);
  }
  static const char *const bad[] = {"node[01-", "node]", "",        "a,,b", "n[x]",
                                    "a,",       "n[1-]", "n[1,,2]", "a b",  "n[1[2]]"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char out[64], why[128] = "";
    int r = slurm_first_node(bad[i], out, sizeof(out), why, sizeof(why));
    CHECK(r == EINVAL && why[0], "'%s' must be refused with a reason (got %d, '%s')", bad[i], r,
          why);
  }
}

static void t_torchrun(void) {
  static const char *const env[] = {"RANK=3",
                                    "WORLD_SIZE=4",
                                    "LOCAL_RANK=1",
                                    "MASTER_ADDR=n0",
                                    "MASTER_PORT=29501",
                                    "SLURM_PROCID=9",
                                    "TORCHELASTIC_RUN_ID=abc",
                                    NULL};
  struct probe_launch l;
  char why[512] = "";
  CHECK(launch(env, NULL, &l, why) == 0, "%s", why);
  CHECK(l.rank == 3 && l.world == 4 && l.local_rank == 1, "%d %d %d", l.rank, l.world,
        l.local_rank);
  CHECK(!strcmp(l.launcher, "torchrun"), "torchrun's variables come first: %s", l.launcher);
  CHECK(!strcmp(l.host, "n0") && l.port == 29501, "%s:%d", l.host, l.port);
  CHECK(strstr(l.job, "abc") != NULL, "job %s", l.job);
  CHECK(launch(env, "[fd00::1]:4000", &l, why) == 0 && !strcmp(l.host, "fd00::1") && l.port == 4000,
        "--rendezvous overrides: %s:%d", l.host, l.port);
  CHECK(launch(env, "fd00::1:4000", &l, why) == EINVAL && strstr(why, "--rendezvous"),
        "an IPv6 address needs brackets: %s", why);
  static const char *const agent[] = {"RANK=0",
                                      "WORLD_SIZE=2",
                                      "MASTER_ADDR=n0",
                                      "MASTER_PORT=29500",
                                      "TORCHELASTIC_USE_AGENT_STORE=True",
                                      NULL};
  CHECK(launch(agent, NULL, &l, why) == 0 && l.port == 29501 && strstr(l.host_from, "torchrun"),
        "torchrun's agent holds MASTER_PORT: the probe takes the next, %d (%s)", l.port,
        l.host_from);
}

static void t_mpi(void) {
  static const char *const local[] = {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
                                      "OMPI_COMM_WORLD_LOCAL_RANK=1",
                                      "OMPI_COMM_WORLD_LOCAL_SIZE=2", NULL};
  struct probe_launch l;
  char why[512] = "";
  CHECK(launch(local, NULL, &l, why) == 0, "%s", why);
  CHECK(!strcmp(l.launcher, "Open MPI") && l.rank == 1 && l.world == 2 && l.local_rank == 1,
        "%s %d %d", l.launcher, l.rank, l.world);
  CHECK(!strcmp(l.host, "127.0.0.1") && l.port == PROBE_DEFAULT_PORT,
        "every rank on this node: rendezvous here, %s:%d", l.host, l.port);
  static const char *const spread[] = {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=8",
                                       "OMPI_COMM_WORLD_LOCAL_SIZE=2", NULL};
  CHECK(launch(spread, NULL, &l, why) == EINVAL && strstr(why, "MASTER_ADDR") &&
          strstr(why, "--rendezvous"),
        "several nodes and no MASTER_ADDR: %s", why);
  static const char *const pmi[] = {"PMI_RANK=0", "PMI_SIZE=3", "MASTER_ADDR=10.0.0.1",
                                    "MPI_LOCALRANKID=0", NULL};
  CHECK(launch(pmi, NULL, &l, why) == 0 && l.world == 3 && !strcmp(l.host, "10.0.0.1"), "%s", why);
}

static void t_slurm_env(void) {
  static const char *const env[] = {"SLURM_PROCID=5",    "SLURM_NTASKS=8",
                                    "SLURM_LOCALID=1",   "SLURM_STEP_NODELIST=gpu[07-10],cpu1",
                                    "SLURM_JOB_ID=123",  "SLURM_STEP_ID=0",
                                    "MASTER_PORT=30000", NULL};
  struct probe_launch l;
  char why[512] = "";
  CHECK(launch(env, NULL, &l, why) == 0, "%s", why);
  CHECK(!strcmp(l.host, "gpu07") && l.port == 30000 && l.rank == 5 && l.local_rank == 1,
        "%s:%d rank %d", l.host, l.port, l.rank);
  CHECK(strstr(l.host_from, "SLURM_STEP_NODELIST") && strstr(l.job, "123"), "%s / %s", l.host_from,
        l.job);
  static const char *const broken[] = {"SLURM_PROCID=0", "SLURM_NTASKS=2",
                                       "SLURM_STEP_NODELIST=gpu[07-", NULL};
  CHECK(launch(broken, NULL, &l, why) == EINVAL && strstr(why, "SLURM_STEP_NODELIST"), "%s", why);
}

static void t_missing(void) {
  static const char *const none[] = {"HOME=/", NULL};
  struct probe_launch l;
  char why[512] = "";
  CHECK(launch(none, NULL, &l, why) == EINVAL, "no launcher is a usage error");
  static const char *const names[] = {"RANK",     "WORLD_SIZE",   "OMPI_COMM_WORLD_RANK",
                                      "PMI_RANK", "SLURM_PROCID", "SLURM_NTASKS"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    CHECK(strstr(why, names[i]), "the message names %s: %s", names[i], why);
  static const char *const half[] = {"RANK=0", "MASTER_ADDR=x", NULL};
  CHECK(launch(half, NULL, &l, why) == EINVAL && strstr(why, "WORLD_SIZE=(unset)"), "%s", why);
  static const char *const alone[] = {"RANK=0", "WORLD_SIZE=1", NULL};
  CHECK(launch(alone, NULL, &l, why) == 0 && !strcmp(l.host, "127.0.0.1"),
        "a world of one needs no MASTER_ADDR: %s", why);
  static const char *const over[] = {"RANK=4", "WORLD_SIZE=4", "MASTER_ADDR=x", NULL};
  CHECK(launch(over, NULL, &l, why) == EINVAL, "rank 4 of 4");
  static const char *const port[] = {"RANK=0", "WORLD_SIZE=1", "MASTER_ADDR=x", "MASTER_PORT=http",
                                     NULL};
  CHECK(launch(port, NULL, &l, why) == EINVAL && strstr(why, "MASTER_PORT=http"), "%s", why);
}

/* ------------------------------------------------------------ schedules */

/* Every round disjoint; returns how often each pair occurs in seen[a*n+b]. */
/* The secret a rank with this environment (and --job-id) presents. */
static uint64_t secret_of(const char *const *kv, const char *job_id, int *strength, char *note) {
  struct probe_launch l;
  char why[512] = "";
  struct fake_env e = {kv};
  if (launch(kv, NULL, &l, why)) return 0;
  if (job_id) snprintf(l.job, sizeof(l.job), "%s", job_id);
  rdv_secret_derive(&l, job_id, fake_get, &e);
  *strength = l.secret_strength;
  rdv_secret_note(&l, note, 700);
  return l.secret;
}

static void t_secret(void) {
  static const char *const bare[] = {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=n0", NULL};
  static const char *const slurm[] = {"SLURM_PROCID=1",  "SLURM_NTASKS=2", "SLURM_JOB_ID=4242",
                                      "SLURM_STEP_ID=0", "MASTER_ADDR=n0", NULL};
  static const char *const slurm2[] = {"SLURM_PROCID=0",  "SLURM_NTASKS=2", "SLURM_JOB_ID=4243",
                                       "SLURM_STEP_ID=0", "MASTER_ADDR=n0", NULL};
  static const char *const mine[] = {"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=n0",
                                     "NCCL_DIAG_PROBE_SECRET=3f9a1c77e0b24d51a8c6", NULL};
  static const char *const mine0[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=n0",
                                      "NCCL_DIAG_PROBE_SECRET=3f9a1c77e0b24d51a8c6", NULL};
  static const char *const standalone[] = {
    "RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=n0",
    "TORCHELASTIC_RUN_ID=6d0c5e0e-7d1f-4b0e-9c61-2f5b8f0a9e13", NULL};
  int st;
  char note[700];
  uint64_t a = secret_of(bare, NULL, &st, note);
  CHECK(st == RDV_SECRET_NONE && strstr(note, "nothing") && strstr(note, "NCCL_DIAG_PROBE_SECRET"),
        "RANK and WORLD_SIZE alone: none, said with the fix: %s", note);
  uint64_t b = secret_of(slurm, NULL, &st, note);
  CHECK(st == RDV_SECRET_WEAK && strstr(note, "slurm:4242") && strstr(note, "squeue"),
        "a Slurm job id: weak, named: %s", note);
  CHECK(b != a && b != secret_of(slurm2, NULL, &st, note), "another job, another secret");
  uint64_t c = secret_of(mine, NULL, &st, note);
  CHECK(st == RDV_SECRET_STRONG && !note[0] && c != a, "NCCL_DIAG_PROBE_SECRET: strong, unsaid");
  CHECK(secret_of(mine0, NULL, &st, note) == c, "every rank derives the same secret");
  secret_of(standalone, NULL, &st, note);
  CHECK(st == RDV_SECRET_STRONG, "torchrun --standalone's random run id: strong");
  secret_of(bare, "short", &st, note);
  CHECK(st == RDV_SECRET_WEAK && strstr(note, "--job-id"), "a short --job-id: weak: %s", note);
  uint64_t d = secret_of(bare, "a-long-enough-job-id-0042", &st, note);
  CHECK(st == RDV_SECRET_STRONG && d != a, "a long --job-id: strong");
}

static void check_rounds(const struct sched *s, int n, int *seen) {
  char *busy = calloc((size_t)n, 1);
  for (int r = 0; r < s->nround; r++) {
    memset(busy, 0, (size_t)n);
    for (int i = s->round_start[r]; i < s->round_start[r + 1]; i++) {
      const struct sched_pair *p = &s->pairs[i];
      CHECK(p->a >= 0 && p->a < p->b && p->b < n, "pair %d-%d of %d hosts", p->a, p->b, n);
      if (!(p->a >= 0 && p->a < p->b && p->b < n)) continue;
      CHECK(!busy[p->a] && !busy[p->b], "round %d uses host %d or %d twice", r, p->a, p->b);
      busy[p->a] = busy[p->b] = 1;
      seen[p->a * n + p->b]++;
    }
  }
  free(busy);
}

static void t_sched_all(void) {
  for (int n = 1; n <= 17; n++) {
    struct sched s;
    int *seen = calloc((size_t)(n * n), sizeof(int));
    CHECK(sched_all(n, &s) == 0, "n=%d", n);
    check_rounds(&s, n, seen);
    CHECK(s.npair == n * (n - 1) / 2, "n=%d: %d pairs", n, s.npair);
    int want = n < 2 ? 0 : n % 2 ? n : n - 1;
    CHECK(s.nround == want, "n=%d: %d rounds, want %d", n, s.nround, want);
    for (int a = 0; a < n; a++)
      for (int b = a + 1; b < n; b++) CHECK(seen[a * n + b] == 1, "n=%d: %d-%d", n, a, b);
    sched_free(&s);
    free(seen);
  }
}

static void t_sched_ring_sample(void) {
  for (int n = 2; n <= 9; n++) {
    struct sched s;
    int *seen = calloc((size_t)(n * n), sizeof(int));
    CHECK(sched_ring(n, &s) == 0, "n=%d", n);
    check_rounds(&s, n, seen);
    CHECK(s.npair == (n == 2 ? 1 : n) && s.nround <= 3, "ring n=%d: %d pairs, %d rounds", n,
          s.npair, s.nround);
    for (int i = 0; i + 1 < n; i++)
      CHECK(seen[i * n + i + 1] == 1, "ring n=%d: %d-%d", n, i, i + 1);
    sched_free(&s);
    free(seen);
  }
  int n = 1000;
  struct sched s;
  int *seen = calloc((size_t)(n * n), sizeof(int));
  CHECK(sched_sample(n, 1000, 7, &s) == 0, "sample");
  check_rounds(&s, n, seen);
  CHECK(s.npair == 2000, "ring (1000) plus 1000 drawn: %d", s.npair);
  CHECK(s.nround <= 12, "a sparse set needs few rounds: %d", s.nround);
  int dup = 0;
  for (int i = 0; i < n * n; i++) dup += seen[i] > 1;
  CHECK(!dup, "%d pairs drawn twice", dup);
  sched_free(&s);
  free(seen);
  int small = 5;
  CHECK(sched_sample(small, 100, 1, &s) == 0 && s.npair == small * (small - 1) / 2,
        "a sample larger than the pairs left is every pair: %d", s.npair);
  sched_free(&s);
}

int main(void) {
  TAP_CASE("slurm node lists: first host, syntax errors named", t_slurm);
  TAP_CASE("torchrun's variables, --rendezvous", t_torchrun);
  TAP_CASE("Open MPI, MPICH/Intel MPI (PMI) variables", t_mpi);
  TAP_CASE("srun's variables: rendezvous on the first node", t_slurm_env);
  TAP_CASE("no launcher, half a launcher: usage errors naming the variables", t_missing);
  TAP_CASE("the rendezvous secret: same on every rank, per job, its strength said", t_secret);
  TAP_CASE("all pairs: round robin, N-1 rounds (N even), each pair once", t_sched_all);
  TAP_CASE("ring and ring plus sample: disjoint rounds, no pair twice", t_sched_ring_sample);
  wire_cases();
  printf("1..%d\n", tap_n);
  return tap_failed ? 1 : 0;
}
