/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs between two hosts: two processes, each its own fixture host.
 *
 *   t_twohost loopback   both in this network namespace, traffic over 127.0.0.1
 *   t_twohost netns      two network namespaces built from the fixtures by
 *                        sv-netns.sh (root only), so routing decides
 *
 * Each case forks one child per host (entering its namespace in netns mode)
 * that report a result to the parent; the children exchange QP addresses
 * over a socketpair, as two ranks would over the out-of-band network. */
#include "svt.h"
#include "tap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct host {
  const char *fixture; /* fixture host, e.g. roce-story5 */
  char ns[32];         /* namespace, "" in loopback mode */
};

struct result {
  int err;     /* 0, an errno, or -1 */
  int status;  /* a completion status */
  double secs; /* what the case measured */
};

static struct host hosts[2];
static char netns_name[16], ib_name[16];
static const char *netns_sh;
static bool netns_mode;

static void netns_down(void) {
  char cmd[512];
  for (int i = 0; i < 2; i++) {
    const char *n = i ? ib_name : netns_name;
    if (!*n) continue;
    snprintf(cmd, sizeof cmd, "'%s' down %s", netns_sh, n);
    if (system(cmd)) fprintf(stderr, "t_twohost: %s failed\n", cmd);
  }
}

static void on_signal(int sig) {
  netns_down();
  signal(sig, SIG_DFL);
  raise(sig);
}

static int netns_up(char *name, const char *prefix, const char *fa, const char *fb) {
  char cmd[1600];
  snprintf(name, 16, "sv%s%d", prefix, (int)getpid());
  snprintf(cmd, sizeof cmd, "'%s' up %s '%s' '%s'", netns_sh, name, svt_host_dir(fa),
           svt_host_dir(fb));
  if (system(cmd)) {
    *name = 0;
    return -1;
  }
  return 0;
}

static void set_hosts(const char *fa, const char *fb, const char *ns) {
  hosts[0].fixture = fa;
  hosts[1].fixture = fb;
  for (int i = 0; i < 2; i++)
    snprintf(hosts[i].ns, sizeof hosts[i].ns, "%s%s", ns, *ns ? (i ? "b" : "a") : "");
}

/* ---- children ---- */

typedef struct result (*child_fn)(int peer, void *arg);

static void enter_host(const struct host *h) {
  if (*h->ns) {
    char path[128];
    snprintf(path, sizeof path, "/run/netns/%s", h->ns);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET)) {
      fprintf(stderr, "t_twohost: cannot enter %s: %s\n", h->ns, strerror(errno));
      _exit(3);
    }
    close(fd);
  } else {
    setenv("SOFTVERBS_WIRE", "loopback", 1);
  }
  setenv("NCCL_DIAG_SYSFS_ROOT", svt_fixture(h->fixture), 1);
}

static pid_t spawn(int host, child_fn fn, int peer, void *arg, int report) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid) return pid;
  enter_host(&hosts[host]);
  struct result r = fn(peer, arg);
  _exit(svt_write_all(report, &r, sizeof r) ? 4 : 0);
}

/* Reads n bytes within ms milliseconds (a child may die without writing). */
static int read_within(int fd, void *p, size_t n, int ms) {
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  return poll(&pfd, 1, ms) == 1 ? svt_read_all(fd, p, n) : -1;
}

/* Runs a (host 0) and b (host 1) against each other; their results. */
static void run_pair(child_fn a, void *arg_a, child_fn b, void *arg_b, struct result out[2]) {
  int sp[2], rep[2][2];
  memset(out, 0, 2 * sizeof *out);
  out[0].err = out[1].err = -1;
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) || pipe(rep[0]) || pipe(rep[1])) return;
  pid_t pa = spawn(0, a, sp[0], arg_a, rep[0][1]);
  pid_t pb = b ? spawn(1, b, sp[1], arg_b, rep[1][1]) : -1;
  close(sp[0]);
  close(sp[1]);
  close(rep[0][1]);
  close(rep[1][1]);
  if (read_within(rep[0][0], &out[0], sizeof out[0], 50000)) out[0].err = -1;
  if (b && read_within(rep[1][0], &out[1], sizeof out[1], 50000)) out[1].err = -1;
  waitpid(pa, NULL, 0);
  if (pb > 0) waitpid(pb, NULL, 0);
  close(rep[0][0]);
  close(rep[1][0]);
}

struct ep_args {
  const char *dev;
  int gid;
  struct svt_qp_opts qo;
  bool server;
  int ctl; /* victim: where to say "connected"; survivor: where "go" comes from */
};

static const int access_all =
  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

/* Opens, swaps addresses with the peer, connects, and syncs once. */
static int setup(struct svt_ep *e, int peer, const struct ep_args *a, struct svt_info *theirs) {
  struct svt_info mine;
  char b = 1;
  if (svt_open(e, a->dev, a->gid, 3 << 20, access_all)) return -1;
  svt_info(e, &mine);
  if (svt_write_all(peer, &mine, sizeof mine) || svt_read_all(peer, theirs, sizeof *theirs))
    return -1;
  int err = svt_connect(e, theirs, &a->qo);
  if (err) return err;
  return svt_write_all(peer, &b, 1) || svt_read_all(peer, &b, 1) ? -1 : 0;
}

static struct result pingpong_child(int peer, void *arg) {
  const struct ep_args *a = arg;
  struct svt_ep e;
  struct svt_info theirs;
  struct result r = {0};
  double t0 = svt_now();
  r.err = setup(&e, peer, a, &theirs);
  if (!r.err) r.err = svt_pingpong(&e, &theirs, a->server, 300, 65536);
  char b = 1;
  if (!r.err) r.err = svt_write_all(peer, &b, 1) || svt_read_all(peer, &b, 1) ? -1 : 0;
  r.secs = svt_now() - t0;
  svt_close(&e);
  return r;
}

/* Connects, tells the parent, then waits to be killed. */
static struct result victim_child(int peer, void *arg) {
  const struct ep_args *a = arg;
  struct svt_ep e;
  struct svt_info theirs;
  struct result r = {0};
  char b = 1;
  r.err = setup(&e, peer, a, &theirs);
  if (!r.err && !svt_write_all(a->ctl, &b, 1)) pause();
  return r;
}

/* Connects, waits for the parent's go (the peer is dead or blackholed by
 * then), writes, and times the completion. */
static struct result survivor_child(int peer, void *arg) {
  const struct ep_args *a = arg;
  struct svt_ep e;
  struct svt_info theirs;
  struct ibv_wc wc;
  struct result r = {0};
  char b;
  r.err = setup(&e, peer, a, &theirs);
  if (!r.err && svt_read_all(a->ctl, &b, 1)) r.err = -1;
  double t0 = svt_now();
  if (!r.err)
    r.err = svt_post(e.qp, IBV_WR_RDMA_WRITE, e.buf, 4096, e.mr->lkey, theirs.addr, theirs.rkey, 0,
                     IBV_SEND_SIGNALED, 7);
  if (!r.err && svt_wait(e.cq, &wc, 60000) == 1) {
    r.status = wc.status;
    r.secs = svt_now() - t0;
  } else if (!r.err) {
    r.err = ETIMEDOUT;
  }
  svt_close(&e);
  return r;
}

/* ---- cases ---- */

static void case_pingpong(const char *dev, int gid) {
  struct ep_args a = {.dev = dev, .gid = gid, .qo = svt_defaults(), .server = true}, b = a;
  struct result r[2];
  b.server = false;
  run_pair(pingpong_child, &a, pingpong_child, &b, r);
  CHECK(r[0].err == 0 && r[1].err == 0, "server err %d, client err %d", r[0].err, r[1].err);
  tap_diag("300 x 64 KiB round trips (write, write-with-imm, send, read) in %.2f s", r[1].secs);
}

/* The peer dies (or is blackholed by the command `cut`) after connecting;
 * the next write must end in RETRY_EXC_ERR after (retry_cnt + 1) x the
 * ACK timeout x SOFTVERBS_TIME_SCALE. */
static void dead_peer(uint8_t timeout, uint8_t retry, double scale, const char *cut) {
  int sp[2], ready[2], go[2], rep[2];
  struct result r = {.err = -1};
  char b = 0, s[32];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) || pipe(ready) || pipe(go) || pipe(rep)) return;
  struct ep_args sa = {.dev = "mlx5_2", .gid = 3, .qo = svt_defaults(), .ctl = go[0]}, va = sa;
  sa.qo.timeout = timeout;
  sa.qo.retry_cnt = retry;
  va.ctl = ready[1];
  snprintf(s, sizeof s, "%g", scale);
  setenv("SOFTVERBS_TIME_SCALE", s, 1);
  pid_t ps = spawn(0, survivor_child, sp[0], &sa, rep[1]);
  pid_t pv = spawn(1, victim_child, sp[1], &va, -1);
  unsetenv("SOFTVERBS_TIME_SCALE");
  bool ok = !read_within(ready[0], &b, 1, 30000);
  if (ok && cut) ok = !system(cut);
  if (!cut) kill(pv, SIGKILL);
  if (ok && !svt_write_all(go[1], &b, 1) && read_within(rep[0], &r, sizeof r, 50000)) r.err = -1;
  kill(ps, SIGKILL); /* only if it hangs: it has reported */
  kill(pv, SIGKILL);
  waitpid(ps, NULL, 0);
  waitpid(pv, NULL, 0);
  int fds[] = {sp[0], sp[1], ready[0], ready[1], go[0], go[1], rep[0], rep[1]};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) close(fds[i]);
  double bound = (retry + 1) * 4.096e-6 * (double)(1u << timeout) * scale;
  CHECK(ok && r.err == 0, "setup %s, survivor err %d", ok ? "ok" : "failed", r.err);
  CHECK(r.status == IBV_WC_RETRY_EXC_ERR, "status %s, want RETRY_EXC_ERR",
        ibv_wc_status_str(r.status));
  CHECK(r.secs >= 0.9 * bound && r.secs <= bound + 1.0, "after %.3f s, bound %.3f s", r.secs,
        bound);
  tap_diag(
    "RETRY_EXC_ERR after %.3f s; timeout %u, retry_cnt %u, scale %g: (retry_cnt+1) x timeout = %.3f s",
    r.secs, timeout, retry, scale, bound);
}

static void case_killed_peer(void) { dead_peer(14, 3, 1.0, NULL); }
static void case_killed_peer_nccl(void) { dead_peer(20, 7, 0.01, NULL); }

static void case_blackholed_peer(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "ip netns exec %s nft -f - <<'EOF'\n"
           "table inet svblackhole {\n chain out {\n  type filter hook output priority 0;\n"
           "  ip daddr 10.1.2.6 drop\n }\n}\nEOF",
           hosts[0].ns);
  dead_peer(14, 3, 1.0, cmd);
}

struct rtr_args {
  const char *dev, *dgid;
  int gid;
  int timeout_ms;
  const char *change; /* run in host A after the device is open, before RTR */
};

static struct result rtr_child(int peer, void *arg) {
  const struct rtr_args *a = arg;
  struct svt_ep e;
  struct svt_info there = {.qpn = 0x123456, .mtu = IBV_MTU_1024};
  struct svt_qp_opts qo = svt_defaults();
  struct result r = {.err = -1};
  char env[16];
  (void)peer;
  snprintf(env, sizeof env, "%d", a->timeout_ms);
  setenv("SOFTVERBS_RTR_TIMEOUT_MS", env, 1);
  inet_pton(AF_INET6, a->dgid, there.gid.raw);
  if (svt_open(&e, a->dev, a->gid, 4096, access_all) || svt_init(&e, &qo)) return r;
  if (a->change && system(a->change)) return r;
  double t0 = svt_now();
  r.err = svt_rtr(&e, &there, &qo);
  r.secs = svt_now() - t0;
  struct ibv_qp_attr qa;
  struct ibv_qp_init_attr ia;
  ibv_query_qp(e.qp, &qa, IBV_QP_STATE, &ia);
  r.status = qa.qp_state;
  svt_close(&e);
  return r;
}

static void rtr_case_changed(const char *change, const char *dgid, int want, double min_s,
                             double max_s) {
  struct rtr_args a = {.dev = "mlx5_2", .dgid = dgid, .gid = 3, .timeout_ms = 1000, change};
  struct result r[2];
  run_pair(rtr_child, &a, NULL, NULL, r);
  CHECK(r[0].err == want, "rtr to %s: %d (%s), want %d (%s)", dgid, r[0].err, strerror(r[0].err),
        want, strerror(want));
  CHECK(r[0].secs >= min_s && r[0].secs <= max_s, "after %.3f s, want %.1f..%.1f s", r[0].secs,
        min_s, max_s);
  CHECK(r[0].status == (want ? IBV_QPS_INIT : IBV_QPS_RTR), "qp state %d after RTR, want %s",
        r[0].status, want ? "INIT" : "RTR");
  tap_diag("rtr from mlx5_2 (xgbe2, 10.1.2.5) to %s: %s after %.3f s", dgid, strerror(r[0].err),
           r[0].secs);
}

static void rtr_case(const char *dgid, int want, double min_s, double max_s) {
  rtr_case_changed(NULL, dgid, want, min_s, max_s);
}

/* The kernel (6.1, measured with rdma_rxe in tests/rxe) resolves the remote
 * GID on the source GID's netdev even with no route: ARP nobody answers,
 * ETIMEDOUT after its 1 s resolve timeout, never ENETUNREACH. */
static void case_rtr_no_route(void) { rtr_case("::ffff:10.9.9.9", ETIMEDOUT, 0.9, 1.8); }

/* Breaks something under an open device (in host A), then RTR; undo after. */
static void rtr_case_with(const char *change, const char *undo, const char *dgid, int want,
                          double min_s, double max_s) {
  char cmd[600];
  rtr_case_changed(change, dgid, want, min_s, max_s);
  snprintf(cmd, sizeof cmd, "ip netns exec %s sh -c '%s' >/dev/null 2>&1", hosts[0].ns, undo);
  CHECK(!system(cmd), "%s failed", cmd);
}

/* Only the source GID's own netdev down fails at once, with ENETUNREACH. */
static void case_rtr_netdev_down(void) {
  rtr_case_with("ip link set xgbe2 down", "ip link set xgbe2 up", "::ffff:10.1.2.6", ENETUNREACH, 0,
                0.5);
}

/* The address behind the source GID removed: the kernel empties the entry. */
static void case_rtr_gid_removed(void) {
  rtr_case_with("ip addr del 10.1.2.5/24 dev xgbe2", "ip addr add 10.1.2.5/24 dev xgbe2",
                "::ffff:10.1.2.6", ENODATA, 0, 0.5);
}

/* A remote GID on another subnet but on the same L2 segment, whose owner
 * answers ARP: the kernel finds it on-link and RTR succeeds. */
static void case_rtr_cross_subnet_l2(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "ip -n %s addr add 10.1.9.6/24 dev xgbe2", hosts[1].ns);
  CHECK(!system(cmd), "%s failed", cmd);
  rtr_case("::ffff:10.1.9.6", 0, 0, 1.8);
  snprintf(cmd, sizeof cmd, "ip -n %s addr del 10.1.9.6/24 dev xgbe2", hosts[1].ns);
  CHECK(!system(cmd), "%s failed", cmd);
}
static void case_rtr_no_neighbour(void) { rtr_case("::ffff:10.1.2.77", ETIMEDOUT, 0.9, 1.8); }
/* Field story 5: a GID on the RDMA plane towards a bond0 (storage plane) GID. */
static void case_rtr_cross_plane(void) { rtr_case("::ffff:10.0.0.6", ETIMEDOUT, 0.9, 1.8); }
static void case_rtr_cross_plane_same_host(void) {
  rtr_case("::ffff:10.0.0.5", ETIMEDOUT, 0.9, 1.8);
}

static void case_ib_pingpong(void) { case_pingpong("mlx5_0", -1); }
static void case_roce_pingpong(void) { case_pingpong("mlx5_2", 3); }

int main(int argc, char **argv) {
  netns_mode = argc > 1 && !strcmp(argv[1], "netns");
  netns_sh = getenv("SV_NETNS_SH");
  char why[256] = "";
  bool broken = false;
  if (netns_mode) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "'%s' check > /dev/null", netns_sh ? netns_sh : "sv-netns.sh");
    if (geteuid()) snprintf(why, sizeof why, "needs root");
    else if (!netns_sh || system(cmd))
      snprintf(why, sizeof why, "cannot create network namespaces here");
  }
  struct {
    const char *name;
    void (*fn)(void);
    bool netns_only, ib, nft;
  } cases[] = {
    {"roce rc pingpong between two hosts", case_roce_pingpong, false, false},
    {"killed peer: RETRY_EXC_ERR after (retry_cnt+1) x timeout (14, 3)", case_killed_peer, false,
     false},
    {"killed peer, NCCL's timeout 20 / retry 7 scaled by 0.01", case_killed_peer_nccl, false,
     false},
    {"blackholed peer (nft drop): RETRY_EXC_ERR in bound", case_blackholed_peer, true, false, true},
    {"rtr to a GID with no route: ETIMEDOUT after about 1 s, as the kernel", case_rtr_no_route,
     true, false},
    {"rtr with the source GID's netdev down: ENETUNREACH at once", case_rtr_netdev_down, true,
     false},
    {"rtr with the source GID's address removed: ENODATA", case_rtr_gid_removed, true, false},
    {"rtr to another subnet on the same L2, ARP answered: succeeds", case_rtr_cross_subnet_l2, true,
     false},
    {"rtr to an on-link GID nobody answers: ETIMEDOUT in bound", case_rtr_no_neighbour, true,
     false},
    {"rtr across planes (story 5, other host): ETIMEDOUT", case_rtr_cross_plane, true, false},
    {"rtr across planes (story 5, own bond0): ETIMEDOUT", case_rtr_cross_plane_same_host, true,
     false},
    {"infiniband rc pingpong by LID between two hosts", case_ib_pingpong, false, true},
  };
  if (netns_mode && !*why) {
    atexit(netns_down);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    broken = netns_up(netns_name, "r", "roce-story5", "roce-story5-b") ||
             netns_up(ib_name, "i", "ib-hdr", "ib-hdr-b");
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].netns_only && !netns_mode) continue;
    if (*why) {
      tap_skip(cases[i].name, why);
      continue;
    }
    if (cases[i].nft && system("command -v nft > /dev/null")) {
      tap_skip(cases[i].name, "needs nft (nftables)");
      continue;
    }
    if (broken) { /* namespaces can be made here, yet these were not */
      tap_begin();
      CHECK(!broken, "building the namespaces from the fixtures failed (see stderr)");
      tap_end(cases[i].name);
      continue;
    }
    const char *ns = netns_mode ? (cases[i].ib ? ib_name : netns_name) : "";
    set_hosts(cases[i].ib ? "ib-hdr" : "roce-story5", cases[i].ib ? "ib-hdr-b" : "roce-story5-b",
              ns);
    if (cases[i].ib) {
      char fabric[1300];
      snprintf(fabric, sizeof fabric, "%s:%s", svt_fixture("ib-hdr"), svt_fixture("ib-hdr-b"));
      setenv("SOFTVERBS_FABRIC", fabric, 1);
    }
    TAP_CASE(cases[i].name, cases[i].fn);
    unsetenv("SOFTVERBS_FABRIC");
  }
  return tap_done();
}
