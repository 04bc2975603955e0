/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: does the kernel hold a resolved neighbour for a destination?
 *
 * Used when an RTR connect is still pending at its deadline: a valid
 * neighbour entry for the next hop means address resolution succeeded (the
 * peer is there but silent), which on RoCE lets RTR succeed; none means
 * RTR times out. Two rtnetlink requests: the route (for the gateway) and
 * a dump of the neighbour table. */
#include "sv.h"

#include <errno.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <string.h>
#include <unistd.h>

struct netlink_addr {
  int family;
  uint8_t bytes[16];
  size_t len;
};

static void addr_of(const struct sockaddr_storage *ss, struct netlink_addr *a) {
  a->family = ss->ss_family;
  if (ss->ss_family == AF_INET) {
    a->len = 4;
    memcpy(a->bytes, &((const struct sockaddr_in *)ss)->sin_addr, 4);
  } else {
    a->len = 16;
    memcpy(a->bytes, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
  }
}

static int netlink_open(void) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  struct timeval tv = {.tv_sec = 1};
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

static void add_attr(struct nlmsghdr *h, int type, const void *data, size_t len) {
  struct rtattr *rta = (struct rtattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));
  rta->rta_type = (unsigned short)type;
  rta->rta_len = (unsigned short)RTA_LENGTH(len);
  memcpy(RTA_DATA(rta), data, len);
  h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(rta->rta_len);
}

/* The gateway towards dst through ifindex, or dst itself when on-link. */
static void next_hop(int fd, int ifindex, struct netlink_addr *hop) {
  _Alignas(struct nlmsghdr) char req[256];
  memset(req, 0, sizeof req);
  struct nlmsghdr *h = (struct nlmsghdr *)req;
  struct rtmsg *r = NLMSG_DATA(h);
  h->nlmsg_len = NLMSG_LENGTH(sizeof *r);
  h->nlmsg_type = RTM_GETROUTE;
  h->nlmsg_flags = NLM_F_REQUEST;
  r->rtm_family = (unsigned char)hop->family;
  r->rtm_dst_len = (unsigned char)(hop->len * 8);
  add_attr(h, RTA_DST, hop->bytes, hop->len);
  add_attr(h, RTA_OIF, &ifindex, sizeof ifindex);
  _Alignas(struct nlmsghdr) char buf[4096];
  if (send(fd, req, h->nlmsg_len, 0) < 0) return;
  ssize_t n = recv(fd, buf, sizeof buf, 0);
  h = (struct nlmsghdr *)buf;
  if (n <= 0 || !NLMSG_OK(h, (size_t)n) || h->nlmsg_type != RTM_NEWROUTE) return;
  r = NLMSG_DATA(h);
  int len = (int)RTM_PAYLOAD(h);
  for (struct rtattr *a = RTM_RTA(r); RTA_OK(a, len); a = RTA_NEXT(a, len))
    if (a->rta_type == RTA_GATEWAY && RTA_PAYLOAD(a) == hop->len)
      memcpy(hop->bytes, RTA_DATA(a), hop->len);
}

static bool entry_matches(struct nlmsghdr *h, int ifindex, const struct netlink_addr *hop) {
  const unsigned valid =
    NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT | NUD_NOARP;
  struct ndmsg *nd = NLMSG_DATA(h);
  if (nd->ndm_ifindex != ifindex || !(nd->ndm_state & valid)) return false;
  int len = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *nd));
  for (struct rtattr *a = (struct rtattr *)((char *)nd + NLMSG_ALIGN(sizeof *nd)); RTA_OK(a, len);
       a = RTA_NEXT(a, len))
    if (a->rta_type == NDA_DST && RTA_PAYLOAD(a) == hop->len &&
        !memcmp(RTA_DATA(a), hop->bytes, hop->len))
      return true;
  return false;
}

static bool neigh_dump(int fd, int ifindex, const struct netlink_addr *hop) {
  struct {
    struct nlmsghdr h;
    struct ndmsg nd;
  } req;
  memset(&req, 0, sizeof req);
  req.h.nlmsg_len = NLMSG_LENGTH(sizeof req.nd);
  req.h.nlmsg_type = RTM_GETNEIGH;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.nd.ndm_family = (unsigned char)hop->family;
  if (send(fd, &req, req.h.nlmsg_len, 0) < 0) return false;
  bool found = false;
  _Alignas(struct nlmsghdr) char buf[16384];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return found;
    for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
         h = NLMSG_NEXT(h, n)) {
      if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) return found;
      if (h->nlmsg_type == RTM_NEWNEIGH && entry_matches(h, ifindex, hop)) found = true;
    }
  }
}

int sv_nl_neigh_valid(int ifindex, const struct sockaddr_storage *dst) {
  struct netlink_addr hop;
  int fd = netlink_open();
  if (fd < 0) return 0;
  addr_of(dst, &hop);
  next_hop(fd, ifindex, &hop);
  bool ok = neigh_dump(fd, ifindex, &hop);
  close(fd);
  return ok;
}
