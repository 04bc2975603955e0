/* SPDX-License-Identifier: Apache-2.0 */
/* topo_decide on hosts built in memory: it reads nothing, so every rule is
 * table-tested here (plane rules, link layers, NCCL_IB_HCA checks, device
 * order, forced GIDs, recommendations). */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "topo/gid.h"
#include "topo/topo.h"

static struct topo_host H;
static struct topo_choice C;
static struct topo_prefs P;
/* What H's arrays point at: hosts here are small and built in place. */
static struct topo_hca hcas[8];
static struct topo_port ports[8];
static struct topo_gid gids[8][8];
static struct topo_gpu gpus[8];
static struct netif ifs[8];

static void reset(void) {
  memset(&H, 0, sizeof(H));
  memset(hcas, 0, sizeof(hcas));
  memset(gpus, 0, sizeof(gpus));
  H.hcas = hcas;
  H.ports = ports;
  H.gpus = gpus;
  H.ifs.ifs = ifs;
  strcpy(H.sysfs_root, "/fixture/sysfs");
  strcpy(H.ifs.source, "test");
  H.has_rdma = 1;
  memset(&P, 0, sizeof(P));
  P.gid_index = -1;
  P.addr_family = AF_INET;
  P.roce_version = 2;
  P.socket_family = AF_UNSPEC;
  P.is_planes_auto = 1;
}

static void add_if(const char *name, const char *cidr) {
  struct netif *n = &H.ifs.ifs[H.ifs.n++];
  memset(n, 0, sizeof(*n));
  strcpy(n->name, name);
  n->up = n->running = 1;
  n->numa = -1;
  if (cidr) ipaddr_parse(&n->addr[n->naddr++], cidr);
}

static void add_gid(struct topo_port *pt, int index, const uint8_t raw[16], enum gid_type t,
                    int prefix) {
  struct topo_gid *g = &pt->gids[pt->ngid++];
  g->index = index;
  memcpy(g->raw, raw, 16);
  g->type = t;
  strcpy(g->netdev, pt->netdev);
  g->netdev_up = 1;
  g->prefix = prefix;
  g->is_port_netdev = 1;
}

/* A device at a sysfs path with one port: RoCE with the standard mlx5 table
 * for ip (NULL: link-local only), or InfiniBand when netdev is NULL. */
static int add_port(const char *name, const char *path, int numa, const char *netdev,
                    const char *ip) {
  struct topo_hca *d = &H.hcas[H.nhca];
  strcpy(d->name, name);
  strcpy(d->pci_path, path);
  strcpy(d->busid, strrchr(path, '/') + 1);
  d->numa = numa;
  d->pf = -1; /* a physical function, as discovery says of one */
  pci_chain_from_path(&d->chain, path, numa);
  d->first_port = H.nport;
  d->nports = 1;
  struct topo_port *pt = &H.ports[H.nport];
  memset(pt, 0, sizeof(*pt));
  pt->gids = gids[H.nport];
  pt->hca = H.nhca++;
  pt->num = 1;
  pt->state = 4;
  strcpy(pt->state_text, "ACTIVE");
  strcpy(pt->phys_state_text, "LinkUp");
  pt->ll = netdev ? TOPO_LL_ETH : TOPO_LL_IB;
  pt->active_mtu = 4096;
  pt->gid_tbl_len = 8;
  uint8_t ll[16] = {0xfe, 0x80, [8] = 0xba, 0x3f, 0xd2, 0xff, 0xfe, 0, 0, (uint8_t)H.nport};
  if (!netdev) {
    add_gid(pt, 0, ll, GID_TYPE_V1, -1);
    return H.nport++;
  }
  strcpy(pt->netdev, netdev);
  pt->netdev_up = 1;
  add_gid(pt, 0, ll, GID_TYPE_V1, 64);
  add_gid(pt, 1, ll, GID_TYPE_V2, 64);
  if (ip) {
    uint8_t v4[16] = {[10] = 0xff, [11] = 0xff};
    inet_pton(AF_INET, ip, v4 + 12);
    add_gid(pt, 2, v4, GID_TYPE_V1, 24);
    add_gid(pt, 3, v4, GID_TYPE_V2, 24);
  }
  return H.nport++;
}

static void add_gpu(const char *path, int numa) {
  struct topo_gpu *g = &H.gpus[H.ngpu];
  snprintf(g->name, sizeof(g->name), "GPU%d", H.ngpu++);
  strcpy(g->busid, strrchr(path, '/') + 1);
  g->numa = numa;
  pci_chain_from_path(&g->chain, path, numa);
}

static void decide(void) {
  topo_choice_free(&C);
  topo_decide(&H, &P, &C);
}

static const struct topo_setting *rec(const char *name) {
  for (int i = 0; i < C.nsetting; i++)
    if (!strcmp(C.settings[i].name, name)) return &C.settings[i];
  return NULL;
}

static int issue_has(enum topo_severity sev, const char *text) {
  for (int i = 0; i < C.nissue; i++)
    if (C.issues[i].severity == sev && strstr(C.issues[i].text, text)) return 1;
  return 0;
}

#define SW(root, n) "/sys/devices/pci0000:" root "/0000:" root ":01.0/0000:" n
/* Field story 5 in small: two rails beside GPUs, the bond on the main net. */
static void story5(int with_gpus) {
  reset();
  add_port("mlx5_2", SW("15", "16:00.0/0000:17:02.0/0000:1a:00.0"), 0, "xgbe2", "10.1.2.5");
  add_port("mlx5_3", SW("37", "38:00.0/0000:39:02.0/0000:3c:00.0"), 0, "xgbe3", "10.1.3.5");
  add_port("mlx5_bond_0", "/sys/devices/pci0000:28/0000:28:01.0/0000:29:00.0", 0, "bond0",
           "10.0.0.5");
  if (with_gpus) {
    add_gpu(SW("15", "16:00.0/0000:17:00.0/0000:18:00.0"), 0);
    add_gpu(SW("37", "38:00.0/0000:39:00.0/0000:3a:00.0"), 0);
  }
  add_if("lo", "127.0.0.1/8");
  H.ifs.ifs[0].loopback = 1;
  add_if("xgbe2", "10.1.2.5/24");
  add_if("xgbe3", "10.1.3.5/24");
  add_if("bond0", "10.0.0.5/24");
}

static void test_story5(void) {
  story5(1);
  decide();
  CHECK(C.ndev == 2 && !strcmp(C.dev[0].name, "mlx5_2") && !strcmp(C.dev[1].name, "mlx5_3"),
        "devices: %d", C.ndev);
  CHECK(C.dev[0].gid_index == 3 && C.dev[1].gid_index == 3, "GID 3 on each");
  CHECK(C.pc[2].verdict == TV_PLANE && strstr(C.pc[2].why, "other plane"), "bond: %s", C.pc[2].why);
  CHECK(C.main_if == 3 && C.is_main_confident, "bond0 is the main interface: %d", C.main_if);
  const struct topo_setting *r = rec("NCCL_IB_HCA");
  CHECK(r && !strcmp(r->value, "=mlx5_2,mlx5_3") && !strcmp(r->status, "add"), "%s",
        r ? r->value : "no NCCL_IB_HCA advice");
  r = rec("NCCL_SOCKET_IFNAME");
  CHECK(r && !strcmp(r->value, "=bond0"), "%s", r ? r->value : "no NCCL_SOCKET_IFNAME advice");
  CHECK(C.gpu_choices[0].nnearest == 1 && C.gpu_choices[0].nearest_class == PCI_CLASS_PIX &&
          C.dev[C.gpu_choices[0].nearest[0]].port == 0,
        "GPU0 nearest mlx5_2 PIX");
  CHECK(!C.nerror, "no errors: %d", C.nerror);
}

static void test_story5_without_gpus(void) {
  /* Nothing tells the main network apart: no guess, a warning instead. */
  story5(0);
  decide();
  CHECK(C.ndev == 3, "every port kept: %d", C.ndev);
  CHECK(!C.is_main_confident, "main chosen by order only");
  CHECK(issue_has(TOPO_WARNING, "several networks"), "warns about the planes");
  /* Naming the main interface makes the rule apply. */
  P.socket_ifname = "=bond0";
  decide();
  CHECK(C.ndev == 2 && C.pc[2].verdict == TV_PLANE, "with NCCL_SOCKET_IFNAME=bond0: %d", C.ndev);
}

static void test_user_override(void) {
  story5(1);
  P.hca_filter = "=mlx5_2,mlx5_3,mlx5_bond_0";
  decide();
  CHECK(C.ndev == 3, "the named bond is kept: %d", C.ndev);
  CHECK(C.nerror && issue_has(TOPO_ERROR, "NCCL_IB_HCA selects mlx5_bond_0:1"),
        "an error says why");
  const struct topo_setting *r = rec("NCCL_IB_HCA");
  CHECK(r && !strcmp(r->value, "=mlx5_2,mlx5_3") && !strcmp(r->status, "change"), "%s %s",
        r ? r->value : "-", r ? r->status : "-");
  P.hca_filter = "^=mlx5_bond_0";
  decide();
  r = rec("NCCL_IB_HCA");
  CHECK(C.ndev == 2 && r && !strcmp(r->status, "keep"), "an exclude list that agrees is kept");
  P.hca_filter = NULL;
  P.is_planes_auto = 0;
  decide();
  CHECK(C.ndev == 3 && !rec("NCCL_IB_HCA"), "NCCL_DIAG_PLANES=off keeps every port");
}

static void test_filter_checks(void) {
  story5(1);
  P.hca_filter = "mlx5_8,mlx5_4,mlx5_2";
  decide();
  CHECK(C.nerror && issue_has(TOPO_ERROR, "'mlx5_8', 'mlx5_4' match no RDMA port"),
        "unmatched entries are errors");
  CHECK(issue_has(TOPO_ERROR, "this host has mlx5_2:1"), "the error lists what exists");
  CHECK(C.pc[1].verdict == TV_FILTER, "mlx5_3 filtered: %s", C.pc[1].why);
  P.hca_filter = "^mlx5_9";
  decide();
  CHECK(!C.nerror && issue_has(TOPO_WARNING, "'mlx5_9' matches no RDMA port"),
        "an unmatched exclude entry only warns");
  P.hca_filter = "mlx5_2:x";
  decide();
  CHECK(C.nerror && issue_has(TOPO_ERROR, "is not valid"), "bad grammar is an error");
}

static void test_prefix_trap(void) {
  reset();
  add_port("mlx5_1", "/sys/devices/pci0000:27/0000:27:01.0/0000:29:00.0", 0, NULL, NULL);
  add_port("mlx5_10", "/sys/devices/pci0000:cb/0000:cb:01.0/0000:ce:00.0", 1, NULL, NULL);
  add_if("eno1", "10.3.0.5/24");
  P.hca_filter = "mlx5_1";
  decide();
  CHECK(C.ndev == 2 && issue_has(TOPO_WARNING, "'mlx5_1' is a prefix"), "the trap is named");
  P.hca_filter = "=mlx5_1";
  decide();
  CHECK(C.ndev == 1 && !C.nissue, "=mlx5_1 is exact");
}

static void test_link_layers(void) {
  reset();
  add_port("mlx5_0", "/sys/devices/pci0000:15/0000:15:01.0/0000:18:00.0", 0, NULL, NULL);
  add_port("mlx5_1", "/sys/devices/pci0000:27/0000:27:01.0/0000:29:00.0", 0, "ens1", "10.20.0.2");
  add_port("mlx5_3", "/sys/devices/pci0000:3d/0000:3d:01.0/0000:40:00.0", 0, NULL, NULL);
  add_if("eno1", "10.3.0.5/24");
  decide();
  CHECK(C.ndev == 2 && C.pc[1].verdict == TV_PLANE && strstr(C.pc[1].why, "link layer RoCE"),
        "the RoCE minority is set apart: %s", C.pc[1].why);
  CHECK(C.dev[0].ll == TOPO_LL_IB && C.dev[0].subnet.family == 0, "IB devices carry no subnet");
}

static void test_roce_with_lid(void) {
  /* Intel E810 (irdma) reports a LID on RoCE: the link layer decides. */
  reset();
  int p = add_port("irdma0", "/sys/devices/pci0000:4a/0000:4a:01.0/0000:4b:00.0", 0, "ens2f0",
                   "10.5.0.7");
  H.ports[p].lid = 5;
  add_if("ens2f0", "10.5.0.7/24");
  decide();
  CHECK(C.ndev == 1 && C.dev[0].ll == TOPO_LL_ETH && C.dev[0].gid_index == 3,
        "RoCE with a LID stays RoCE, GID 3: ll %d gid %d", C.ndev ? (int)C.dev[0].ll : -1,
        C.ndev ? C.dev[0].gid_index : -1);
}

static void test_order(void) {
  reset();
  /* Listed out of order; two functions of one adapter share a PCI node. */
  add_port("mlx5_7", "/sys/devices/pci0000:a7/0000:a7:01.0/0000:aa:00.0", 1, "e7", "10.1.7.5");
  add_port("mlx5_2", "/sys/devices/pci0000:27/0000:27:01.0/0000:29:00.1", 0, "e2", "10.1.2.5");
  add_port("mlx5_1", "/sys/devices/pci0000:27/0000:27:01.0/0000:29:00.0", 0, "e1", "10.1.1.5");
  add_if("eno1", "10.3.0.5/24");
  decide();
  CHECK(C.ndev == 3, "%d devices", C.ndev);
  CHECK(!strcmp(C.dev[0].name, "mlx5_1") && !strcmp(C.dev[1].name, "mlx5_2") &&
          !strcmp(C.dev[2].name, "mlx5_7"),
        "PCI order: %s %s %s", C.dev[0].name, C.dev[1].name, C.dev[2].name);
  CHECK(C.dev[0].real_port == 0 && C.dev[1].real_port == 1 && C.dev[2].real_port == 0,
        "realPort %d %d %d", C.dev[0].real_port, C.dev[1].real_port, C.dev[2].real_port);
  CHECK(C.dev[1].subnet.prefix == 24 && C.dev[1].mtu == 4096 && C.dev[1].gid_index == 3, "dev");
}

static void test_forced_gid(void) {
  story5(1);
  P.gid_index = 1;
  decide();
  CHECK(C.ndev == 2 && C.dev[0].gid_index == 1, "the forced index is honoured");
  CHECK(C.nerror && issue_has(TOPO_ERROR, "link-local"), "and is an error");
  const struct topo_setting *r = rec("NCCL_IB_GID_INDEX");
  CHECK(r && !strcmp(r->value, "3") && !strcmp(r->status, "change"), "advice %s",
        r ? r->value : "none");
}

static void test_no_rdma_and_sockets(void) {
  reset();
  H.has_rdma = 0;
  strcpy(H.why_no_rdma, "/fixture/sysfs/class/infiniband does not exist (no RDMA driver loaded)");
  add_if("lo", "127.0.0.1/8");
  H.ifs.ifs[0].loopback = 1;
  add_if("enp0s1", "10.0.2.15/24");
  decide();
  CHECK(C.ndev == 0 && strstr(C.why_none, "does not exist"), "why: %s", C.why_none);
  CHECK(!C.nerror && !C.nsetting, "a VM with one interface needs nothing");
  P.socket_ifname = "eth0";
  decide();
  CHECK(C.nerror && issue_has(TOPO_ERROR, "enp0s1 (10.0.2.15/24)"), "the error names enp0s1");
  const struct topo_setting *r = rec("NCCL_SOCKET_IFNAME");
  CHECK(r && !strcmp(r->value, "=enp0s1") && !strcmp(r->status, "change"), "%s",
        r ? r->value : "none");
}

static void test_unusable_ports(void) {
  reset();
  add_port("mlx5_0", "/sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0", 0, "ens3", NULL);
  add_if("eno1", "10.3.0.5/24");
  decide();
  CHECK(C.ndev == 0 && C.pc[0].verdict == TV_GID, "link-local only: refused");
  const struct topo_setting *r = rec("NCCL_IB_DISABLE");
  CHECK(r && !strcmp(r->value, "1"), "NCCL_IB_DISABLE=1 keeps NCCL's own transport away");
  CHECK(!C.nerror && issue_has(TOPO_WARNING, "none is usable"), "a warning, TCP still works");
  H.ports[0].state = 1;
  strcpy(H.ports[0].state_text, "DOWN");
  strcpy(H.ports[0].phys_state_text, "Disabled");
  H.ports[0].phys_state = 3;
  decide();
  CHECK(C.pc[0].verdict == TV_STATE && strstr(C.pc[0].why, "state DOWN (physical Disabled)"), "%s",
        C.pc[0].why);
}

int main(void) {
  TAP_CASE("story 5: rails chosen, the bond set apart as the other plane", test_story5);
  TAP_CASE("story 5 without GPUs: no guess by interface order", test_story5_without_gpus);
  TAP_CASE("NCCL_IB_HCA naming a set-apart port, an agreeing exclude list, planes off",
           test_user_override);
  TAP_CASE("NCCL_IB_HCA entries matching nothing, exclude lists, bad grammar", test_filter_checks);
  TAP_CASE("the mlx5_1 prefix trap is reported", test_prefix_trap);
  TAP_CASE("mixed link layers: the minority is set apart", test_link_layers);
  TAP_CASE("RoCE with a non-zero LID is told apart by its link layer", test_roce_with_lid);
  TAP_CASE("NCCL device order and realPort", test_order);
  TAP_CASE("forced link-local GID: honoured, an error, advice", test_forced_gid);
  TAP_CASE("no RDMA; NCCL_SOCKET_IFNAME matching nothing", test_no_rdma_and_sockets);
  TAP_CASE("ports that are up but unusable, ports that are down", test_unusable_ports);
  topo_choice_free(&C);
  return tap_done();
}
