/* SPDX-License-Identifier: Apache-2.0 */
/* Socket diagnoses between two namespace hosts built for each case (root
 * only): host-a listens, host-b connects, joined by a veth pair. Each case
 * rebuilds a misconfiguration seen in the field and asserts that the
 * message names the cause and the fix, on each side that sees it. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
  const char *refused[] = {"ECONNREFUSED", "Nothing listens there any more",
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
