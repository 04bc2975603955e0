/* SPDX-License-Identifier: Apache-2.0 */
/* Plays each NCCL release's calls (releases.c) against the built plugin, on
 * the host this process sees (the caller sets the namespace, sysfs root and
 * verbs library), one release per child process as each is its own job:
 * the symbol that release binds, init by its lifetime rule, devices and
 * every device's properties, its NIC fusion loop (merge.c), devices and the
 * virtual devices' properties again, then on each NET device NCCL would
 * keep: listen, accept and connect retried while NULL, the listen comm
 * closed once accepted, messages, deregMr, closeSend, closeRecv. From 2.28
 * a second communicator after the library was closed (NCCL counts
 * devices() as physical again) and a third with it kept loaded
 * (NCCL_NET_PLUGIN_REF_COUNT=1: the devices counted before are used). It checks the end state NCCL
 * would reach: every physical device in NCCL's topology (alone or fused), fused groups as NCCL
 * asked, no fatal, no endless loop, data delivered. usage: replay --host LABEL [--release 2.26]
 * [--expect-net PREFIX] [PLUGIN.so]
 * (--expect-net: every NET device's name starts with PREFIX, as "mlx5" on
 * an RDMA host: the plugin found the devices the host has)
 * Output: TAP, plus one "ROW<tab>release<tab>host<tab>state" line each. */
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "merge.h"
#include "replay.h"

static int nwarns;
static char first_warn[300];

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                   const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level != NCCL_LOG_WARN) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (!nwarns++) snprintf(first_warn, sizeof(first_warn), "%s", msg);
  fprintf(stderr, "# WARN %s\n", msg);
}

void replay_fail_as(struct replay *rp, const char *kind, const char *fmt, ...) {
  if (rp->fail[0]) return; /* the first cause is the one to read */
  rp->kind = kind;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rp->fail, sizeof(rp->fail), fmt, ap);
  va_end(ap);
}

/* The first table in the release's lookup order that the library exports. */
static int bind_symbol(const struct nccl_release *rel, const char *path) {
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!dl) return 0;
  int abi = 0;
  for (int i = 0; rel->syms[i] && !abi; i++) {
    char sym[32];
    snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", rel->syms[i]);
    if (dlsym(dl, sym)) abi = rel->syms[i];
  }
  dlclose(dl);
  return abi;
}

static int open_comm(struct replay *rp) {
  char err[512] = "";
  if (netload_open(&rp->nl, rp->path, rp->abi, err, sizeof(err))) {
    replay_fail(rp, "cannot bind ncclNetPlugin_v%d: %s", rp->abi, err);
    return -1;
  }
  if (netload_init(&rp->nl, logger)) {
    replay_fail(rp, "init failed");
    return -1;
  }
  return 0;
}

/* What ncclTopoPopulateNics and the transport read from each device: a
 * unique name (the topology finds a NIC by it; a virtual device of one
 * keeps its member's name, as NCCL's IB transport names it, and takes over
 * that NIC), a speed and maxComms (its
 * bandwidth and connection budget), host memory in ptrSupport, maxRecvs
 * within NCCL_NET_IB_MAX_RECVS (8), a host device, and from v9 the
 * message limits NCCL cuts transfers by. */
static void check_props(struct replay *rp, int d) {
  const struct netload_props *p = &rp->props[d];
  bool is_alias = d >= rp->nphys && p->vdevs == 1;
  for (int e = 0; e < d; e++)
    if (!strcmp(rp->props[e].name, p->name) && !(is_alias && p->vdev_members[0] == e))
      replay_fail_as(rp, "PROPS", "devices %d and %d are both named %s", e, d, p->name);
  if (!p->name[0] || p->speed <= 0 || p->max_comms <= 0 || !(p->ptr_support & NCCL_PTR_HOST) ||
      p->max_recvs < 1 || p->max_recvs > 8 || p->device_type != 0)
    replay_fail_as(
      rp, "PROPS", "device %d (%s): speed %d, maxComms %d, ptrSupport 0x%x, maxRecvs %d, type %d",
      d, p->name, p->speed, p->max_comms, p->ptr_support, p->max_recvs, p->device_type);
  if (rp->abi >= 9 && (!p->max_p2p_bytes || !p->max_coll_bytes))
    replay_fail_as(rp, "PROPS", "device %s: maxP2pBytes %zu, maxCollBytes %zu", p->name,
                   p->max_p2p_bytes, p->max_coll_bytes);
}

/* devices, then getProperties of each (ncclTopoPopulateNics). */
static int discover(struct replay *rp, int *ndev) {
  if (netload_devices(&rp->nl, ndev) || *ndev < 0 || *ndev > REPLAY_MAX_DEVS) {
    replay_fail(rp, "devices() failed or reported %d", *ndev);
    return -1;
  }
  for (int d = 0; d < *ndev; d++) {
    if (netload_props(&rp->nl, d, &rp->props[d])) {
      replay_fail(rp, "getProperties(%d) failed", d);
      return -1;
    }
    check_props(rp, d);
  }
  return 0;
}

static int make_vdev(void *arg, int ndevs, const int *devs) {
  struct replay *rp = arg;
  int vd = -1;
  ncclResult_t r = netload_make_vdevice(&rp->nl, ndevs, devs, &vd);
  if (!r && vd < 0) replay_fail(rp, "makeVDevice succeeded without an index");
  return (int)r;
}

static void fuse(struct replay *rp) {
  struct merge_dev devs[REPLAY_MAX_DEVS];
  for (int d = 0; d < rp->nphys; d++)
    devs[d] = (struct merge_dev){rp->props[d].name, rp->props[d].pci_path, rp->props[d].rail_id};
  struct merge_cfg cfg;
  merge_cfg_from_env(rp->rel, rp->abi, &cfg);
  merge_play(rp->rel, &cfg, devs, rp->nphys, make_vdev, rp, &rp->mr);
}

/* The NET devices NCCL keeps: 2.24-2.26 keep only the virtual ones once
 * there is any; from 2.27 the fused members are dropped, the rest kept. */
static void keep_devices(struct replay *rp) {
  int member[REPLAY_MAX_DEVS] = {0};
  rp->nvisible = 0;
  for (int v = rp->nphys; v < rp->nphys + rp->nvirt; v++)
    for (int k = 0; k < rp->props[v].vdevs && k < 8; k++) {
      int m = rp->props[v].vdev_members[k];
      if (m >= 0 && m < rp->nphys) member[m] = rp->props[v].vdevs > 1 || member[m];
    }
  bool only_virtual = rp->rel->merge != MERGE_SKIP_SINGLE && rp->nvirt > 0;
  for (int d = 0; d < rp->nphys; d++)
    if (!only_virtual && !member[d]) rp->visible[rp->nvisible++] = d;
  for (int v = rp->nphys; v < rp->nphys + rp->nvirt; v++) rp->visible[rp->nvisible++] = v;
}

/* Every physical device must reach NCCL's topology, alone or fused. */
static void check_cover(struct replay *rp) {
  for (int d = 0; d < rp->nphys; d++) {
    bool seen = false;
    for (int i = 0; i < rp->nvisible && !seen; i++) {
      const struct netload_props *p = &rp->props[rp->visible[i]];
      seen = rp->visible[i] == d;
      for (int k = 0; k < p->vdevs && k < 8 && rp->visible[i] >= rp->nphys; k++)
        seen |= p->vdev_members[k] == d;
    }
    if (!seen)
      replay_fail_as(rp, "LEFT-OUT", "device %s is left out of NCCL's topology", rp->props[d].name);
  }
}

/* devices() after the fusion and the virtual devices' properties. */
static int settle(struct replay *rp) {
  int n = 0;
  if (netload_devices(&rp->nl, &n) || n < rp->nphys || n > REPLAY_MAX_DEVS) {
    replay_fail(rp, "devices() after fusion reported %d (had %d)", n, rp->nphys);
    return -1;
  }
  rp->nvirt = n - rp->nphys;
  for (int v = rp->nphys; v < n; v++) {
    if (netload_props(&rp->nl, v, &rp->props[v])) {
      replay_fail(rp, "getProperties of virtual device %d failed", v);
      return -1;
    }
    if (rp->props[v].vdevs < 1 || rp->props[v].vdevs > 8)
      replay_fail(rp, "virtual device %d lists %d members", v, rp->props[v].vdevs);
    check_props(rp, v);
  }
  keep_devices(rp);
  check_cover(rp);
  for (int i = 0; i < rp->nvisible && rp->expect_net; i++)
    if (strncmp(rp->props[rp->visible[i]].name, rp->expect_net, strlen(rp->expect_net)))
      replay_fail_as(rp, "DEVICES", "NET device %s, expected %s... devices",
                     rp->props[rp->visible[i]].name, rp->expect_net);
  if (!rp->nvisible) replay_fail_as(rp, "DEVICES", "no NET device");
  replay_check_rails(rp);
  return 0;
}

/* One communicator's setup: init, devices, properties, fusion. */
static int setup(struct replay *rp, bool fuses) {
  if (open_comm(rp) || discover(rp, &rp->nphys)) return -1;
  if (fuses) fuse(rp);
  if (rp->mr.outcome != MERGE_DONE) {
    replay_fail_as(rp, rp->mr.outcome == MERGE_LOOPS ? "LOOP" : "FATAL", "%s", rp->mr.why);
    return -1;
  }
  if (rp->mr.refused_single)
    replay_fail_as(rp, "REFUSED", "makeVDevice refused %d single device(s)", rp->mr.refused_single);
  return settle(rp);
}

/* NCCL_NET_PLUGIN_REF_COUNT=0 (2.28 on): the last finalize closes the
 * library; the next communicator reopens it, counts devices() as physical
 * and fuses again. The plugin must look as it did the first time. */
static void second_comm(struct replay *rp) {
  int nphys = rp->nphys, nvisible = rp->nvisible, nvirt = rp->nvirt;
  if (netload_finalize(&rp->nl)) replay_fail(rp, "finalize failed");
  netload_close(&rp->nl);
  if (setup(rp, rp->abi >= 9)) return;
  if (rp->nphys != nphys)
    replay_fail_as(rp, "RELOAD", "after a reload devices() reports %d physical devices, first %d",
                   rp->nphys, nphys);
  if (rp->nvisible != nvisible || rp->nvirt != nvirt)
    replay_fail_as(rp, "RELOAD", "after a reload NCCL keeps %d devices (%d virtual), first %d (%d)",
                   rp->nvisible, rp->nvirt, nvisible, nvirt);
  replay_traffic(rp);
}

/* NCCL_NET_PLUGIN_REF_COUNT=1 (2.28 on): the library stays loaded, so the
 * next communicator's init is followed by getProperties of the devices
 * NCCL counted before (physical and virtual), then by init.cc's devices(),
 * which every rank compares (2.30 fails init on a mismatch). */
static void kept_comm(struct replay *rp) {
  int total = rp->nphys + rp->nvirt, n = 0;
  if (netload_finalize(&rp->nl) || netload_init(&rp->nl, logger)) {
    replay_fail_as(rp, "RELOAD", "finalize and init of a third communicator failed");
    return;
  }
  struct netload_props p;
  for (int d = 0; d < total; d++)
    if (netload_props(&rp->nl, d, &p))
      replay_fail_as(rp, "RELOAD", "getProperties(%d) failed with the library kept loaded", d);
  if (netload_devices(&rp->nl, &n) || n != total)
    replay_fail_as(rp, "RELOAD",
                   "with the library kept loaded devices() reports %d, the first communicator %d "
                   "(NCCL 2.30 fails init when ranks report different counts)",
                   n, total);
  replay_traffic(rp);
  if (netload_finalize(&rp->nl)) replay_fail(rp, "finalize of the third communicator failed");
}

/* "v12 net=a,b+c@r0 nets=2 fused=1 rails=1 vnics=1 calls=1 refused=0": the NET
 * devices NCCL keeps (with their rails), how many are fused NICs. */
static void describe(struct replay *rp, char *out, size_t cap) {
  size_t o = (size_t)snprintf(out, cap, "v%d net=", rp->abi);
  int fused = 0, rails = 0;
  for (int i = 0; i < rp->nvisible && o < cap; i++) {
    const struct netload_props *p = &rp->props[rp->visible[i]];
    fused += rp->visible[i] >= rp->nphys && p->vdevs > 1;
    rails += p->rail_id >= 0;
    o += (size_t)snprintf(out + o, cap - o, "%s%s", i ? "," : "", p->name);
    if (p->rail_id >= 0 && o < cap) o += (size_t)snprintf(out + o, cap - o, "@r%d", p->rail_id);
  }
  if (o < cap)
    snprintf(out + o, cap - o, " nets=%d fused=%d rails=%d vnics=%d calls=%d refused=%d",
             rp->nvisible, fused, rails, rp->nvirt, rp->mr.calls, rp->mr.refused);
}

static int play(const struct nccl_release *rel, const char *path, const char *host,
                const char *expect_net) {
  static struct replay rp;
  memset(&rp, 0, sizeof(rp));
  rp.rel = rel;
  rp.path = path;
  rp.expect_net = expect_net;
  rp.abi = bind_symbol(rel, path);
  char state[900] = "";
  if (!rp.abi) {
    replay_fail(&rp, "exports none of the tables NCCL %s looks for", rel->minor);
  } else if (!setup(&rp, rp.abi >= 9)) {
    replay_traffic(&rp);
    describe(&rp, state, sizeof(state));
    if (rel->life == LIFE_PER_COMM) second_comm(&rp);
    if (rel->life == LIFE_PER_COMM && !rp.fail[0]) kept_comm(&rp);
  }
  if (rp.fail[0]) {
    printf("ROW\t%s\t%s\tFAIL %s\n", rel->minor, host, rp.kind);
    printf("not ok - NCCL %s (%s) on %s: %s\n", rel->minor, rel->tag, host, rp.fail);
  } else {
    printf("ROW\t%s\t%s\tok %s\n", rel->minor, host, state);
    printf("ok - NCCL %s (%s) on %s: %s\n", rel->minor, rel->tag, host, state);
  }
  fflush(stdout);
  return rp.fail[0] ? 1 : 0;
}

/* Each release in its own process, as each is its own job; a child that
 * does not finish in time is a hang. */
static int run_one(const struct nccl_release *rel, const char *path, const char *host,
                   const char *expect_net) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    alarm(REPLAY_CHILD_SECONDS);
    _exit(play(rel, path, host, expect_net));
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  printf("ROW\t%s\t%s\tFAIL HANG\n", rel->minor, host);
  printf("not ok - NCCL %s (%s) on %s: no end state within %d s (signal %d)\n", rel->minor,
         rel->tag, host, REPLAY_CHILD_SECONDS, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return 1;
}

int main(int argc, char **argv) {
  const char *host = "host", *only = NULL, *path = getenv("NCCL_DIAG_PLUGIN_PATH"), *net = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--host") && i + 1 < argc) host = argv[++i];
    else if (!strcmp(argv[i], "--release") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--expect-net") && i + 1 < argc) net = argv[++i];
    else path = argv[i];
  }
  if (!path) {
    fprintf(stderr,
            "usage: replay --host LABEL [--release 2.26] [--expect-net PREFIX] PLUGIN.so\n");
    return 2;
  }
  int n = 0, failed = 0;
  for (int i = 0; i < nccl_nreleases; i++) {
    if (only && strcmp(only, nccl_releases[i].minor)) continue;
    failed |= run_one(&nccl_releases[i], path, host, net);
    n++;
  }
  printf("1..%d\n", n);
  return failed;
}
