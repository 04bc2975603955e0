/* SPDX-License-Identifier: Apache-2.0 */
/* IP addresses with a prefix length: the subnet math behind interface
 * choice, candidate ordering and (later) GID subnets. Pure functions. */
#ifndef DIAG_COMMON_ADDR_H
#define DIAG_COMMON_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct ipaddr {
  int family;        /* AF_INET or AF_INET6 */
  uint8_t bytes[16]; /* network order; IPv4 uses the first 4 */
  int prefix;        /* prefix length, -1 when unknown */
};

/* 0, or EINVAL (no address) or EAFNOSUPPORT (neither IPv4 nor IPv6). */
int ipaddr_from_sockaddr(struct ipaddr *a, const struct sockaddr *sa, const struct sockaddr *mask);
/* Parses "10.0.0.1", "10.0.0.1/24", "fe80::1/64". 0 or EINVAL. */
int ipaddr_parse(struct ipaddr *a, const char *text);
/* "10.0.0.1" (no prefix) / "10.0.0.1/24" (with) */
void ipaddr_str(const struct ipaddr *a, char *buf, size_t cap);
void ipaddr_cidr(const struct ipaddr *a, char *buf, size_t cap);
/* The network part as "10.0.0.0/24". */
void ipaddr_subnet_str(const struct ipaddr *a, char *buf, size_t cap);

int ipaddr_is_link_local(const struct ipaddr *a);
int ipaddr_is_loopback(const struct ipaddr *a);
/* Whether a process on another host can reach a through routers: neither
 * loopback nor link-local (169.254.0.0/16, fe80::/10). */
int ipaddr_is_routable(const struct ipaddr *a);
/* ::ffff:10.0.0.1 (an IPv4 peer as a dual-stack socket reports it) becomes
 * 10.0.0.1; any other address is left as it is. */
void ipaddr_unmap(struct ipaddr *a);
/* Whether b lies in a's subnet (a's prefix; same family). */
int ipaddr_in_subnet(const struct ipaddr *a, const struct ipaddr *b);
/* Same network under prefix bits. */
int ipaddr_prefix_equal(const uint8_t *x, const uint8_t *y, int bits);

/* sockaddr helpers for the transport. */
socklen_t ipaddr_to_sockaddr(const struct ipaddr *a, uint16_t port, struct sockaddr_storage *ss);
/* "10.0.0.1<46417>" / "[fd00::1]<46417>", NCCL's style; a scoped IPv6
 * address with its interface: "[fe80::1%eth0]<46417>". */
void sockaddr_str(const struct sockaddr *sa, char *buf, size_t cap);

#endif
