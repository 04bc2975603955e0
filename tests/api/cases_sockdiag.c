/* SPDX-License-Identifier: Apache-2.0 */
/* Socket diagnoses between two namespace hosts built for each case (root
 * only): host-a listens, host-b connects, joined by a veth pair. Each case
 * rebuilds a misconfiguration seen in the field and asserts that the
 * message names the cause and the fix, on each side that sees it. */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cases.h"

/* Both sides in private namespaces named host-a (receiver) and host-b
 * (sender), joined by a veth pair: recv_if on host-a, send_if on host-b,
 * both down and without addresses. 0, or -1 (reported). */
static int two_hosts(struct side *s, const char *recv_if, const char *send_if) {
  if (private_netns(s->role == ROLE_RECV ? "host-a" : "host-b")) {
    CHECK(0, "cannot make a private network namespace");
    ctl_send_int(s, -1);
    return -1;
  }
  if (s->role == ROLE_SEND) {
    ctl_send_int(s, getpid());
    return ctl_recv_int(s) == 0 ? 0 : -1;
  }
  long long pid = ctl_recv_int(s);
  int bad =
    pid < 0 || shell("ip link add %s type veth peer name %s netns %lld", recv_if, send_if, pid);
  CHECK(!bad, "cannot join the two hosts with a veth pair");
  ctl_send_int(s, bad ? -1 : 0);
  return bad ? -1 : 0;
}

/* Brings ifname up and waits for its carrier (the kernel reports a veth
 * running only once both ends are up, a moment later): 0 or -1. */
static int link_up(const char *ifname) {
  return shell("ip link set %s up && for i in $(seq 60); do ip link show %s | grep -q 'state UP' "
               "&& exit 0; sleep 0.05; done; exit 1",
               ifname, ifname);
}

/* The device called name, or 0. */
static int device_named(struct side *s, const char *name) {
  int n = 0;
  netload_devices(&s->nl, &n);
  for (int d = 0; d < n; d++) {
    struct netload_props p;
    netload_props(&s->nl, d, &p);
    if (!strcmp(p.name, name)) return d;
  }
  return 0;
}

/* Listens on s->dev and ships the handle: the listen comm, or NULL. */
static void *listen_and_ship(struct side *s) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL;
  int r = netload_listen(&s->nl, s->dev, handle, &lc);
  CHECK(r == ncclSuccess && lc, "listen returned %d", r);
  ctl_send_int(s, lc ? 0 : -1);
  if (lc) ctl_send(s, handle, sizeof(handle));
  return lc;
}

/* Receives the handle and connects until connect fails or gives a comm,
 * within limit_ms: connect's last result, the comm in *sc, the time taken
 * in *ms. -1 when the listener had no handle to give. */
static int connect_until_done(struct side *s, void **sc, long long *ms, int limit_ms) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  *sc = NULL;
  if (ctl_recv_int(s) != 0) return -1;
  ctl_recv(s, handle, sizeof(handle));
  long long t0 = ms_now();
  int r = 0;
  while (!r && !*sc && ms_now() - t0 < limit_ms) {
    r = netload_connect(&s->nl, s->dev, handle, sc);
    if (!r && !*sc) usleep(1000);
  }
  *ms = ms_now() - t0;
  return r;
}

/* A listener whose only usable interface is lo hands out 127.0.0.1: it
 * warns that other hosts cannot reach it, and a connector on another host
 * fails at once, naming the listener's host and the setting to fix there. */
void case_offers_loopback(struct side *s) {
  if (two_hosts(s, "eth0", "eth0")) return;
  /* host-a's end is up without any address: lo is all it can offer. */
  if (s->role == ROLE_SEND) shell("ip addr add 10.91.0.2/24 dev eth0");
  else shell("ip link set eth0 addrgenmode none");
  ctl_sync(s);
  CHECK(!link_up("eth0"), "eth0 does not come up");
  ctl_sync(s);
  if (side_open(s)) return;
  if (s->role == ROLE_RECV) {
    void *lc = listen_and_ship(s);
    const char *w = log_find(NCCL_LOG_WARN, "offers other hosts only");
    CHECK(w && strstr(w, "host-a offers other hosts only 127.0.0.1 (lo)") &&
            strstr(w, "loopback") &&
            strstr(w, "NCCL_SOCKET_IFNAME (unset) selects nothing routable") &&
            strstr(w, "eth0 (no address)") && strstr(w, "set NCCL_SOCKET_IFNAME to it"),
          "the listener must warn that it offers only its loopback address, with the fix: %s",
          w ? w : "none");
    ctl_recv_int(s); /* the connector is done */
    if (lc) netload_close_listen(&s->nl, lc);
  } else {
    void *sc;
    long long ms = 0;
    s->dev = device_named(s, "eth0");
    int r = connect_until_done(s, &sc, &ms, 20000);
    CHECK(r != ncclSuccess && !sc, "connect to host-a's loopback address must fail: %d", r);
    CHECK(ms < 3000, "it must fail at once, not after the connect timeout: %lld ms", ms);
    const char *w = log_find(NCCL_LOG_WARN, "cannot connect to host-a");
    CHECK(w && strstr(w, "host-a offered its loopback address (127.0.0.1<") &&
            strstr(w, "NCCL_SOCKET_IFNAME on host-a selects nothing routable") &&
            strstr(w, "On host-a, bring up the interface") && strstr(w, "eth0 (10.91.0.2/24)") &&
            !strstr(w, "no local interface"),
          "the connector must name host-a's loopback address and the fix on host-a: %s",
          w ? w : "none");
    ctl_send_int(s, 0);
  }
  side_close(s);
}

/* NCCL_SOCKET_IFNAME==lo names loopback exactly (a one-host job, a bench):
 * the listener says so in an INFO line, with no WARN, and the pair works. */
void case_chosen_loopback(struct side *s) {
  setenv("NCCL_SOCKET_IFNAME", "=lo", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 4096, 4096, 5) == 0, "a message over loopback");
  if (s->role == ROLE_RECV) {
    CHECK(!log_find(NCCL_LOG_WARN, "offers other hosts only"),
          "no WARN for a loopback address the user chose exactly: %s",
          log_find(NCCL_LOG_WARN, "offers other hosts only"));
    const char *i = log_find(NCCL_LOG_INFO, "as NCCL_SOCKET_IFNAME==lo asks");
    CHECK(i && strstr(i, "other hosts cannot"), "an INFO line says what it means: %s",
          i ? i : "none");
  }
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* Only 169.254.x.x on the link: the listener says that only hosts on the
 * same link reach it; a peer on that link still connects. */
void case_offers_link_local_v4(struct side *s) {
  if (two_hosts(s, "eth0", "eth0")) return;
  shell("ip addr add 169.254.7.%d/16 dev eth0", s->role == ROLE_RECV ? 1 : 2);
  ctl_sync(s);
  CHECK(!link_up("eth0"), "eth0 does not come up");
  ctl_sync(s);
  if (side_open(s)) return;
  s->dev = device_named(s, "eth0");
  void *comm;
  if (pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 1 << 16, 1 << 16, 9) == 0, "transfer on the shared link");
  if (s->role == ROLE_RECV) {
    const char *w = log_find(NCCL_LOG_WARN, "offers other hosts only");
    CHECK(w && strstr(w, "169.254.7.1 (eth0)") && strstr(w, "link-local") &&
            strstr(w, "same link") && strstr(w, "set NCCL_SOCKET_IFNAME to it"),
          "the listener must warn that it offers only a link-local address: %s", w ? w : "none");
  }
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* IPv6 link-local only (fe80::/64 on each end, nothing else): the kernel
 * refuses such an address without the interface of its link (EINVAL), so
 * the connector tries it through each local link, the listener's interface
 * name first. host-b also has a link that leads nowhere (eth9). */
void case_link_local_v6_pair(struct side *s) {
  if (two_hosts(s, "eth0", "eth0")) return;
  bool is_recv = s->role == ROLE_RECV;
  int bad = shell("ip link set eth0 addrgenmode none && ip -6 addr add fe80::%s/64 dev eth0 nodad",
                  is_recv ? "a" : "b");
  if (!is_recv)
    bad |= shell("ip link add eth9 type veth peer name eth9p && ip link set eth9 addrgenmode none "
                 "&& ip link set eth9p addrgenmode none && ip -6 addr add fe80::9/64 dev eth9 "
                 "nodad && ip link set eth9p up");
  CHECK(!bad, "cannot give the hosts their link-local addresses");
  ctl_sync(s);
  CHECK(!link_up("eth0") && (is_recv || !link_up("eth9")), "the links do not come up");
  ctl_sync(s);
  if (side_open(s)) return;
  s->dev = device_named(s, "eth0");
  void *comm;
  long long t0 = ms_now();
  if (pair_open(s, &comm)) return;
  CHECK(ms_now() - t0 < 5000, "link-local connect took %lld ms", ms_now() - t0);
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 10) == 0, "transfer over IPv6 link-local");
  if (is_recv) {
    const char *w = log_find(NCCL_LOG_WARN, "offers other hosts only");
    CHECK(w && strstr(w, "fe80::a (eth0)") && strstr(w, "same link"),
          "the listener must say it offers only a link-local address: %s", w ? w : "none");
  } else {
    CHECK(!log_find(NCCL_LOG_WARN, "EINVAL") && !log_find(NCCL_LOG_INFO, "EINVAL"),
          "no attempt may fail for want of a scope: %s", log_find(-1, "EINVAL"));
    CHECK(log_find(NCCL_LOG_INFO, "handshake (connect) with host-a ([fe80::a%eth0]<"),
          "the connection must go through eth0, the listener's interface name");
  }
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* One failed connect to host-a's eth1 address under the route condition
 * host-b sets up (setup, undone by undo): the WARN must hold every needle. */
static void one_failure(struct side *s, const char *setup, const char *undo,
                        const char *const *needles, long long max_ms) {
  log_clear();
  if (s->role == ROLE_RECV) {
    void *lc = listen_and_ship(s);
    bool is_refused = !setup;
    if (lc && is_refused) netload_close_listen(&s->nl, lc); /* the listener is gone */
    ctl_sync(s);
    ctl_recv_int(s); /* the connector is done */
    if (lc && !is_refused) netload_close_listen(&s->nl, lc);
    return;
  }
  CHECK(!setup || !shell("%s", setup), "cannot set up: %s", setup);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *sc = NULL;
  long long ms = 0;
  if (ctl_recv_int(s) == 0) ctl_recv(s, handle, sizeof(handle));
  ctl_sync(s);
  long long t0 = ms_now();
  int r = 0;
  while (!r && !sc && ms_now() - t0 < 20000) r = netload_connect(&s->nl, s->dev, handle, &sc);
  ms = ms_now() - t0;
  CHECK(r != ncclSuccess && !sc, "connect must fail (%s): %d", setup ? setup : "refused", r);
  CHECK(ms <= max_ms, "it took %lld ms", ms);
  const char *w = log_find(NCCL_LOG_WARN, "cannot connect to host-a");
  for (int i = 0; needles[i]; i++)
    CHECK(w && strstr(w, needles[i]), "the WARN must say \"%s\": %s", needles[i], w ? w : "none");
  CHECK(w && !strstr(w, "Check that the peer process is alive"), "no generic checklist: %s",
        w ? w : "none");
  if (undo) shell("%s", undo);
  ctl_send_int(s, 0);
}

/* Each way a connect fails says its own cause and fix: the listener is
 * gone (ECONNREFUSED), no route (EHOSTUNREACH), no answer (a dropped SYN),
 * an address the kernel refuses (EINVAL, a blackhole route). */
void case_connect_causes(struct side *s) {
  if (two_hosts(s, "eth1", "eth1")) return;
  shell("ip addr add 10.92.0.%d/24 dev eth1", s->role == ROLE_RECV ? 1 : 2);
  ctl_sync(s);
  CHECK(!link_up("eth1"), "eth1 does not come up");
  ctl_sync(s);
  setenv("NCCL_DIAG_CONNECT_TIMEOUT_MS", "1500", 1);
  if (side_open(s)) return;
  s->dev = device_named(s, "eth1");
  const char *refused[] = {"ECONNREFUSED", "nothing listens there any more",
                           "process on host-a that handed out this address has exited or was "
                           "restarted",
                           "host-a's log", NULL};
  one_failure(s, NULL, NULL, refused, 6000);
  const char *no_route[] = {"EHOSTUNREACH", "no route", "NCCL_SOCKET_IFNAME on host-a",
                            "eth1 (10.92.0.2/24)", NULL};
  one_failure(s, "ip route add unreachable 10.92.0.1/32", "ip route del unreachable 10.92.0.1/32",
              no_route, 6000);
  const char *no_answer[] = {"no answer after", "firewall drops them", "allow TCP", NULL};
  one_failure(s, "ip neigh replace 10.92.0.1 lladdr 02:00:00:00:00:99 dev eth1 nud permanent",
              "ip neigh del 10.92.0.1 dev eth1", no_answer, 6000);
  const char *invalid[] = {"EINVAL", "blackhole route", "ip route get", NULL};
  one_failure(s, "ip route add blackhole 10.92.0.1/32", "ip route del blackhole 10.92.0.1/32",
              invalid, 1000);
  side_close(s);
}

/* The network both hosts share is eno1 on host-a and eth0 on host-b, and
 * host-a advertises eth1 first, which host-b reaches only in name (field
 * story 1 with other names). Both sides advise the one setting that works
 * on every node, NCCL_SOCKET_IFNAME=eno1,eth0; host-a also hears its own. */
void case_job_ifname(struct side *s) {
  if (two_hosts(s, "eno1", "eth0")) return;
  bool is_recv = s->role == ROLE_RECV;
  int bad = shell("ip addr add 10.93.8.%d/22 dev %s", is_recv ? 1 : 2, is_recv ? "eno1" : "eth0");
  bad |= shell("ip link add eth1 type veth peer name eth1%s && ip addr add 10.93.12.%d/22 dev "
               "eth1 && ip link set eth1%s up",
               is_recv ? "x" : "y", is_recv ? 1 : 2, is_recv ? "x" : "y");
  CHECK(!bad, "cannot build the hosts' networks");
  ctl_sync(s);
  CHECK(!link_up(is_recv ? "eno1" : "eth0") && !link_up("eth1"), "the links do not come up");
  ctl_sync(s);
  if (side_open(s)) return;
  s->dev = device_named(s, is_recv ? "eth1" : "eth0");
  void *comm;
  if (pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 1 << 16, 1 << 16, 11) == 0, "transfer through the shared network");
  const char *w = log_find(NCCL_LOG_WARN, is_recv ? "could not reach" : "connected to host-a");
  if (is_recv)
    CHECK(w && strstr(w, "On host-a set NCCL_SOCKET_IFNAME=eno1 ") &&
            strstr(w, "for the whole job, NCCL_SOCKET_IFNAME=eno1,eth0 works on every node") &&
            !strstr(w, "=lo") && !strstr(w, ",lo"),
          "the listener must give its own setting and the job's: %s", w ? w : "none");
  else
    CHECK(w && strstr(w, "set NCCL_SOCKET_IFNAME=eno1,eth0 on every node") &&
            strstr(w, "eno1 on host-a, eth0 here") && !strstr(w, "=lo") && !strstr(w, ",lo"),
          "the connector must give the setting that works on every node: %s", w ? w : "none");
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

/* Descriptors this process has open (the directory's own one left out). */
static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  while (d && readdir(d)) n++;
  if (d) closedir(d);
  return n - 3;
}

/* Descriptors for this process: the limits set to limit (soft) and hard,
 * then /dev/null opened until none is left below the limit, and keep of
 * those closed again; the number of them still open. */
static int fds_exhaust(int limit, int hard, int keep, int *fds, int cap) {
  struct rlimit rl = {(rlim_t)limit, (rlim_t)hard};
  if (setrlimit(RLIMIT_NOFILE, &rl)) return -1;
  int n = 0;
  while (n < cap) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;
    fds[n++] = fd;
  }
  while (keep-- > 0 && n > 0) close(fds[--n]);
  return n;
}

static void fds_restore(int *fds, int n, const struct rlimit *saved) {
  while (n > 0) close(fds[--n]);
  setrlimit(RLIMIT_NOFILE, saved);
}

/* Out of file descriptors: the connector whose data sockets run out says
 * how many are open against which limits, what one connection costs and
 * where to raise the hard limit (it equals the soft one), and the
 * listener hears why the connection ended; a connector without a single
 * descriptor fails at once and names ulimit -n; a listener that runs out
 * while accepting tells the connector. */
void case_fd_exhaustion(struct side *s) {
  if (two_hosts(s, "eth1", "eth1")) return;
  shell("ip addr add 10.94.0.%d/24 dev eth1", s->role == ROLE_RECV ? 1 : 2);
  ctl_sync(s);
  CHECK(!link_up("eth1"), "eth1 does not come up");
  ctl_sync(s);
  setenv("NCCL_SOCKET_NTHREADS", "2", 1);
  setenv("NCCL_NSOCKS_PERTHREAD", "4", 1);
  if (side_open(s)) return;
  s->dev = device_named(s, "eth1");
  struct rlimit saved;
  getrlimit(RLIMIT_NOFILE, &saved);
  int fds[256], nfd, limit = open_fds() + 64;
  char want[160];
  void *comm = NULL;
  long long ms = 0;

  /* The connector without a single free descriptor, soft below hard. */
  if (s->role == ROLE_RECV) {
    void *lc = listen_and_ship(s);
    ctl_sync(s);
    if (lc) netload_close_listen(&s->nl, lc);
  } else {
    nfd = fds_exhaust(limit, (int)saved.rlim_max, 0, fds, 256);
    int r = connect_until_done(s, &comm, &ms, 10000);
    fds_restore(fds, nfd, &saved);
    CHECK(r != ncclSuccess && ms < 1000, "connect must fail at once: %d after %lld ms", r, ms);
    const char *w = log_find(NCCL_LOG_WARN, "cannot open a socket");
    snprintf(want, sizeof(want), "ulimit -n %llu", (unsigned long long)saved.rlim_max);
    CHECK(w && strstr(w, "cannot connect to host-a") && strstr(w, "EMFILE") && strstr(w, want),
          "the connector must say it is out of descriptors and how to raise the limit: %s",
          w ? w : "none");
    ctl_sync(s);
  }
  log_clear();

  /* The listener: room for the control socket, none for data sockets. */
  if (s->role == ROLE_RECV) {
    void *lc = listen_and_ship(s);
    nfd = fds_exhaust(limit, (int)saved.rlim_max, 1, fds, 256);
    long long t0 = ms_now();
    int r = 0;
    while (lc && !r && !comm && ms_now() - t0 < 10000) r = netload_accept(&s->nl, lc, &comm);
    fds_restore(fds, nfd, &saved);
    CHECK(r != ncclSuccess, "accept must fail: %d", r);
    const char *w = log_find(NCCL_LOG_WARN, "accept on device eth1");
    CHECK(w && strstr(w, "while connecting host-b") && strstr(w, "EMFILE") &&
            strstr(w, "each connection costs 9") && strstr(w, "ulimit -n"),
          "the listener must say it ran out of descriptors: %s", w ? w : "none");
    ctl_sync(s);
    if (lc) netload_close_listen(&s->nl, lc);
  } else {
    int r = connect_until_done(s, &comm, &ms, 10000);
    void *req = NULL, *mh = NULL;
    int done = 0;
    static char buf[64] = "x";
    long long t0 = ms_now();
    if (!r && comm) r = netload_reg_mr(&s->nl, comm, buf, sizeof(buf), NCCL_PTR_HOST, &mh);
    /* Sends complete into the kernel's buffer until the listener's end is
     * gone: the first one that fails must give the listener's reason. */
    while (!r && comm && ms_now() - t0 < 10000) {
      req = NULL;
      done = 0;
      while (!r && !req && ms_now() - t0 < 10000)
        r = netload_isend(&s->nl, comm, buf, sizeof(buf), 0, mh, &req);
      while (!r && req && !done && ms_now() - t0 < 10000)
        r = netload_test(&s->nl, req, &done, NULL);
      usleep(10000);
    }
    CHECK(r != ncclSuccess, "the connection must fail: %d", r);
    const char *w = log_find(NCCL_LOG_WARN, "could not accept this connection's sockets");
    CHECK(w && strstr(w, "host-a") && strstr(w, "EMFILE"),
          "the connector must hear why the listener ended the connection: %s", w ? w : "none");
    if (comm) netload_close_send(&s->nl, comm);
    ctl_sync(s);
  }
  log_clear();

  /* The connector: room for its control socket and one data socket of 8,
   * soft limit = hard limit (last: without CAP_SYS_RESOURCE the hard
   * limit cannot be raised again). */
  if (s->role == ROLE_RECV) {
    void *lc = listen_and_ship(s);
    long long t0 = ms_now();
    int r = 0;
    while (lc && !r && !comm && ms_now() - t0 < 10000) r = netload_accept(&s->nl, lc, &comm);
    CHECK(r != ncclSuccess && ms_now() - t0 < 5000, "accept must fail soon: %d after %lld ms", r,
          ms_now() - t0);
    const char *w = log_find(NCCL_LOG_WARN, "gave up its connection");
    CHECK(w && strstr(w, "host-b (10.94.0.2<") && strstr(w, "could not open data socket 1 of 8") &&
            strstr(w, "EMFILE") && strstr(w, "LimitNOFILE"),
          "the listener must hear why the connector gave up: %s", w ? w : "none");
    ctl_sync(s);
    if (lc) netload_close_listen(&s->nl, lc);
  } else {
    nfd = fds_exhaust(limit, limit, 2, fds, 256);
    int r = connect_until_done(s, &comm, &ms, 10000);
    fds_restore(fds, nfd, &saved);
    CHECK(r != ncclSuccess && ms < 3000, "connect must fail at once: %d after %lld ms", r, ms);
    const char *w = log_find(NCCL_LOG_WARN, "data socket 1 of 8");
    snprintf(want, sizeof(want), "this process has %d file descriptors open and may have %d", limit,
             limit);
    CHECK(w && strstr(w, "EMFILE") && strstr(w, want) &&
            strstr(w, "each connection costs 9 on each side") && strstr(w, "LimitNOFILE=") &&
            strstr(w, "--ulimit nofile") && strstr(w, "cannot raise it"),
          "the connector must count its descriptors and name the hard limit's settings (%s): %s",
          want, w ? w : "none");
    ctl_sync(s);
  }
  side_close(s);
}

/* A message larger than its receive. With the same NCCL, plugin and
 * settings on both hosts the application's own calls disagree, and the
 * message says so; with NCCL_PROTO set on one host only, that difference
 * is named instead. Both sides read the cause (the receiver through the
 * sender's notice). RDMA only until the TCP receiver words it the same
 * way (see report_size_mismatch). */
static void size_mismatch(struct side *s, bool is_proto_skewed) {
  if (is_proto_skewed && s->role == ROLE_SEND) setenv("NCCL_PROTO", "Simple", 1);
  if (side_open(s)) return;
  void *comm;
  if (pair_open(s, &comm)) return;
  int r = xfer_one(s, comm, 2000, 1000, 12);
  CHECK(r != 0, "a message larger than its receive must fail: %d", r);
  const char *w = log_find(NCCL_LOG_WARN, "holds 1000 bytes");
  bool says_app = w &&
                  strstr(w, "are the same on host-b and host-a, so the application posts "
                            "mismatched sizes") &&
                  strstr(w, "same sequence of sends and receives");
  bool says_proto = w && strstr(w, "NCCL_PROTO: Simple on host-b, unset on host-a") &&
                    strstr(w, "Make them the same on every node");
  if (is_proto_skewed)
    CHECK(says_proto && !strstr(w, "application"), "the differing setting must be named: %s",
          w ? w : "none");
  else
    CHECK(says_app && !strstr(w, "NCCL_PROTO:"),
          "with the same settings the application's calls must be named: %s", w ? w : "none");
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}

void case_size_mismatch_same(struct side *s) {
  if (!private_uts(s->role == ROLE_RECV ? "host-a" : "host-b")) size_mismatch(s, false);
}

void case_size_mismatch_proto(struct side *s) {
  if (!private_uts(s->role == ROLE_RECV ? "host-a" : "host-b")) size_mismatch(s, true);
}

/* NCCL_SOCKET_IFNAME=usb0 on two hosts whose usb0 holds only 169.254.x.x,
 * each on its own link (a BMC's USB network), while eth0 joins them with
 * routable addresses and the default route. The listener names eth0 as
 * the setting that works; the connector, whose attempt through its own
 * usb0 goes unanswered, says first that the address is link-local on
 * another link, not that a firewall drops it or that the peer exited. */
void case_forced_link_local_if(struct side *s) {
  if (two_hosts(s, "eth0", "eth0")) return;
  bool is_recv = s->role == ROLE_RECV;
  int bad = shell("ip addr add 10.91.0.%d/24 dev eth0 && ip link add usb0 type veth peer name "
                  "usb0p && ip addr add 169.254.7.%d/16 dev usb0 && ip link set usb0p up && ip "
                  "link set usb0 up",
                  is_recv ? 1 : 2, is_recv ? 1 : 2);
  CHECK(!bad, "cannot give the hosts eth0 and usb0");
  ctl_sync(s);
  CHECK(!link_up("eth0") && !shell("ip route add default dev eth0"), "eth0 does not come up");
  ctl_sync(s);
  setenv("NCCL_SOCKET_IFNAME", "usb0", 1);
  setenv("NCCL_DIAG_CONNECT_TIMEOUT_MS", "3000", 1);
  if (side_open(s)) return;
  s->dev = device_named(s, "usb0");
  if (is_recv) {
    void *lc = listen_and_ship(s);
    const char *w = log_find(NCCL_LOG_WARN, "offers other hosts only");
    CHECK(w && strstr(w, "169.254.7.1 (usb0)") && strstr(w, "link-local") &&
            strstr(w, "set NCCL_SOCKET_IFNAME=eth0 (here eth0 has 10.91.0.1/24, is up and holds "
                      "the default route) on every node"),
          "the listener names the interface that works: %s", w ? w : "none");
    ctl_recv_int(s); /* the connector is done */
    if (lc) netload_close_listen(&s->nl, lc);
  } else {
    void *sc;
    long long ms = 0;
    int r = connect_until_done(s, &sc, &ms, 20000);
    CHECK(r != ncclSuccess && !sc, "connect to host-a's usb0 address must fail: %d", r);
    const char *w = log_find(NCCL_LOG_WARN, "cannot connect to host-a");
    CHECK(w && warn_leads_with(w, "host-a offered a link-local address", 200) &&
            strstr(w, "NCCL_SOCKET_IFNAME=eth0"),
          "the connector leads with the link-local cause and names eth0: %s", w ? w : "none");
    CHECK(w && !strstr(w, "firewall") && !strstr(w, "exited"),
          "no firewall or exited peer for a link-local address on another link: %s",
          w ? w : "none");
    ctl_send_int(s, 0);
  }
  side_close(s);
}
