/* SPDX-License-Identifier: Apache-2.0 */
/* RoCE QoS (topo/qos.h): the traffic class -> priority map, the judgement,
 * the fixture text and the DCB netlink reply parser, fed replies laid out
 * as the kernel's dcbnl_ieee_fill() writes them. */
#include <errno.h>
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stddef.h>
#include <string.h>

#include "tap.h"
#include "topo/qos.h"

static struct topo_qos state(const char *text) {
  struct topo_qos q;
  char why[200];
  memset(&q, 0, sizeof(q));
  q.dev_tclass = -1;
  strcpy(q.netdev, "eth2");
  q.source = topo_qos_text_parse(text, &q, why, sizeof(why)) ? QOS_SRC_UNKNOWN : QOS_SRC_FIXTURE;
  q.trust = q.dscp_set ? QOS_TRUST_DSCP : QOS_TRUST_PCP;
  return q;
}

static struct qos_use use(int tc, int fifo_tc) {
  return (struct qos_use){.tc = tc, .is_tc_set = tc != 0, .fifo_tc = fifo_tc, .sl = 0};
}

static bool has(const struct qos_verdict *v, enum qos_kind k) {
  for (int i = 0; i < v->nfinding; i++)
    if (v->findings[i].kind == k) return true;
  return false;
}

static void test_map(void) {
  struct topo_qos q = state("pfc-en 3\n");
  q.trust = QOS_TRUST_DSCP;
  CHECK(qos_prio_of(&q, 0, 0, false) == 0 && qos_prio_of(&q, 106, 0, false) == 3 &&
          qos_prio_of(&q, 96, 0, false) == 3 && qos_prio_of(&q, 128, 0, false) == 4 &&
          qos_prio_of(&q, 255, 0, false) == 7,
        "default map is DSCP >> 3");
  CHECK(qos_tc_for_prio(&q, 3) == 106, "prio 3: DSCP 26 first, %d", qos_tc_for_prio(&q, 3));
  CHECK(qos_tc_for_prio(&q, 5) == (40 << 2 | 2), "prio 5: the lowest DSCP, %d",
        qos_tc_for_prio(&q, 5));
  q = state("pfc-en 5\napp-dscp 26:5 48:6\n");
  CHECK(q.trust == QOS_TRUST_DSCP && qos_prio_of(&q, 106, 0, false) == 5 &&
          qos_prio_of(&q, 96, 0, false) == 3 && qos_prio_of(&q, 192, 0, false) == 6,
        "APP entries override the default map, only for their DSCP");
  CHECK(qos_tc_for_prio(&q, 5) == 106, "prio 5 through the APP table: %d", qos_tc_for_prio(&q, 5));
  q = state("app-dscp 0:1 8:1 16:1 24:1 32:1 40:1 48:1 56:1\n");
  CHECK(qos_tc_for_prio(&q, 0) == (1 << 2 | 2), "prio 0 by the default map of DSCP 1: %d",
        qos_tc_for_prio(&q, 0));
  q = state("pfc-en 3\n");
  CHECK(q.trust == QOS_TRUST_PCP && qos_prio_of(&q, 106, 3, false) == 0 &&
          qos_prio_of(&q, 106, 3, true) == 3 && qos_tc_for_prio(&q, 3) == -1,
        "trust pcp: the SL when tagged, 0 untagged; no TC helps");
  q.source = QOS_SRC_UNKNOWN;
  CHECK(qos_prio_of(&q, 106, 0, false) == -1, "unknown state: unknown priority");
}

static void test_judge(void) {
  struct topo_qos q = state("pfc-en 3\nprio-tc 0 1 2 3 4 5 6 7\n");
  q.trust = QOS_TRUST_DSCP;
  struct qos_verdict v;
  struct qos_use u = use(0, -1);
  qos_judge(&q, &u, "device mlx5_0 port 1", &v);
  CHECK(v.nfinding == 1 && has(&v, QOS_PFC_OFF) && v.prio == 0 && !v.is_lossless, "classic: %d",
        v.nfinding);
  CHECK(strstr(v.findings[0].text, "NCCL_IB_TC=0 (DSCP 0, NCCL's default) maps to priority 0, "
                                   "where PFC is off on eth2 (PFC on priority 3 only)") &&
          strstr(v.findings[0].fix, "NCCL_IB_TC=106 (DSCP 26 -> prio 3) on every host"),
        "%s / %s", v.findings[0].text, v.findings[0].fix);
  u = use(106, -1);
  qos_judge(&q, &u, "p", &v);
  CHECK(!v.nfinding && v.is_lossless && v.prio == 3, "right class: nothing");
  u = use(106, 0);
  qos_judge(&q, &u, "p", &v);
  CHECK(v.nfinding == 1 && has(&v, QOS_FIFO_LOSSY) && v.fifo_prio == 0, "fifo lossy");
  q.has_ecn = q.has_ecn_np = q.has_ecn_rp = true;
  q.ecn_np = 1u << 3;
  u = use(106, -1);
  qos_judge(&q, &u, "p", &v);
  CHECK(v.nfinding == 1 && has(&v, QOS_ECN_OFF) && strstr(v.findings[0].text, "(roce_rp)"),
        "ecn off");
  q.has_ecn_rp = false; /* only the notification point's files exist: rp is not judged */
  qos_judge(&q, &u, "p", &v);
  CHECK(!v.nfinding && qos_ecn_on(&q) == 1u << 3, "a point without files is not off");
  q.has_ecn = q.has_ecn_np = false;
  q.has_ets = true;
  q.tc_tsa[3] = QOS_TSA_ETS;
  q.tc_bw[3] = 0;
  qos_judge(&q, &u, "p", &v);
  CHECK(v.nfinding == 1 && has(&v, QOS_ETS_ZERO), "ETS 0%%");
  q.tc_tsa[3] = QOS_TSA_STRICT;
  qos_judge(&q, &u, "p", &v);
  CHECK(!v.nfinding, "strict priority class: sane");
  q.dev_tclass = 106;
  u = use(0, -1);
  u.is_tc_set = true;
  qos_judge(&q, &u, "p", &v);
  CHECK(v.nfinding == 1 && has(&v, QOS_TCLASS_FORCED) && v.is_lossless && v.tc == 106,
        "device tclass wins, said");
  q = state("pfc-en\n");
  q.trust = QOS_TRUST_DSCP;
  qos_judge(&q, &u, "p", &v);
  CHECK(v.nfinding == 1 && has(&v, QOS_PFC_NONE) && v.findings[0].severity == 0, "no PFC: a note");
  q = state("prio-tc 0 0 0 0 0 0 0 0\n"); /* PFC not reported: no PFC finding */
  qos_judge(&q, &u, "p", &v);
  CHECK(!v.nfinding, "PFC unknown: nothing");
  q.source = QOS_SRC_UNKNOWN;
  strcpy(q.why_unknown, "the driver of eth2 has no DCB support");
  qos_judge(&q, &u, "p", &v);
  CHECK(!v.nfinding && v.prio == -1 && strstr(v.summary, "unknown: the driver"), "unknown");
  q = state("pfc-en 3\n");
  qos_judge(&q, &u, "p", &v);
  CHECK(v.nfinding == 1 && has(&v, QOS_TRUST_UNTAGGED) &&
          strstr(v.findings[0].fix, "NCCL_IB_TC=106 (DSCP 26 -> prio 3)"),
        "trust pcp untagged");
  u.is_tagged = true;
  u.sl = 3;
  qos_judge(&q, &u, "p", &v);
  CHECK(!v.nfinding && v.prio == 3, "trust pcp tagged SL 3: lossless");
  u.sl = 0;
  qos_judge(&q, &u, "p", &v);
  CHECK(v.nfinding == 1 && has(&v, QOS_PFC_OFF) && strstr(v.findings[0].text, "NCCL_IB_SL=0") &&
          strstr(v.findings[0].fix, "set NCCL_IB_SL=3 (the VLAN priority"),
        "trust pcp tagged SL 0: lossy, fix the SL: %s", v.findings[0].fix);
}

static void test_text(void) {
  struct topo_qos q;
  char why[200] = "";
  memset(&q, 0, sizeof(q));
  CHECK(topo_qos_text_parse("# comment\nnone\n", &q, why, sizeof(why)) == EOPNOTSUPP, "none");
  const char *bad[] = {"pfc-en 8\n",     "pfc-en x\n",         "app-dscp 64:1\n",
                       "app-dscp 1:8\n", "app-dscp 1\n",       "prio-tc 0 0 0 0 0 0 0 0 0\n",
                       "prio-tc 9\n",    "tc-tsa ets bogus\n", "tc-bw 101\n",
                       "willing on\n"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    memset(&q, 0, sizeof(q));
    CHECK(topo_qos_text_parse(bad[i], &q, why, sizeof(why)) == EINVAL && strstr(why, "line 1"),
          "refused: %s", bad[i]);
  }
  memset(&q, 0, sizeof(q));
  CHECK(!topo_qos_text_parse("pfc-en 3 4\ntc-tsa strict ets vendor\ndcbx lld-managed ieee\n", &q,
                             why, sizeof(why)) &&
          q.dcbx == (DCB_CAP_DCBX_LLD_MANAGED | DCB_CAP_DCBX_VER_IEEE) && q.pfc_en == 0x18 &&
          q.tc_tsa[0] == QOS_TSA_STRICT && q.tc_tsa[2] == QOS_TSA_VENDOR,
        "parsed");
}

/* ------------------------------------------------ netlink replies */

struct msg {
  uint8_t b[1024];
  size_t n;
};

static size_t put_attr(struct msg *m, uint16_t type, const void *data, size_t len) {
  struct rtattr a = {.rta_len = (unsigned short)RTA_LENGTH(len), .rta_type = type};
  size_t at = m->n;
  memcpy(m->b + m->n, &a, sizeof(a));
  if (len) memcpy(m->b + m->n + sizeof(a), data, len);
  m->n += RTA_ALIGN(a.rta_len);
  return at;
}

static void close_nest(struct msg *m, size_t at) {
  unsigned short len = (unsigned short)(m->n - at);
  memcpy(m->b + at, &len, sizeof(len));
}

/* A reply as mlx5 answers DCB_CMD_IEEE_GET: PFC on 3, ETS, APP 26 -> 3, 46 -> 5,
 * and an ethertype entry to skip. */
static void reply(struct msg *m) {
  memset(m, 0, sizeof(*m));
  m->n = NLMSG_LENGTH(sizeof(struct dcbmsg));
  put_attr(m, DCB_ATTR_IFNAME, "eth2", 5);
  size_t ieee = put_attr(m, DCB_ATTR_IEEE | NLA_F_NESTED, NULL, 0);
  struct ieee_ets ets = {.prio_tc = {0, 1, 2, 3, 4, 5, 6, 7}, .tc_tsa = {2, 2, 2, 2, 2, 2, 2, 2}};
  for (int i = 0; i < 8; i++) ets.tc_tx_bw[i] = i == 3 ? 51 : 7;
  put_attr(m, DCB_ATTR_IEEE_ETS, &ets, sizeof(ets));
  struct ieee_pfc pfc = {.pfc_cap = 8, .pfc_en = 1u << 3};
  put_attr(m, DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
  size_t table = put_attr(m, DCB_ATTR_IEEE_APP_TABLE | NLA_F_NESTED, NULL, 0);
  struct dcb_app apps[] = {{IEEE_8021QAZ_APP_SEL_DSCP, 3, 26},
                           {IEEE_8021QAZ_APP_SEL_DSCP, 5, 46},
                           {IEEE_8021QAZ_APP_SEL_ETHERTYPE, 3, 0x8915}};
  for (int i = 0; i < 3; i++) put_attr(m, DCB_ATTR_IEEE_APP, &apps[i], sizeof(apps[i]));
  close_nest(m, table);
  close_nest(m, ieee);
  uint8_t dcbx = DCB_CAP_DCBX_VER_IEEE | DCB_CAP_DCBX_HOST;
  put_attr(m, DCB_ATTR_DCBX, &dcbx, 1);
  struct nlmsghdr h = {.nlmsg_len = (uint32_t)m->n, .nlmsg_type = RTM_GETDCB};
  memcpy(m->b, &h, sizeof(h));
  struct dcbmsg d = {.dcb_family = AF_UNSPEC, .cmd = DCB_CMD_IEEE_GET};
  memcpy(m->b + NLMSG_HDRLEN, &d, sizeof(d));
}

static void test_netlink(void) {
  struct msg m;
  struct topo_qos q;
  reply(&m);
  memset(&q, 0, sizeof(q));
  CHECK(!topo_qos_nl_parse(m.b, m.n, &q), "parses");
  CHECK(q.has_pfc && q.pfc_en == 0x08 && q.has_ets && q.prio_tc[3] == 3 && q.tc_bw[3] == 51 &&
          q.tc_tsa[0] == QOS_TSA_ETS,
        "pfc %x ets %d", q.pfc_en, q.has_ets);
  CHECK(q.dscp_set == ((1ull << 26) | (1ull << 46)) && q.dscp_prio[26] == 3 && q.dscp_prio[46] == 5,
        "DSCP entries only: %llx", (unsigned long long)q.dscp_set);
  char dcbx[64];
  qos_dcbx_str(q.dcbx, dcbx, sizeof(dcbx));
  CHECK(!strcmp(dcbx, "host, ieee"), "DCBX: %s", dcbx);
  /* Every truncation: the header's length then says more than there is. */
  for (size_t n = 0; n < m.n; n++) {
    memset(&q, 0, sizeof(q));
    CHECK(topo_qos_nl_parse(m.b, n, &q) == EBADMSG, "truncated to %zu", n);
  }
  /* A length inside an attribute that runs past its parent: skipped, bounded. */
  struct msg bad = m;
  unsigned short big = 0xfff0;
  memcpy(bad.b + NLMSG_LENGTH(sizeof(struct dcbmsg)) + RTA_ALIGN(RTA_LENGTH(5)), &big, 2);
  memset(&q, 0, sizeof(q));
  CHECK(!topo_qos_nl_parse(bad.b, bad.n, &q) && !q.has_pfc, "oversized nest ignored");
  struct {
    struct nlmsghdr h;
    struct nlmsgerr e;
  } err = {{.nlmsg_len = sizeof(err), .nlmsg_type = NLMSG_ERROR}, {.error = -EOPNOTSUPP}};
  CHECK(topo_qos_nl_parse(&err, sizeof(err), &q) == EOPNOTSUPP, "error reply: the errno");
  err.e.error = 5;
  CHECK(topo_qos_nl_parse(&err, sizeof(err), &q) == EBADMSG, "positive error refused");
}

/* The real kernel: lo has no DCB ops, a missing name is said as such. */
static void test_live(void) {
  struct topo_qos q;
  char why[200] = "";
  memset(&q, 0, sizeof(q));
  int r = topo_qos_nl_read("lo", &q, why, sizeof(why));
  CHECK(r == EOPNOTSUPP && strstr(why, "the driver of lo has no DCB support") && !q.has_pfc,
        "lo: %d %s", r, why);
  r = topo_qos_nl_read("qosnosuch0", &q, why, sizeof(why));
  CHECK(r == ENODEV && strstr(why, "no interface qosnosuch0"), "missing: %d %s", r, why);
}

int main(void) {
  TAP_CASE("traffic class -> priority: DSCP map, APP entries, PCP", test_map);
  TAP_CASE("judgement: PFC off, FIFO lossy, ECN off, ETS 0%, forced class, unknown", test_judge);
  TAP_CASE("the fixture DCB text: parsed and refused", test_text);
  TAP_CASE("DCB netlink reply: parsed, bounded on every truncation", test_netlink);
  TAP_CASE("DCB netlink on this kernel: lo and a missing name", test_live);
  return tap_done();
}
