/* SPDX-License-Identifier: Apache-2.0 */
/* Interface choice and candidate addresses, on interfaces made for the
 * case inside private network namespaces (root only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cases.h"

/* Loads the plugin in a fresh process with one environment setting and
 * returns the device names it offers, space separated. */
static void devices_with(struct side *s, const char *var, const char *val, char *out, size_t cap,
                         char *warn, size_t wcap) {
  int pfd[2];
  if (pipe(pfd)) return;
  pid_t p = fork();
  if (p == 0) {
    close(pfd[0]);
    if (var) setenv(var, val, 1);
    struct side t = {ROLE_SINGLE, -1, s->abi};
    char res[2048] = "";
    if (side_open(&t) == 0) {
      int n = 0;
      netload_devices(&t.nl, &n);
      for (int d = 0; d < n; d++) {
        struct netload_props pr;
        netload_props(&t.nl, d, &pr);
        strncat(res, " ", sizeof(res) - strlen(res) - 1);
        strncat(res, pr.name, sizeof(res) - strlen(res) - 1);
      }
      strncat(res, " |", sizeof(res) - strlen(res) - 1);
      const char *w = log_find(NCCL_LOG_WARN, "");
      const char *i = log_find(NCCL_LOG_INFO, "socket interfaces");
      strncat(res, w ? w : (i ? i : ""), sizeof(res) - strlen(res) - 1);
    }
    if (write(pfd[1], res, strlen(res) + 1) < 0) _exit(1);
    _exit(0);
  }
  close(pfd[1]);
  char buf[2048] = "";
  ssize_t n = read(pfd[0], buf, sizeof(buf) - 1);
  buf[n > 0 ? n : 0] = 0;
  close(pfd[0]);
  waitpid(p, NULL, 0);
  char *bar = strchr(buf, '|');
  if (bar) *bar++ = 0;
  snprintf(out, cap, "%s ", buf);
  snprintf(warn, wcap, "%s", bar ? bar : "");
}

static int has(const char *list, const char *name) {
  char pat[64];
  snprintf(pat, sizeof(pat), " %s ", name);
  return strstr(list, pat) != NULL;
}

void case_ifname_grammar(struct side *s) {
  if (private_netns(NULL)) {
    CHECK(0, "cannot make a private network namespace");
    return;
  }
  int bad = 0;
  bad |= shell("ip link add eth5 type veth peer name eth50");
  bad |= shell("ip addr add 10.5.0.1/24 dev eth5 && ip addr add 10.50.0.1/24 dev eth50");
  bad |= shell(
    "ip link add docker0 type veth peer name vethd0 && ip addr add 172.17.0.1/16 dev docker0");
  bad |= shell(
    "ip link add eth6 type veth peer name eth6p && ip -6 addr add fd00:6::1/64 dev eth6 nodad");
  bad |= shell("for i in eth5 eth50 docker0 vethd0 eth6 eth6p; do ip link set $i up; done");
  /* A veth runs (has carrier) a moment after both ends are up; until then
   * the automatic choice rightly skips it, and a loaded host makes that
   * moment long. */
  bad |= shell("for i in eth5 eth50 docker0 eth6; do for t in $(seq 200); do ip link show $i | "
               "grep -q 'state UP' && break; sleep 0.05; done; done");
  CHECK(!bad, "could not build the test interfaces");
  char d[2048], w[2048];

  devices_with(s, NULL, NULL, d, sizeof(d), w, sizeof(w));
  CHECK(has(d, "eth5") && has(d, "eth50") && has(d, "eth6"), "auto: %s", d);
  CHECK(!has(d, "lo") && !has(d, "docker0") && !has(d, "vethd0"), "auto took a skipped one: %s", d);
  CHECK(strstr(w, "lo (loopback)") && strstr(w, "docker0 (container bridge)"),
        "the INFO line must say why lo and docker0 were not chosen: %s", w);

  devices_with(s, "NCCL_SOCKET_IFNAME", "eth5", d, sizeof(d), w, sizeof(w));
  CHECK(has(d, "eth5") && has(d, "eth50") && !has(d, "eth6"), "prefix eth5: %s", d);
  devices_with(s, "NCCL_SOCKET_IFNAME", "=eth5", d, sizeof(d), w, sizeof(w));
  CHECK(has(d, "eth5") && !has(d, "eth50"), "exact =eth5: %s", d);
  devices_with(s, "NCCL_SOCKET_IFNAME", "^eth5,lo", d, sizeof(d), w, sizeof(w));
  CHECK(!has(d, "eth5") && !has(d, "eth50") && !has(d, "lo") && has(d, "docker0"), "^eth5,lo: %s",
        d);
  devices_with(s, "NCCL_SOCKET_IFNAME", "^=eth5", d, sizeof(d), w, sizeof(w));
  CHECK(!has(d, "eth5") && has(d, "eth50"), "^=eth5: %s", d);
  devices_with(s, "NCCL_SOCKET_FAMILY", "AF_INET6", d, sizeof(d), w, sizeof(w));
  CHECK(has(d, "eth6") && !has(d, "eth5"), "AF_INET6: %s", d);
  devices_with(s, "NCCL_SOCKET_IFNAME", "=eth9", d, sizeof(d), w, sizeof(w));
  CHECK(strspn(d, " ") == strlen(d), "=eth9 matched %s", d);
  CHECK(strstr(w, "NCCL_SOCKET_IFNAME==eth9") && strstr(w, "eth5 (10.5.0.1/24)"),
        "no-match WARN must list what exists: %s", w);

  /* Nothing regular up: the container bridge is better than nothing. */
  shell("for i in eth5 eth50 eth6 eth6p; do ip link set $i down; done");
  devices_with(s, NULL, NULL, d, sizeof(d), w, sizeof(w));
  CHECK(has(d, "docker0") && !has(d, "lo"), "fallback: %s", d);
  CHECK(strstr(w, "nothing better is up"), "the fallback is not explained: %s", w);
}

/* Field story 1: the peer's device interface is on a network this host
 * reaches only in name (same subnet, other wires). The connector falls back
 * to an address that works and says which failed, which worked and what
 * NCCL_SOCKET_IFNAME would avoid it. */
void case_detour(struct side *s) {
  if (private_netns(s->role == ROLE_RECV ? "host-a" : "host-b")) {
    CHECK(0, "cannot make a private network namespace");
    ctl_send_int(s, -1);
    return;
  }
  int bad = 0;
  if (s->role == ROLE_SEND) {
    ctl_send_int(s, getpid());
    ctl_recv_int(s); /* the receiver has made our bond0 */
    bad |= shell("ip addr add 10.37.8.72/22 dev bond0 && ip link set bond0 up");
    bad |=
      shell("ip link add eth1 type veth peer name eth1y && ip addr add 10.37.12.72/22 dev eth1");
    bad |= shell("ip link set eth1 up && ip link set eth1y up");
  } else {
    long long pid = ctl_recv_int(s);
    bad |=
      shell("ip link add eth1 type veth peer name eth1x && ip addr add 10.37.12.78/22 dev eth1");
    bad |= shell("ip link set eth1 up && ip link set eth1x up");
    bad |= shell("ip link add bond0 type veth peer name bond0 netns %lld", pid);
    bad |= shell("ip addr add 10.37.8.78/22 dev bond0 && ip link set bond0 up");
    ctl_send_int(s, 0);
  }
  CHECK(!bad, "could not build the two hosts' networks");
  ctl_sync(s);
  if (side_open(s)) return;
  int n = 0;
  netload_devices(&s->nl, &n);
  for (int d = 0; d < n; d++) {
    struct netload_props p;
    netload_props(&s->nl, d, &p);
    if (!strcmp(p.name, s->role == ROLE_RECV ? "eth1" : "bond0")) s->dev = d;
  }
  void *comm;
  if (pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 4) == 0, "transfer through the detour");
  if (s->role == ROLE_SEND) {
    const char *w = log_find(NCCL_LOG_WARN, "after");
    CHECK(w && strstr(w, "10.37.12.78") && strstr(w, "10.37.8.78"),
          "both addresses must be named: %s", w ? w : "none");
    CHECK(w && strstr(w, "NCCL_SOCKET_IFNAME=bond0") && strstr(w, "host-a"),
          "the fix and the peer must be named: %s", w ? w : "none");
  } else {
    /* The host whose setting is wrong hears it too, from the connector's
     * hello. */
    const char *w = log_find(NCCL_LOG_WARN, "could not reach this host's");
    CHECK(w && strstr(w, "host-b could not reach this host's 10.37.12.78<") &&
            strstr(w, "(eth1): ") && strstr(w, "connected to 10.37.8.78 (bond0) instead") &&
            strstr(w, "On host-a set NCCL_SOCKET_IFNAME=bond0 (unset now)"),
          "the listener must name its unreachable address and the setting to change: %s",
          w ? w : "none");
  }
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  side_close(s);
}
