/* SPDX-License-Identifier: Apache-2.0 */
/* What differs between the ABI tables: processes bound through different
 * tables (as two NCCL releases would bind the plugin) talking to each other,
 * sizes a table cannot carry, and the closing census of the tables that have
 * no finalize. */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cases.h"

static void close_comm(struct side *s, void *comm) {
  if (!comm) return;
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
}

/* One side of a job whose nodes run different NCCL releases: each process
 * binds the table its NCCL would and reports that NCCL's version. Both sides
 * must connect, move verified data, and each must name the other's NCCL. */
static void mixed_tables(struct side *s, int recv_abi, const char *recv_code, int send_abi,
                         const char *send_code) {
  int me_recv = s->role == ROLE_RECV;
  if (is_root()) private_uts(me_recv ? "host-a" : "host-b");
  s->abi = me_recv ? recv_abi : send_abi;
  setenv("TEST_NCCL_VERSION", me_recv ? recv_code : send_code, 1);
  void *comm = NULL;
  if (side_open(s)) return;
  char want[64], mine[16], peer[16];
  snprintf(want, sizeof(want), "bound through ncclNetPlugin_v%d)", s->abi);
  CHECK(log_find(NCCL_LOG_INFO, want), "no INFO says \"%s\"", want);
  if (pair_open(s, &comm)) return;
  static const size_t sizes[] = {0, 1, 4096, 65537, 4 << 20};
  for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
    CHECK(xfer_one(s, comm, sizes[i], sizes[i], 40 + i) == 0, "%zu bytes across v%d -> v%d",
          sizes[i], send_abi, recv_abi);
  int mc = atoi(me_recv ? recv_code : send_code), pc = atoi(me_recv ? send_code : recv_code);
  snprintf(mine, sizeof(mine), "%d.%d.%d", mc / 10000, mc % 10000 / 100, mc % 100);
  snprintf(peer, sizeof(peer), "%d.%d.%d", pc / 10000, pc % 10000 / 100, pc % 100);
  char hs[64];
  snprintf(hs, sizeof(hs), ", NCCL %s, device", peer);
  const char *l = log_find(NCCL_LOG_INFO, hs);
  CHECK(l && strstr(l, "handshake"), "the handshake INFO does not name the peer's NCCL %s", peer);
  const char *w = log_find(NCCL_LOG_WARN, "configured differently");
  CHECK(w && strstr(w, "NCCL version: ") && strstr(w, mine) && strstr(w, peer),
        "no WARN naming NCCL %s here and %s on the peer: %s", mine, peer, w ? w : "none");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

void case_mixed_v6_v11(struct side *s) { mixed_tables(s, 6, "21403", 11, "22809"); }
void case_mixed_v12_v5(struct side *s) { mixed_tables(s, 12, "23007", 5, "21212"); }

/* A message through a connection of this process to itself, verified. */
static int loop_xfer(struct side *s, void *sc, void *rc, size_t size, unsigned seed) {
  uint8_t *out = malloc(size + 1), *in = malloc(size + 1);
  void *mo = NULL, *mi = NULL, *rs = NULL, *rr = NULL;
  int tag = 1, ds = 0, dr = 0, n = -1, ok = 0;
  size_t cap = size;
  fill_pattern(out, size, seed);
  if (!out || !in || netload_reg_mr(&s->nl, sc, out, size + 1, NCCL_PTR_HOST, &mo) ||
      netload_reg_mr(&s->nl, rc, in, size + 1, NCCL_PTR_HOST, &mi))
    goto out;
  void *inp = in;
  if (netload_irecv(&s->nl, rc, 1, &inp, &cap, &tag, &mi, &rr) || !rr) goto out;
  for (long long end = ms_now() + 10000; !rs && ms_now() < end;)
    if (netload_isend(&s->nl, sc, out, size, 1, mo, &rs)) goto out;
  for (long long end = ms_now() + 20000; rs && (!ds || !dr) && ms_now() < end; sched_yield()) {
    if (!ds && netload_test(&s->nl, rs, &ds, NULL)) goto out;
    if (!dr && netload_test(&s->nl, rr, &dr, &n)) goto out;
  }
  ok = ds && dr && (size_t)n == size && check_pattern(in, size, seed) == size;
out:
  if (mo) netload_dereg_mr(&s->nl, sc, mo);
  if (mi) netload_dereg_mr(&s->nl, rc, mi);
  free(out), free(in);
  return ok;
}

/* The int tables (v5-v8) cannot carry 3 GiB: the loader refuses before the
 * call, and a truncated (negative) int that reaches the plugin is refused by
 * it; both WARNs name the size and the table's limit. Every table refuses a
 * message above the 1 GiB it takes (maxP2pBytes, or NCCL's assumption for
 * v5-v8). Nothing is posted, and the connection still works afterwards. */
void case_size_limits(struct side *s) {
  void *sc = NULL, *rc = NULL, *req = NULL, *mh = NULL;
  uint8_t small[64];
  const size_t big = 3ULL << 30;
  if (side_open(s)) return;
  CHECK(netload_connect_pair(&s->nl, 0, &sc, &rc, 20000) == 0 && sc && rc, "loopback connect");
  if (!sc || !rc) return;
  CHECK(netload_reg_mr(&s->nl, sc, small, sizeof(small), NCCL_PTR_HOST, &mh) == 0, "regMr");
  int v = s->nl.version;
  int r = netload_isend(&s->nl, sc, small, MAX_NET_SIZE + 1, 0, mh, &req);
  const char *w = log_find(NCCL_LOG_WARN, "1073741825");
  CHECK(r != ncclSuccess && w && strstr(w, "1073741824"),
        "isend of 1 GiB + 1: %d, WARN naming both sizes: %s", r, w ? w : "none");
  r = netload_isend(&s->nl, sc, small, big, 0, mh, &req);
  w = log_find(NCCL_LOG_WARN, "3221225472");
  CHECK(r != ncclSuccess && w, "isend of 3 GiB: %d, WARN naming it: %s", r, w ? w : "none");
  if (v <= 8) {
    CHECK(w && strstr(w, "2147483647") && strstr(w, "never truncated"),
          "the int table's limit is not named: %s", w ? w : "none");
    log_clear();
    int neg = (int)(unsigned)big; /* what a caller that truncates would pass */
    r = v == 5   ? s->nl.v5->isend(sc, small, neg, 0, mh, &req)
        : v == 6 ? s->nl.v6->isend(sc, small, neg, 0, mh, &req)
        : v == 7 ? s->nl.v7->isend(sc, small, neg, 0, mh, &req)
                 : s->nl.v8->isend(sc, small, neg, 0, mh, &req);
    w = log_find(NCCL_LOG_WARN, "-1073741824");
    CHECK(r != ncclSuccess && req == NULL && w && strstr(w, "2147483647") &&
            strstr(w, "3221225472"),
          "a truncated size through the v%d table: %d, request %p, WARN: %s", v, r, req,
          w ? w : "none");
  }
  if (v <= 7) { /* registration sizes are int too */
    void *mh2 = NULL;
    log_clear();
    r = netload_reg_mr(&s->nl, sc, small, big, NCCL_PTR_HOST, &mh2);
    w = log_find(NCCL_LOG_WARN, "regMr of 3221225472");
    CHECK(r != ncclSuccess && mh2 == NULL && w && strstr(w, "2147483647"),
          "regMr of 3 GiB through v%d: %d, WARN: %s", v, r, w ? w : "none");
  }
  netload_dereg_mr(&s->nl, sc, mh);
  CHECK(loop_xfer(s, sc, rc, 100000, 5), "the connection no longer moves data after refusals");
  netload_close_send(&s->nl, sc);
  netload_close_recv(&s->nl, rc);
  side_close(s);
}

/* Counts event lines that hold both a and b. */
static int file_count(const char *path, const char *a, const char *b) {
  FILE *f = fopen(path, "r");
  char line[8192];
  int n = 0;
  while (f && fgets(line, sizeof(line), f)) n += strstr(line, a) && (!b || strstr(line, b));
  if (f) fclose(f);
  return n;
}

static void dump_file(const char *path) {
  FILE *f = fopen(path, "r");
  char line[8192];
  while (f && fgets(line, sizeof(line), f)) printf("#   %s", line);
  if (f) fclose(f);
}

/* The life of a process that binds the table and ends with exit(), as an
 * NCCL application does; v5-v10 never get a finalize. */
static void census_process(struct side *s, size_t size) {
  void *sc = NULL, *rc = NULL;
  if (side_open(s)) exit(1);
  if (netload_connect_pair(&s->nl, 0, &sc, &rc, 20000) || !loop_xfer(s, sc, rc, size, 3)) exit(1);
  netload_close_send(&s->nl, sc);
  netload_close_recv(&s->nl, rc);
  side_close(s); /* finalize for v11/v12, nothing for older tables */
  exit(0);
}

/* The closing census is written at exit for every table, and v11/v12 also
 * write one when their last communicator is finalized. */
void case_census_at_exit(struct side *s) {
  char path[128], sent[64];
  const size_t size = 123457;
  snprintf(path, sizeof(path), "/tmp/diag-api-census-%d.jsonl", (int)getpid());
  unlink(path);
  setenv("NCCL_DIAG_LOG_FILE", path, 1);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) census_process(s, size);
  int st = -1;
  for (long long end = ms_now() + 30000; ms_now() < end;) {
    if (waitpid(pid, &st, WNOHANG) == pid) break;
    usleep(10000);
  }
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the process did not end cleanly (status %d)", st);
  char abi[32];
  snprintf(abi, sizeof(abi), "\"abi\":%d", s->abi);
  CHECK(file_count(path, "\"event\":\"init\"", abi) == 1, "no init event with %s in %s", abi, path);
  snprintf(sent, sizeof(sent), "\"bytes_sent\":%zu", size);
  CHECK(file_count(path, "\"why\":\"exit\"", sent) == 1,
        "no census at exit counting %zu bytes sent in %s", size, path);
  int at_finalize = file_count(path, "\"event\":\"census\"", "last communicator finalized");
  CHECK(at_finalize == (s->abi >= 11), "%d censuses at finalize, the v%d table %s", at_finalize,
        s->abi, s->abi >= 11 ? "has finalize" : "has no finalize");
  if (tap_case_failed) dump_file(path);
  unlink(path);
}
