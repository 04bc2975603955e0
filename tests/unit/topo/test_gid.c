/* SPDX-License-Identifier: Apache-2.0 */
/* GID scoring (topo/gid.h) on real-world GID tables, written as sysfs shows
 * them (gids/<i>, gid_attrs/types/<i>, gid_attrs/ndevs/<i>). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "tap.h"
#include "topo/gid.h"

#define LL(iid) "fe80:0000:0000:0000:" iid
#define V4(hex) "0000:0000:0000:0000:0000:ffff:" hex

struct ent {
  int index;
  const char *gid;
  const char *type; /* NULL = unreadable (EINVAL) */
  const char *netdev;
  int netdev_up;
  int prefix;
};

static int load(const struct ent *e, int n, struct topo_gid *t) {
  memset(t, 0, sizeof(*t) * (size_t)n);
  for (int i = 0; i < n; i++) {
    t[i].index = e[i].index;
    CHECK(gid_parse(e[i].gid, t[i].raw) == 0, "bad GID text %s", e[i].gid);
    t[i].type = e[i].type ? gid_type_parse(e[i].type) : GID_TYPE_UNKNOWN;
    t[i].type_errno = e[i].type ? 0 : EINVAL;
    strcpy(t[i].netdev, e[i].netdev);
    t[i].netdev_up = e[i].netdev_up;
    t[i].prefix = e[i].prefix;
    t[i].is_port_netdev = 1;
  }
  return n;
}

static const struct gid_prefs v4_v2 = {AF_INET, 2, 0, {0}, -1};

static const char *reject_of(const struct gid_pick *p, int index) {
  for (int i = 0; i < p->nreject; i++)
    if (p->rejects[i].index == index) return p->rejects[i].why;
  return "";
}

/* ConnectX on xgbe2 10.1.2.5/24, as mlx5 fills it (field story 5). */
static const struct ent standard[] = {
  {0, LL("ba3f:d2ff:fea0:0210"), "IB/RoCE v1", "xgbe2", 1, 64},
  {1, LL("ba3f:d2ff:fea0:0210"), "RoCE v2", "xgbe2", 1, 64},
  {2, V4("0a01:0205"), "IB/RoCE v1", "xgbe2", 1, 24},
  {3, V4("0a01:0205"), "RoCE v2", "xgbe2", 1, 24},
};

static void test_standard(void) {
  struct topo_gid t[4];
  struct topo_gid_reject rej[TOPO_MAX_GIDS];
  struct gid_pick p = {.rejects = rej};
  int n = load(standard, 4, t);
  CHECK(gid_pick_roce(t, n, 256, &v4_v2, &p) == 3, "chose %d", p.index);
  CHECK(strstr(reject_of(&p, 0), "link-local"), "0: %s", reject_of(&p, 0));
  CHECK(strstr(reject_of(&p, 1), "link-local"), "1: %s", reject_of(&p, 1));
  CHECK(strstr(reject_of(&p, 2), "RoCE v1"), "2: %s", reject_of(&p, 2));
  CHECK(p.nccl_index == 3, "NCCL's own scan gives %d", p.nccl_index);
  struct gid_prefs v1 = v4_v2;
  v1.roce_version = 1;
  CHECK(gid_pick_roce(t, n, 256, &v1, &p) == 2, "NCCL_IB_ROCE_VERSION_NUM=1 chose %d", p.index);
}

static void test_link_local_only(void) {
  /* A RoCE port whose netdev has no IP address: only the default GIDs. */
  static const struct ent e[] = {
    {0, LL("0e42:a1ff:fe9b:4480"), "IB/RoCE v1", "ens3f0np0", 1, 64},
    {1, LL("0e42:a1ff:fe9b:4480"), "RoCE v2", "ens3f0np0", 1, 64},
  };
  struct topo_gid t[2];
  struct topo_gid_reject rej[TOPO_MAX_GIDS];
  struct gid_pick p = {.rejects = rej};
  int n = load(e, 2, t);
  CHECK(gid_pick_roce(t, n, 256, &v4_v2, &p) == -1, "chose %d", p.index);
  CHECK(strstr(p.note, "only link-local") && strstr(p.note, "IPv4 address"), "note: %s", p.note);
  CHECK(p.nccl_index == 0, "NCCL falls back to 0 (link-local): %d", p.nccl_index);
}

static const struct ent v6only[] = {
  {0, LL("0e42:a1ff:fe9b:4480"), "IB/RoCE v1", "ens3f0np0", 1, 64},
  {1, LL("0e42:a1ff:fe9b:4480"), "RoCE v2", "ens3f0np0", 1, 64},
  {2, "2001:0db8:0010:0001:0000:0000:0000:0015", "IB/RoCE v1", "ens3f0np0", 1, 64},
  {3, "2001:0db8:0010:0001:0000:0000:0000:0015", "RoCE v2", "ens3f0np0", 1, 64},
};

static void test_ipv6_only(void) {
  struct topo_gid t[4];
  struct topo_gid_reject rej[TOPO_MAX_GIDS];
  struct gid_pick p = {.rejects = rej};
  int n = load(v6only, 4, t);
  CHECK(gid_pick_roce(t, n, 256, &v4_v2, &p) == -1, "AF_INET chose %d", p.index);
  CHECK(strstr(p.note, "NCCL_IB_ADDR_FAMILY=AF_INET6"), "refusal names the fix: %s", p.note);
  CHECK(!strcmp(p.hint, "NCCL_IB_ADDR_FAMILY=AF_INET6"), "hint %s", p.hint);
  CHECK(p.nccl_index == 0, "NCCL's own scan falls back to %d", p.nccl_index);
  struct gid_prefs v6 = v4_v2;
  v6.family = AF_INET6;
  CHECK(gid_pick_roce(t, n, 256, &v6, &p) == 3, "AF_INET6 chose %d", p.index);
  CHECK(p.nccl_index == 3, "NCCL's own scan with AF_INET6: %d", p.nccl_index);
}

static void test_mixed(void) {
  /* v1/v2 pairs for the port's address and for a VLAN on top of it, plus
   * an old-kernel v1-only entry for a second address. */
  static const struct ent e[] = {
    {0, LL("ba3f:d2ff:fea0:0210"), "IB/RoCE v1", "xgbe2", 1, 64},
    {1, LL("ba3f:d2ff:fea0:0210"), "RoCE v2", "xgbe2", 1, 64},
    {2, V4("c0a8:0705"), "IB/RoCE v1", "xgbe2.7", 1, 24},
    {3, V4("c0a8:0705"), "RoCE v2", "xgbe2.7", 1, 24},
    {4, V4("0a01:0205"), "IB/RoCE v1", "xgbe2", 1, 24},
    {5, V4("0a01:0205"), "RoCE v2", "xgbe2", 1, 24},
  };
  struct topo_gid t[6];
  struct topo_gid_reject rej[TOPO_MAX_GIDS];
  struct gid_pick p = {.rejects = rej};
  int n = load(e, 6, t);
  t[2].is_port_netdev = t[3].is_port_netdev = 0; /* the VLAN */
  CHECK(gid_pick_roce(t, n, 256, &v4_v2, &p) == 5, "the port's own v2 GID wins: %d", p.index);
  CHECK(strstr(reject_of(&p, 3), "score"), "3 loses on score: %s", reject_of(&p, 3));
  CHECK(p.nccl_index == 3, "NCCL's own scan takes the first v2: %d", p.nccl_index);
  struct gid_prefs r = v4_v2;
  r.has_range = 1;
  ipaddr_parse(&r.range, "192.168.0.0/16");
  CHECK(gid_pick_roce(t, n, 256, &r, &p) == 3, "NCCL_IB_ADDR_RANGE picks the VLAN: %d", p.index);
  CHECK(strstr(reject_of(&p, 5), "outside NCCL_IB_ADDR_RANGE=192.168.0.0/16"), "5: %s",
        reject_of(&p, 5));
  ipaddr_parse(&r.range, "172.16.0.0/12");
  CHECK(gid_pick_roce(t, n, 256, &r, &p) == -1, "a range matching nothing refuses: %d", p.index);
  /* The v2 entries gone (a kernel in RoCE v1 mode): refusal naming the knob. */
  n = load(e, 6, t);
  for (int i = 0; i < n; i++) t[i].type = GID_TYPE_V1;
  CHECK(gid_pick_roce(t, n, 256, &v4_v2, &p) == -1, "v1-only chose %d", p.index);
  CHECK(!strcmp(p.hint, "NCCL_IB_ROCE_VERSION_NUM=1"), "hint %s", p.hint);
}

/* A pod whose macvlan eth0 sits on the host's ens1f0np0: the host's own
 * entries are not mapped into the pod (types and ndevs read EINVAL). */
static const struct ent container[] = {
  {0, LL("ba3f:d2ff:fe5e:7a10"), NULL, "", -1, -1},
  {1, LL("ba3f:d2ff:fe5e:7a10"), NULL, "", -1, -1},
  {2, V4("0a28:000b"), NULL, "", -1, -1},
  {3, V4("0a28:000b"), NULL, "", -1, -1},
  {4, LL("d4c2:1aff:fe07:3b9e"), "IB/RoCE v1", "eth0", 1, 64},
  {5, LL("d4c2:1aff:fe07:3b9e"), "RoCE v2", "eth0", 1, 64},
  {6, V4("0a28:0039"), "IB/RoCE v1", "eth0", 1, 24},
  {7, V4("0a28:0039"), "RoCE v2", "eth0", 1, 24},
};

static void test_container(void) {
  struct topo_gid t[8];
  struct topo_gid_reject rej[TOPO_MAX_GIDS];
  struct gid_pick p = {.rejects = rej};
  int n = load(container, 8, t);
  CHECK(gid_pick_roce(t, n, 8, &v4_v2, &p) == 7, "chose %d", p.index);
  CHECK(strstr(reject_of(&p, 3), "unreadable") && strstr(reject_of(&p, 3), "Invalid argument"),
        "3: %s", reject_of(&p, 3));
  CHECK(p.nccl_index == 7, "NCCL 2.26+ also lands on 7: %d", p.nccl_index);
  /* Only the unmapped entries carry IPv4: refusal, not a guess. */
  n = load(container, 6, t);
  CHECK(gid_pick_roce(t, n, 8, &v4_v2, &p) == -1, "chose %d", p.index);
}

static void test_netdev_down(void) {
  struct topo_gid t[4];
  struct topo_gid_reject rej[TOPO_MAX_GIDS];
  struct gid_pick p = {.rejects = rej};
  int n = load(standard, 4, t);
  t[3].netdev_up = 0;
  CHECK(gid_pick_roce(t, n, 256, &v4_v2, &p) == -1, "chose %d", p.index);
  CHECK(strstr(reject_of(&p, 3), "xgbe2 is down"), "3: %s", reject_of(&p, 3));
}

struct forced_row {
  int index;
  int severity;
  const char *says;
};

static void test_forced(void) {
  static const struct forced_row rows[] = {
    {3, 0, ""}, {1, 2, "link-local"}, {2, 1, "RoCE v1"}, {5, 2, "empty"}, {300, 2, "past the end"},
  };
  struct topo_gid t[4];
  int n = load(standard, 4, t);
  for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
    struct gid_prefs f = v4_v2;
    struct topo_gid_reject rej[TOPO_MAX_GIDS];
    struct gid_pick p = {.rejects = rej};
    f.forced_index = rows[r].index;
    CHECK(gid_pick_roce(t, n, 8, &f, &p) == rows[r].index, "forced %d honoured: %d", rows[r].index,
          p.index);
    CHECK(p.severity == rows[r].severity, "forced %d severity %d, want %d", rows[r].index,
          p.severity, rows[r].severity);
    CHECK(strstr(p.note, rows[r].says), "forced %d note: %s", rows[r].index, p.note);
    CHECK(p.auto_index == 3, "the automatic choice is still computed: %d", p.auto_index);
  }
  /* Forced at an IPv6 GID with the default AF_INET: a warning. */
  struct gid_prefs f = v4_v2;
  struct topo_gid_reject rej[TOPO_MAX_GIDS];
  struct gid_pick p = {.rejects = rej};
  f.forced_index = 3;
  n = load(v6only, 4, t);
  gid_pick_roce(t, n, 8, &f, &p);
  CHECK(p.severity == 1 && strstr(p.note, "IPv6 GID"), "IPv6: %d %s", p.severity, p.note);
}

static void test_ib(void) {
  static const struct ent e[] = {
    {0, LL("946d:ae03:0070:1a20"), "IB/RoCE v1", "", -1, -1},
    {1, "fe80:0000:0003:0000:946d:ae03:0070:1a20", "IB/RoCE v1", "", -1, -1},
  };
  struct topo_gid t[2];
  struct topo_gid_reject rej[TOPO_MAX_GIDS];
  struct gid_pick p = {.rejects = rej};
  int n = load(e, 1, t);
  CHECK(gid_pick_ib(t, n, -1, &p) == 0, "IB uses 0: %d", p.index);
  CHECK(gid_pick_ib(t, n, 3, &p) == 0 && strstr(p.note, "ignored"), "forced index ignored: %s",
        p.note);
  n = load(e, 2, t);
  CHECK(gid_pick_ib(t, n, -1, &p) == 1, "a routable FLID in entry 1 wins: %d", p.index);
  CHECK(gid_pick_ib(t, 0, -1, &p) == -1 && strstr(p.note, "subnet manager"), "empty: %s", p.note);
}

static void test_format(void) {
  uint8_t raw[16];
  char s[64];
  gid_parse(V4("0a01:0405"), raw);
  gid_str(raw, s, sizeof(s));
  CHECK(!strcmp(s, "::ffff:10.1.4.5"), "%s", s);
  CHECK(gid_family(raw) == AF_INET, "IPv4-mapped is AF_INET");
  gid_parse("ff0e:0000:0000:0000:0000:ffff:0a01:0405", raw);
  CHECK(gid_family(raw) == AF_INET, "the mapped multicast form is AF_INET too");
  CHECK(gid_parse("not a gid", raw) == EINVAL, "garbage refused");
  CHECK(gid_type_parse("IB/RoCE v1") == GID_TYPE_V1 && gid_type_parse("RoCE v1") == GID_TYPE_V1 &&
          gid_type_parse("RoCE v2") == GID_TYPE_V2 && gid_type_parse("") == GID_TYPE_UNKNOWN,
        "type texts");
}

int main(void) {
  TAP_CASE("standard mlx5 table (v1/v2 x link-local/IPv4): index 3", test_standard);
  TAP_CASE("link-local only: refusal, NCCL would take 0", test_link_local_only);
  TAP_CASE("IPv6 only: refused under AF_INET naming AF_INET6, index 3 under AF_INET6",
           test_ipv6_only);
  TAP_CASE("mixed v1/v2 with a VLAN, NCCL_IB_ADDR_RANGE, v1-only kernel", test_mixed);
  TAP_CASE("partial container table (EINVAL types): index 7", test_container);
  TAP_CASE("a GID whose netdev is down is rejected", test_netdev_down);
  TAP_CASE("forced NCCL_IB_GID_INDEX: good, link-local, v1, empty, missing, IPv6", test_forced);
  TAP_CASE("InfiniBand: 0, FLID index 1, forced index ignored", test_ib);
  TAP_CASE("GID text, families and types", test_format);
  return tap_done();
}
