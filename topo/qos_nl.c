/* SPDX-License-Identifier: Apache-2.0 */
/* DCB netlink: one RTM_GETDCB / DCB_CMD_IEEE_GET request for an interface,
 * as iproute2's `dcb` sends it, and a bounded parser of the reply (ETS, PFC
 * and the APP table's DSCP entries). The kernel's bytes are parsed with
 * every length checked: a driver may answer with short or odd attributes. */
#include <errno.h>
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "topo/qos.h"

#define QOS_NL_WAIT_MS 300 /* a tool's read; the kernel answers in microseconds */

/* One attribute at off within [0, end): its type, payload and the next
 * offset; false when none fits. */
struct nl_attr {
  uint16_t type;
  const uint8_t *data;
  size_t len;
};

static bool attr_at(const uint8_t *base, size_t end, size_t *off, struct nl_attr *a) {
  struct rtattr h;
  if (*off > end || end - *off < sizeof(h)) return false;
  memcpy(&h, base + *off, sizeof(h));
  if (h.rta_len < sizeof(h) || h.rta_len > end - *off) return false;
  a->type = h.rta_type & NLA_TYPE_MASK;
  a->data = base + *off + sizeof(h);
  a->len = h.rta_len - sizeof(h);
  size_t step = RTA_ALIGN(h.rta_len);
  *off = step > end - *off ? end : *off + step;
  return true;
}

static void parse_ets(const struct nl_attr *a, struct topo_qos *q) {
  struct ieee_ets e;
  if (a->len < offsetof(struct ieee_ets, prio_tc) + sizeof(e.prio_tc)) return;
  memcpy(&e, a->data, a->len < sizeof(e) ? a->len : sizeof(e));
  q->has_ets = true;
  for (int i = 0; i < QOS_PRIOS; i++) {
    q->prio_tc[i] = e.prio_tc[i] < QOS_PRIOS ? e.prio_tc[i] : 0;
    q->tc_tsa[i] = e.tc_tsa[i];
    q->tc_bw[i] = e.tc_tx_bw[i];
  }
}

static void parse_app_table(const struct nl_attr *t, struct topo_qos *q) {
  struct nl_attr a;
  size_t off = 0;
  while (attr_at(t->data, t->len, &off, &a)) {
    struct dcb_app app;
    if (a.type != DCB_ATTR_IEEE_APP || a.len < sizeof(app)) continue;
    memcpy(&app, a.data, sizeof(app));
    if (app.selector != IEEE_8021QAZ_APP_SEL_DSCP || app.protocol >= QOS_DSCPS ||
        app.priority >= QOS_PRIOS)
      continue;
    q->dscp_prio[app.protocol] = app.priority;
    q->dscp_set |= 1ull << app.protocol;
  }
}

static void parse_ieee(const struct nl_attr *n, struct topo_qos *q) {
  struct nl_attr a;
  size_t off = 0;
  while (attr_at(n->data, n->len, &off, &a)) {
    if (a.type == DCB_ATTR_IEEE_ETS) parse_ets(&a, q);
    else if (a.type == DCB_ATTR_IEEE_PFC && a.len >= offsetof(struct ieee_pfc, mbc)) {
      q->has_pfc = true;
      q->pfc_en = a.data[offsetof(struct ieee_pfc, pfc_en)];
    } else if (a.type == DCB_ATTR_IEEE_APP_TABLE) parse_app_table(&a, q);
  }
}

int topo_qos_nl_parse(const void *msg, size_t len, struct topo_qos *q) {
  const uint8_t *b = msg;
  struct nlmsghdr h;
  if (len < sizeof(h)) return EBADMSG;
  memcpy(&h, b, sizeof(h));
  if (h.nlmsg_len < sizeof(h) || h.nlmsg_len > len) return EBADMSG;
  if (h.nlmsg_type == NLMSG_ERROR) {
    struct nlmsgerr e;
    if (h.nlmsg_len < NLMSG_LENGTH(sizeof(e))) return EBADMSG;
    memcpy(&e, b + NLMSG_HDRLEN, sizeof(e));
    return e.error < 0 && e.error > -4096 ? -e.error : EBADMSG;
  }
  if (h.nlmsg_type != RTM_GETDCB || h.nlmsg_len < NLMSG_LENGTH(sizeof(struct dcbmsg)))
    return EBADMSG;
  size_t off = NLMSG_LENGTH(sizeof(struct dcbmsg));
  size_t end = h.nlmsg_len;
  struct nl_attr a;
  while (attr_at(b, end, &off, &a))
    if (a.type == DCB_ATTR_IEEE) parse_ieee(&a, q);
    else if (a.type == DCB_ATTR_DCBX && a.len >= 1) q->dcbx = a.data[0];
  return 0;
}

static int nl_ask(int fd, const char *netdev, uint32_t seq) {
  struct {
    struct nlmsghdr h;
    struct dcbmsg d;
    struct rtattr a;
    char name[IF_NAMESIZE + 4];
  } req;
  memset(&req, 0, sizeof(req));
  size_t nlen = strnlen(netdev, IF_NAMESIZE - 1) + 1;
  req.a.rta_type = DCB_ATTR_IFNAME;
  req.a.rta_len = (unsigned short)RTA_LENGTH(nlen);
  memcpy(req.name, netdev, nlen - 1);
  req.h.nlmsg_len = NLMSG_LENGTH(sizeof(req.d)) + RTA_ALIGN(req.a.rta_len);
  req.h.nlmsg_type = RTM_GETDCB;
  req.h.nlmsg_flags = NLM_F_REQUEST;
  req.h.nlmsg_seq = seq;
  req.d.dcb_family = AF_UNSPEC;
  req.d.cmd = DCB_CMD_IEEE_GET;
  struct sockaddr_nl to = {.nl_family = AF_NETLINK};
  return sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0 ? errno : 0;
}

/* The reply to seq, skipping anything else; bounded in time. */
static int nl_answer(int fd, uint32_t seq, struct topo_qos *q) {
  static uint8_t buf[32768];
  for (int tries = 0; tries < 8; tries++) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, QOS_NL_WAIT_MS);
    if (n <= 0) return n ? errno : ETIMEDOUT;
    ssize_t got = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (got < 0) return errno;
    struct nlmsghdr h;
    if ((size_t)got < sizeof(h)) return EBADMSG;
    memcpy(&h, buf, sizeof(h));
    if (h.nlmsg_seq != seq) continue;
    return topo_qos_nl_parse(buf, (size_t)got, q);
  }
  return ETIMEDOUT;
}

int topo_qos_nl_read(const char *netdev, struct topo_qos *q, char *why, size_t cap) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) {
    int e = errno;
    snprintf(why, cap, "DCB netlink cannot be opened: %s", strerror(e));
    return e;
  }
  uint32_t seq = (uint32_t)time(NULL);
  int r = nl_ask(fd, netdev, seq);
  if (!r) r = nl_answer(fd, seq, q);
  close(fd);
  if (r == ENODEV)
    snprintf(why, cap, "no interface %s in this network namespace to ask DCB netlink about",
             netdev);
  else if (r == EOPNOTSUPP || r == EINVAL)
    snprintf(why, cap, "the driver of %s has no DCB support (%s)", netdev, strerror(r));
  else if (r) snprintf(why, cap, "DCB netlink did not answer for %s: %s", netdev, strerror(r));
  else if (!q->has_pfc && !q->has_ets)
    snprintf(why, cap, "the driver of %s reports no IEEE 802.1Qaz PFC or ETS state", netdev);
  return r ? r : q->has_pfc || q->has_ets ? 0 : EOPNOTSUPP;
}
