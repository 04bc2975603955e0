/* SPDX-License-Identifier: Apache-2.0 */
#include "common/addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mask_bits(const uint8_t *m, int len) {
  int bits = 0;
  for (int i = 0; i < len; i++) {
    uint8_t b = m[i];
    while (b & 0x80) {
      bits++;
      b <<= 1;
    }
    if (m[i] != 0xff) break;
  }
  return bits;
}

int ipaddr_from_sockaddr(struct ipaddr *a, const struct sockaddr *sa, const struct sockaddr *mask) {
  memset(a, 0, sizeof(*a));
  a->prefix = -1;
  if (!sa) return EINVAL;
  if (sa->sa_family == AF_INET) {
    a->family = AF_INET;
    memcpy(a->bytes, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    if (mask)
      a->prefix = mask_bits((const uint8_t *)&((const struct sockaddr_in *)mask)->sin_addr, 4);
    return 0;
  }
  if (sa->sa_family == AF_INET6) {
    a->family = AF_INET6;
    memcpy(a->bytes, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    if (mask)
      a->prefix = mask_bits((const uint8_t *)&((const struct sockaddr_in6 *)mask)->sin6_addr, 16);
    return 0;
  }
  return EAFNOSUPPORT;
}

int ipaddr_parse(struct ipaddr *a, const char *text) {
  char buf[80];
  memset(a, 0, sizeof(*a));
  a->prefix = -1;
  if (!text || strlen(text) >= sizeof(buf)) return EINVAL;
  strcpy(buf, text);
  char *slash = strchr(buf, '/');
  if (slash) {
    *slash = 0;
    char *end;
    long p = strtol(slash + 1, &end, 10);
    if (*end || end == slash + 1 || p < 0) return EINVAL;
    a->prefix = (int)p;
  }
  if (inet_pton(AF_INET, buf, a->bytes) == 1) {
    a->family = AF_INET;
    if (a->prefix > 32) return EINVAL;
    return 0;
  }
  if (inet_pton(AF_INET6, buf, a->bytes) == 1) {
    a->family = AF_INET6;
    if (a->prefix > 128) return EINVAL;
    return 0;
  }
  return EAFNOSUPPORT;
}

void ipaddr_str(const struct ipaddr *a, char *buf, size_t cap) {
  char tmp[INET6_ADDRSTRLEN] = "?";
  if (a->family == AF_INET || a->family == AF_INET6)
    inet_ntop(a->family, a->bytes, tmp, sizeof(tmp));
  snprintf(buf, cap, "%s", tmp);
}

void ipaddr_cidr(const struct ipaddr *a, char *buf, size_t cap) {
  char tmp[INET6_ADDRSTRLEN];
  ipaddr_str(a, tmp, sizeof(tmp));
  if (a->prefix >= 0) snprintf(buf, cap, "%s/%d", tmp, a->prefix);
  else snprintf(buf, cap, "%s", tmp);
}

void ipaddr_subnet_str(const struct ipaddr *a, char *buf, size_t cap) {
  struct ipaddr net = *a;
  int len = a->family == AF_INET ? 4 : 16;
  int prefix = a->prefix < 0 ? len * 8 : a->prefix;
  for (int i = 0; i < len; i++) {
    int keep = prefix - i * 8;
    uint8_t m = keep >= 8 ? 0xff : keep <= 0 ? 0 : (uint8_t)(0xff << (8 - keep));
    net.bytes[i] &= m;
  }
  net.prefix = prefix;
  ipaddr_cidr(&net, buf, cap);
}

int ipaddr_prefix_equal(const uint8_t *x, const uint8_t *y, int bits) {
  int full = bits / 8, rest = bits % 8;
  if (memcmp(x, y, (size_t)full)) return 0;
  if (!rest) return 1;
  uint8_t m = (uint8_t)(0xff << (8 - rest));
  return (x[full] & m) == (y[full] & m);
}

int ipaddr_is_link_local(const struct ipaddr *a) {
  if (a->family == AF_INET) return a->bytes[0] == 169 && a->bytes[1] == 254;
  if (a->family == AF_INET6) return a->bytes[0] == 0xfe && (a->bytes[1] & 0xc0) == 0x80;
  return 0;
}

int ipaddr_is_loopback(const struct ipaddr *a) {
  static const uint8_t v6lo[16] = {[15] = 1};
  /* ::ffff:127.x.x.x: an IPv4 peer as a dual-stack socket reports it */
  static const uint8_t v4mapped[12] = {[10] = 0xff, [11] = 0xff};
  if (a->family == AF_INET) return a->bytes[0] == 127;
  if (a->family == AF_INET6)
    return !memcmp(a->bytes, v6lo, 16) || (!memcmp(a->bytes, v4mapped, 12) && a->bytes[12] == 127);
  return 0;
}

int ipaddr_is_routable(const struct ipaddr *a) {
  return (a->family == AF_INET || a->family == AF_INET6) && !ipaddr_is_loopback(a) &&
         !ipaddr_is_link_local(a);
}

void ipaddr_unmap(struct ipaddr *a) {
  static const uint8_t v4mapped[12] = {[10] = 0xff, [11] = 0xff};
  if (a->family != AF_INET6 || memcmp(a->bytes, v4mapped, 12)) return;
  memmove(a->bytes, a->bytes + 12, 4);
  memset(a->bytes + 4, 0, 12);
  a->family = AF_INET;
  if (a->prefix >= 96) a->prefix -= 96;
}

int ipaddr_in_subnet(const struct ipaddr *a, const struct ipaddr *b) {
  if (a->family != b->family) return 0;
  int len = a->family == AF_INET ? 32 : 128;
  int prefix = a->prefix < 0 ? len : a->prefix;
  return ipaddr_prefix_equal(a->bytes, b->bytes, prefix);
}

socklen_t ipaddr_to_sockaddr(const struct ipaddr *a, uint16_t port, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof(*ss));
  if (a->family == AF_INET) {
    struct sockaddr_in *s = (struct sockaddr_in *)ss;
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    memcpy(&s->sin_addr, a->bytes, 4);
    return sizeof(*s);
  }
  struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
  s->sin6_family = AF_INET6;
  s->sin6_port = htons(port);
  memcpy(&s->sin6_addr, a->bytes, 16);
  return sizeof(*s);
}

void sockaddr_str(const struct sockaddr *sa, char *buf, size_t cap) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s = (const struct sockaddr_in *)sa;
    inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
    snprintf(buf, cap, "%s<%u>", host, ntohs(s->sin_port));
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)sa;
    char scope[IF_NAMESIZE + 1] = "";
    inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
    if (s->sin6_scope_id && if_indextoname(s->sin6_scope_id, scope + 1)) scope[0] = '%';
    snprintf(buf, cap, "[%s%s]<%u>", host, scope, ntohs(s->sin6_port));
  } else {
    snprintf(buf, cap, "(address family %d)", sa->sa_family);
  }
}
