/* SPDX-License-Identifier: Apache-2.0 */
/* Interfaces and RDMA ports across hosts: link layers, GID types and
 * indices, active MTUs, P_Keys, and the interface NCCL's sockets use. One
 * host per node (its first rank): these are the node's facts. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "tools/probe/compare.h"

typedef void (*fact_fn)(const struct probe_facts *f, char *buf, size_t cap);

/* Groups the hosts by one fact ("" = no opinion, left out). */
static void group_by(const struct probe_run *r, fact_fn fn, struct cmp_groups *gs) {
  for (int k = 0; k < r->world; k++) {
    if (!cmp_host_first(r, k)) continue;
    char v[256];
    fn(&r->facts[k], v, sizeof(v));
    if (v[0]) cmp_add(gs, v, r->facts[k].host);
  }
}

/* A fact of every RDMA port: the distinct values, sorted as found. */
static void rdma_values(const struct probe_facts *f, int what, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < f->nrdma && o < cap; i++) {
    char v[96];
    const struct probe_rdma *x = &f->rdma[i];
    if (what == 0) snprintf(v, sizeof(v), "%s", x->ll);
    else if (what == 1) snprintf(v, sizeof(v), "%s", x->gid_type);
    else if (what == 2) snprintf(v, sizeof(v), "%d", x->gid_index);
    else if (what == 3) snprintf(v, sizeof(v), "%d", x->mtu);
    else if (x->pkey < 0 || strcmp(x->ll, "IB")) continue;
    else snprintf(v, sizeof(v), "0x%04x", x->pkey);
    if (strstr(buf, v)) continue;
    o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? "/" : "", v);
  }
}

static void ll_of(const struct probe_facts *f, char *b, size_t c) { rdma_values(f, 0, b, c); }
static void gid_type_of(const struct probe_facts *f, char *b, size_t c) { rdma_values(f, 1, b, c); }
static void gid_index_of(const struct probe_facts *f, char *b, size_t c) {
  rdma_values(f, 2, b, c);
}
static void mtu_of(const struct probe_facts *f, char *b, size_t c) { rdma_values(f, 3, b, c); }
static void pkey_of(const struct probe_facts *f, char *b, size_t c) { rdma_values(f, 4, b, c); }

/* A node's fastest RDMA link ("400 Gb/s"): one port that trained lower is
 * its own host's finding (topo/linkrate.c); a node whose every port links
 * lower than the others' nodes is this one's. */
static void rate_of(const struct probe_facts *f, char *b, size_t c) {
  int top = 0;
  for (int i = 0; i < f->nrdma; i++)
    if (f->rdma[i].speed_mbps > top) top = f->rdma[i].speed_mbps;
  if (top > 0) snprintf(b, c, "%g Gb/s", top / 1000.0);
  else b[0] = 0;
}

static void sock_if_of(const struct probe_facts *f, char *b, size_t c) {
  snprintf(b, c, "%.*s", (int)strcspn(f->sock_ifs, ","), f->sock_ifs);
}

static void sock_mtu_of(const struct probe_facts *f, char *b, size_t c) {
  if (f->sock_ifs[0] && f->sock_mtu > 0) snprintf(b, c, "%d", f->sock_mtu);
  else b[0] = 0;
}

struct net_check {
  fact_fn fn;
  enum probe_sev sev;
  const char *what;
  const char *why;
  const char *fix;
};

static const struct net_check checks[] = {
  {ll_of, SEV_ERROR, "the RDMA link layer", "NCCL cannot connect InfiniBand to RoCE",
   "use one link layer on every node: list the ports of that fabric in NCCL_IB_HCA"},
  {gid_type_of, SEV_ERROR, "the RoCE version of the chosen GIDs",
   "a RoCE v1 port cannot reach a RoCE v2 one",
   "export NCCL_IB_ROCE_VERSION_NUM=2 on every node (and NCCL_IB_GID_INDEX only where the "
   "automatic choice is wrong)"},
  {gid_index_of, SEV_NOTE, "the chosen GID index",
   "fine when each is that host's RoCE v2 IPv4 "
   "entry; NCCL's built-in transport may choose otherwise",
   "export NCCL_IB_GID_INDEX=N on every node to pin one"},
  {mtu_of, SEV_WARNING, "the active MTU of the RDMA ports",
   "a connection runs at the smaller MTU of its two ends",
   "raise the MTU of the smaller side's RDMA interfaces (ip link set dev IF mtu 9000 for RoCE, "
   "the subnet manager's MTU for InfiniBand)"},
  {pkey_of, SEV_ERROR, "the InfiniBand partition key (P_Key at NCCL_IB_PKEY)",
   "ports in different partitions cannot talk",
   "export NCCL_IB_PKEY with the index of the job's partition on every node"},
  {rate_of, SEV_WARNING, "the link rate of the fastest RDMA port of each node",
   "a connection moves at the rate of its slower end, so every ring and tree through the slower "
   "nodes moves at theirs",
   "check the slower nodes' links (ibstat, mlxlink or ethtool: the cables, transceivers and the "
   "switch ports' speed setting), or run the job on nodes whose NICs link at one rate"},
  {sock_if_of, SEV_WARNING, "the interface NCCL's sockets use",
   "bootstrap and TCP traffic go over different networks on different nodes", NULL},
  {sock_mtu_of, SEV_WARNING, "the MTU of the socket interface",
   "TCP between these nodes is fragmented or stalls on the smaller MTU",
   "set the same MTU on the socket interface of every node (ip link set dev IF mtu N)"},
};

/* Per-node export lines: each group keeps its own interface, exactly. */
static void ifname_fix(const struct cmp_groups *gs, char *fix, size_t cap) {
  size_t o = 0;
  fix[0] = 0;
  for (int i = 0; i < gs->n && o < cap; i++) {
    char hosts[600];
    cmp_hosts(&gs->g[i], 1, hosts, sizeof(hosts));
    o += (size_t)snprintf(fix + o, cap - o, "%son %s: export NCCL_SOCKET_IFNAME==%s", o ? "\n" : "",
                          hosts, gs->g[i].value);
  }
  if (o < cap)
    snprintf(fix + o, cap - o,
             "\n(if those interfaces are one network; otherwise give every node "
             "an interface on the same network)");
}

/* The subnet of a node's first socket interface ("" when unknown). */
static void sock_subnet_of(const struct probe_facts *f, char *b, size_t c) {
  char name[64];
  struct ipaddr a;
  b[0] = 0;
  sock_if_of(f, name, sizeof(name));
  for (int i = 0; i < f->nif; i++)
    if (!strcmp(f->ifs[i].name, name) && f->ifs[i].addr[0] && !ipaddr_parse(&a, f->ifs[i].addr) &&
        a.prefix >= 0)
      ipaddr_subnet_str(&a, b, c);
}

/* Socket interfaces named differently but all on one subnet: normal with
 * different NIC models (predictable names); NCCL_SOCKET_IFNAME chose them
 * on every node, so it is a note. Returns whether that is the case. */
static bool sock_if_one_subnet(struct probe_run *r, const struct cmp_groups *names) {
  struct cmp_groups nets = {0};
  bool is_one = true;
  for (int k = 0; k < r->world && is_one; k++) {
    if (!cmp_host_first(r, k) || !r->facts[k].sock_ifs[0]) continue;
    char net[96];
    sock_subnet_of(&r->facts[k], net, sizeof(net));
    if (!net[0]) is_one = false;
    else cmp_add(&nets, net, r->facts[k].host);
  }
  is_one = is_one && nets.n == 1;
  if (is_one) {
    char desc[1500];
    cmp_describe(names, "", desc, sizeof(desc));
    probe_add_problem(r, SEV_NOTE, "",
                      "nothing to do (to pin them, export NCCL_SOCKET_IFNAME with a prefix "
                      "every node's interface starts with, or one =NAME per node)",
                      "the interface NCCL's sockets use has different names on different nodes: "
                      "%s, all on subnet %s (different NIC models or predictable names: fine)",
                      desc, nets.g[0].value);
  }
  cmp_free(&nets);
  return is_one;
}

void probe_compare_net(struct probe_run *r) {
  for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
    struct cmp_groups gs = {0};
    group_by(r, checks[i].fn, &gs);
    bool is_note = gs.n > 1 && checks[i].fn == sock_if_of && sock_if_one_subnet(r, &gs);
    if (gs.n > 1 && !is_note) {
      char desc[1500], hosts[512], fix[1500];
      cmp_describe(&gs, "", desc, sizeof(desc));
      cmp_minority_hosts(&gs, hosts, sizeof(hosts));
      if (checks[i].fix) snprintf(fix, sizeof(fix), "%s", checks[i].fix);
      else ifname_fix(&gs, fix, sizeof(fix));
      probe_add_problem(r, checks[i].sev, hosts, fix, "%s differs: %s (%s)", checks[i].what, desc,
                        checks[i].why);
    }
    cmp_free(&gs);
  }
}
