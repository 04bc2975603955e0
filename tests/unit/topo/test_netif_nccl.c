/* SPDX-License-Identifier: Apache-2.0 */
/* NCCL's own interface choice (topo/netif_nccl.c), table-tested on
 * interface lists written as getifaddrs gives them: the ib* preference,
 * IPv4 before IPv6, the docker/lo/virbr fallbacks, NCCL_SOCKET_FAMILY,
 * NCCL_SOCKET_IFNAME (a one-character value is ignored, as NCCL does). */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "tap.h"
#include "topo/netif.h"

/* "lo up 127.0.0.1/8 ::1/128; eth0 down 10.0.0.1/24; ..." */
static void build(struct netif_list *l, struct netif *room, const char *text) {
  char buf[512], *save = NULL;
  snprintf(buf, sizeof(buf), "%s", text);
  memset(l, 0, sizeof(*l));
  l->ifs = room;
  for (char *ifs = strtok_r(buf, ";", &save); ifs; ifs = strtok_r(NULL, ";", &save)) {
    struct netif *n = &room[l->n++];
    memset(n, 0, sizeof(*n));
    char *s2 = NULL, *tok = strtok_r(ifs, " ", &s2);
    snprintf(n->name, sizeof(n->name), "%s", tok);
    tok = strtok_r(NULL, " ", &s2);
    n->up = strcmp(tok, "down") != 0;
    n->running = !strcmp(tok, "up");
    while ((tok = strtok_r(NULL, " ", &s2))) ipaddr_parse(&n->addr[n->naddr++], tok);
  }
}

/* "veth3=169.254.12.5 enp6s0=10.77.0.11" */
static void chosen(const struct netif_list *l, const struct netif_nccl *m, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int j = 0; j < m->n && o < cap; j++) {
    char a[64];
    ipaddr_str(&l->ifs[m->idx[j]].addr[m->addr[j]], a, sizeof(a));
    o += (size_t)snprintf(buf + o, cap - o, "%s%s=%s", j ? " " : "", l->ifs[m->idx[j]].name, a);
  }
}

struct row {
  const char *ifs, *ifname;
  int family;
  const char *want, *rule;
};

static const struct row rows[] = {
  {"lo up 127.0.0.1/8 ::1/128;veth3 up 169.254.12.5/16;enp6s0 up 10.77.0.11/24", NULL, AF_UNSPEC,
   "veth3=169.254.12.5 enp6s0=10.77.0.11", "interface order"},
  {"lo up 127.0.0.1/8;eno1 up 10.3.0.43/24 fe80::3/64;ib0 nocarrier;ib1 up fe80::b1/64", NULL,
   AF_UNSPEC, "ib1=fe80::b1", "the ib* preference"},
  {"eth0 up fd00::1/64;eth1 up 10.0.0.1/24 fe80::1/64", NULL, AF_UNSPEC,
   "eth1=10.0.0.1 eth0=fd00::1", "interface order"},
  {"eth0 up 10.0.0.1/24 fe80::a/64;eth1 up fd00::1/64", NULL, AF_INET6, "eth0=fe80::a eth1=fd00::1",
   "interface order"},
  {"lo up 127.0.0.1/8 ::1/128;eth0 down 10.0.0.1/24", NULL, AF_UNSPEC, "lo=127.0.0.1",
   "the lo* fallback"},
  {"lo up 127.0.0.1/8;docker0 up 172.17.0.1/16;virbr0 up 192.168.122.1/24", NULL, AF_UNSPEC,
   "docker0=172.17.0.1", "the docker* fallback"},
  {"lo up ::1/128;virbr0 up 192.168.122.1/24", NULL, AF_INET6, "", "nothing"},
  {"eth0 up 10.0.0.1/24;eth1 up 10.1.0.1/24", "=eth1", AF_UNSPEC, "eth1=10.1.0.1",
   "NCCL_SOCKET_IFNAME==eth1"},
  {"eth0 up 10.0.0.1/24;eth1 up 10.1.0.1/24", "e", AF_UNSPEC, "eth0=10.0.0.1 eth1=10.1.0.1",
   "interface order"},
  {"eth0 up 10.0.0.1/24;ib0 up 192.168.1.1/24", "^ib", AF_INET, "eth0=10.0.0.1",
   "NCCL_SOCKET_IFNAME=^ib"},
};

static void test_rows(void) {
  struct netif room[8];
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    struct netif_list l;
    struct netif_nccl m;
    char got[256];
    build(&l, room, rows[i].ifs);
    netif_nccl_choose(&l, rows[i].ifname, rows[i].family, &m);
    chosen(&l, &m, got, sizeof(got));
    CHECK(!strcmp(got, rows[i].want) && !strcmp(m.rule, rows[i].rule),
          "row %zu: NCCL takes \"%s\" by %s, expected \"%s\" by %s", i, got, m.rule, rows[i].want,
          rows[i].rule);
  }
}

static void test_why(void) {
  struct netif room[8];
  struct netif_list l;
  struct netif_nccl m;
  build(&l, room, "lo up 127.0.0.1/8;eno1 up 10.3.0.43/24;ib0 nocarrier;ib1 up fe80::b1/64");
  netif_nccl_choose(&l, NULL, AF_UNSPEC, &m);
  CHECK(!strcmp(m.why[1], "an ib* interface comes first") && !strcmp(m.why[2], "no carrier") &&
          !m.why[3][0] && netif_nccl_position(&m, 3) == 0 && netif_nccl_position(&m, 1) == -1,
        "why: eno1 \"%s\", ib0 \"%s\", ib1 \"%s\"", m.why[1], m.why[2], m.why[3]);
}

int main(void) {
  TAP_CASE("NCCL's interface order: ib*, IPv4 first, fallbacks, family, NCCL_SOCKET_IFNAME",
           test_rows);
  TAP_CASE("why NCCL leaves an interface out", test_why);
  return tap_done();
}
