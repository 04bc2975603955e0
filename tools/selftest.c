/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag selftest: load the plugin as NCCL does, show the devices it
 * offers and why, then move verified data through it on this host (a
 * loopback connection on each device) and report the bandwidth.
 *
 * Result and exit status: PASS 0; FAIL 1 (no device, or data did not move
 * or arrived wrong); 2 usage; DEGRADED 3: the data moved, but over TCP
 * although this host has usable RDMA ports (the plugin's warning says why
 * they are lost). */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/knobs.h"
#include "common/log.h"
#include "common/size.h"
#include "tools/netload.h"
#include "tools/opt.h"
#include "tools/tool.h"
#include "topo/topo.h"

#define INFLIGHT 8

struct side {
  struct netload *nl;
  void *comm;
  int send;
  size_t size;
  int iters;
  uint8_t *buf[INFLIGHT];
  void *mh[INFLIGHT];
  ncclResult_t res;
  int bad_iter;
  size_t bad_off;
};

static uint64_t pattern(int iter, size_t word) {
  uint64_t x = (uint64_t)iter * 0x9e3779b97f4a7c15ULL ^ (word * 0xbf58476d1ce4e5b9ULL);
  return x ^ (x >> 31);
}

static void fill(uint8_t *b, size_t size, int iter) {
  uint64_t *w = (uint64_t *)b;
  for (size_t i = 0; i < size / 8; i++) w[i] = pattern(iter, i);
}

static int check(const uint8_t *b, size_t size, int iter, size_t *bad) {
  const uint64_t *w = (const uint64_t *)b;
  for (size_t i = 0; i < size / 8; i++)
    if (w[i] != pattern(iter, i)) {
      *bad = i * 8;
      return 0;
    }
  return 1;
}

static void *run_side(void *arg) {
  struct side *s = arg;
  void *req[INFLIGHT] = {0};
  int posted = 0, completed = 0;
  s->bad_iter = -1;
  while (completed < s->iters) {
    int slot = posted % INFLIGHT;
    if (posted < s->iters && posted - completed < INFLIGHT) {
      void *r = NULL;
      if (s->send) {
        fill(s->buf[slot], s->size, posted);
        s->res = netload_isend(s->nl, s->comm, s->buf[slot], s->size, 0, s->mh[slot], &r);
      } else {
        size_t cap = s->size;
        int tag = 0;
        s->res =
          netload_irecv(s->nl, s->comm, 1, (void **)&s->buf[slot], &cap, &tag, &s->mh[slot], &r);
      }
      if (s->res) return NULL;
      if (r) {
        req[slot] = r;
        posted++;
      }
    }
    int cs = completed % INFLIGHT, done = 0, got = 0;
    if (completed < posted) {
      s->res = netload_test(s->nl, req[cs], &done, &got);
      if (s->res) return NULL;
      if (done) {
        if (!s->send && s->bad_iter < 0 &&
            ((size_t)got != s->size || !check(s->buf[cs], s->size, completed, &s->bad_off)))
          s->bad_iter = completed;
        completed++;
      }
    }
  }
  return NULL;
}

static int transfer(struct netload *nl, int dev, const char *name, size_t size, int iters) {
  void *sc, *rc;
  ncclResult_t r = netload_connect_pair(nl, dev, &sc, &rc, 30000);
  if (r) {
    printf("  [%d] %s: connect/accept failed (error %d), see the warnings above\n", dev, name, r);
    return 1;
  }
  struct side snd = {nl, sc, 1, size, iters}, rcv = {nl, rc, 0, size, iters};
  int fail = 0;
  for (int i = 0; i < INFLIGHT; i++) {
    snd.buf[i] = aligned_alloc(4096, size);
    rcv.buf[i] = aligned_alloc(4096, size);
    if (!snd.buf[i] || !rcv.buf[i]) {
      printf("  out of memory for %zu-byte buffers\n", size);
      return 1;
    }
    if (netload_reg_mr(nl, sc, snd.buf[i], size, NCCL_PTR_HOST, &snd.mh[i]) ||
        netload_reg_mr(nl, rc, rcv.buf[i], size, NCCL_PTR_HOST, &rcv.mh[i]))
      fail = 1;
  }
  double t0 = clock_mono_ns() * 1e-9;
  pthread_t ts, tr;
  pthread_create(&ts, NULL, run_side, &snd);
  pthread_create(&tr, NULL, run_side, &rcv);
  pthread_join(ts, NULL);
  pthread_join(tr, NULL);
  double dt = clock_mono_ns() * 1e-9 - t0;
  double bytes = (double)size * iters;
  if (snd.res || rcv.res) {
    printf("  [%d] %s: transfer failed (send error %d, receive error %d)\n", dev, name, snd.res,
           rcv.res);
    fail = 1;
  } else if (rcv.bad_iter >= 0) {
    printf("  [%d] %s: DATA MISMATCH in message %d at byte %zu\n", dev, name, rcv.bad_iter,
           rcv.bad_off);
    fail = 1;
  } else {
    char one[32], all[32];
    printf("  [%d] %s: %d x %s (%d in flight) sent and verified: %s in %.3f s, %.2f GB/s\n", dev,
           name, iters, size_format(one, sizeof(one), size), INFLIGHT,
           size_format(all, sizeof(all), (uint64_t)bytes), dt, bytes / dt / 1e9);
  }
  for (int i = 0; i < INFLIGHT; i++) {
    netload_dereg_mr(nl, sc, snd.mh[i]);
    netload_dereg_mr(nl, rc, rcv.mh[i]);
    free(snd.buf[i]);
    free(rcv.buf[i]);
  }
  netload_close_send(nl, sc);
  netload_close_recv(nl, rc);
  return fail;
}

/* RDMA lost: the topology chooses RDMA ports here but the plugin offers
 * none of them. 0 when not; else 1 with why filled. */
static int rdma_lost(struct netload *nl, int ndev, char *why, size_t cap) {
  struct topo_host h;
  struct topo_choice c;
  log_set_stderr_level(LOG_LEVEL_WARN); /* the plugin has said it all already */
  knob_load(1);
  int lost = 0;
  if (!topo_discover(&h, 0) && !topo_decide(&h, NULL, &c)) {
    for (int d = 0; d < ndev && c.ndev; d++) {
      struct netload_props p;
      if (netload_props(nl, d, &p)) continue;
      for (int i = 0; i < c.ndev; i++) { /* "mlx5_2", or "mlx5_2:1" for one of several ports */
        size_t n = strlen(c.dev[i].name);
        if (!strncmp(p.name, c.dev[i].name, n) && (!p.name[n] || p.name[n] == ':')) c.ndev = 0;
      }
    }
    if (c.ndev) {
      lost = 1;
      size_t o = (size_t)snprintf(why, cap, "this host has %d usable RDMA port%s (", c.ndev,
                                  c.ndev == 1 ? "" : "s");
      for (int i = 0; i < c.ndev && o < cap; i++)
        o += (size_t)snprintf(why + o, cap - o, "%s%s:%d", i ? ", " : "", c.dev[i].name,
                              c.dev[i].ib_port);
      if (o < cap)
        snprintf(why + o, cap - o,
                 ") but the plugin offers none of them: the data moved over TCP, at TCP speed; "
                 "the warning above says why RDMA is lost");
    }
    topo_choice_free(&c);
  }
  topo_host_free(&h);
  return lost;
}

static void selftest_usage(FILE *f) {
  fprintf(f,
          "usage: nccl-net-diag selftest [--size SIZE] [--iters N] [--abi %d..%d] "
          "[--plugin PATH] [-v]\n"
          "Loads the plugin as NCCL does, lists its devices, and moves verified data through each\n"
          "one on this host. SIZE: bytes, or with K, M, G or T (K = 1024; 64K, 1.5G, 64KiB).\n"
          "exit status: 0 PASS, 1 FAIL, 2 usage, 3 DEGRADED (the data moved over TCP although\n"
          "this host has usable RDMA ports)\n",
          NETLOAD_ABI_MIN, NETLOAD_ABI_MAX);
}

/* The options: true to run, else false with the exit status in *status
 * (help, usage error). */
static bool selftest_options(int argc, char **argv, size_t *size, int *iters, int *version,
                             const char **plugin, int *status) {
  enum { O_SIZE = 1, O_ITERS, O_ABI, O_PLUGIN, O_VERBOSE, O_HELP };
  static const struct tool_opt opts[] = {{"size", 0, TOOL_OPT_VALUE, O_SIZE},
                                         {"iters", 0, TOOL_OPT_VALUE, O_ITERS},
                                         {"abi", 0, TOOL_OPT_VALUE, O_ABI},
                                         {"plugin", 0, TOOL_OPT_VALUE, O_PLUGIN},
                                         {"verbose", 'v', TOOL_OPT_FLAG, O_VERBOSE},
                                         {"help", 'h', TOOL_OPT_FLAG, O_HELP},
                                         {NULL, 0, 0, 0}};
  struct tool_opts op;
  char why[512] = "";
  if (tool_opts_begin(&op, argc, argv, opts))
    return *status = tool_usage_error("selftest", "out of memory"), false;
  int id;
  const char *val;
  while ((id = tool_opt_next(&op, &val, why, sizeof(why))) > 0) {
    long v = 0;
    uint64_t bytes;
    if (id == O_HELP) break;
    if (id == O_VERBOSE) tool_verbose = 1;
    if (id == O_PLUGIN) *plugin = val;
    if (id == O_SIZE && (size_parse(val, &bytes) || !bytes || bytes > SIZE_MAX)) {
      snprintf(why, sizeof(why),
               "bad value '%s' for --size: a size such as 4096, 64K, 1M (K = 1024)", val);
      break;
    }
    if (id == O_SIZE) *size = (size_t)bytes;
    if (id == O_ITERS && tool_parse_int(val, 1, 1000000, &v)) {
      snprintf(why, sizeof(why), "bad value '%s' for --iters: an integer from 1 to 1000000", val);
      break;
    }
    if (id == O_ITERS) *iters = (int)v;
    /* a number the loader does not drive is refused there, naming the ones it does */
    if (id == O_ABI && tool_parse_int(val, 0, 1000, &v)) {
      snprintf(why, sizeof(why), "bad value '%s' for --abi: a table version, %d to %d", val,
               NETLOAD_ABI_MIN, NETLOAD_ABI_MAX);
      break;
    }
    if (id == O_ABI) *version = (int)v;
  }
  if (id == TOOL_OPT_END) id = tool_opts_no_operands(&op, why, sizeof(why));
  tool_opts_end(&op);
  if (id == O_HELP) return selftest_usage(stdout), *status = 0, false;
  if (id) return *status = tool_usage_error("selftest", "%s", why), false;
  return true;
}

int cmd_selftest(int argc, char **argv) {
  size_t size = 64 << 20;
  int iters = 32, version = 0;
  const char *plugin = NULL;
  int status = 0;
  if (!selftest_options(argc, argv, &size, &iters, &version, &plugin, &status)) return status;
  size = (size + 7) & ~(size_t)7;
  struct netload nl;
  char err[512];
  if (netload_open(&nl, plugin, version, err, sizeof(err))) {
    fprintf(stderr, "selftest: cannot load the plugin: %s\n", err);
    return 1;
  }
  printf("plugin %s, ABI v%d, network name \"%s\"\n", nl.path, nl.version, netload_name(&nl));
  netload_init(&nl, tool_logger);
  int ndev = 0;
  netload_devices(&nl, &ndev);
  printf("devices: %d\n", ndev);
  if (ndev <= 0) {
    printf("result: FAIL (no device; the warning above says why)\n");
    return 1;
  }
  int fail = 0;
  for (int d = 0; d < ndev; d++) {
    struct netload_props p;
    if (netload_props(&nl, d, &p)) {
      fail = 1;
      continue;
    }
    char p2p[32], coll[32];
    printf("  [%d] %s  %s  %d Mbps  pciPath %s  maxRecvs %d  maxP2pBytes %s  maxCollBytes %s%s\n",
           d, p.name, (p.ptr_support & NCCL_PTR_CUDA) ? "host+cuda" : "host", p.speed,
           p.has_pci ? p.pci_path : "(virtual)", p.max_recvs,
           size_format(p2p, sizeof(p2p), p.max_p2p_bytes),
           size_format(coll, sizeof(coll), p.max_coll_bytes),
           p.limits_assumed ? " (NCCL's values: this table has no size fields)" : "");
    if (nl.version >= 12)
      printf("      railId %d  planeId %d  (%d: unknown to this plugin)\n", p.rail_id, p.plane_id,
             NCCL_NET_ID_UNDEF);
  }
  printf("transfers over loopback connections:\n");
  for (int d = 0; d < ndev; d++) {
    struct netload_props p;
    netload_props(&nl, d, &p);
    fail |= transfer(&nl, d, p.name, size, iters);
  }
  char why[1024];
  int degraded = !fail && rdma_lost(&nl, ndev, why, sizeof(why));
  netload_finalize(&nl);
  if (degraded) printf("result: DEGRADED (%s)\n", why);
  else printf("result: %s\n", fail ? "FAIL" : "PASS");
  return fail ? 1 : degraded ? 3 : 0;
}
