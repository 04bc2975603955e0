/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/handle.h"
#include "common/strutil.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "transport/wire.h"

#define HANDLE_HDR_LEN 48 /* fixed part: through the host name */

int handle_encode(const struct handle *h, uint8_t out[NCCL_NET_HANDLE_MAXSIZE]) {
  memset(out, 0, NCCL_NET_HANDLE_MAXSIZE);
  struct wbuf w = {out, NCCL_NET_HANDLE_MAXSIZE, 0, 0};
  uint8_t flags = h->flags & (uint8_t)~HANDLE_F_TRUNCATED;
  w_u32(&w, DIAG_MAGIC);
  w_u8(&w, HANDLE_VERSION);
  w_u8(&w, flags);
  w_u8(&w, 0); /* candidate count, patched below */
  w_u8(&w, h->nsocks);
  w_u8(&w, h->nthreads);
  w_u8(&w, 0);
  w_u16(&w, 0);
  w_u32(&w, h->dev);
  w_u64(&w, h->nonce);
  w_u64(&w, 0); /* HANDLE_STATE_OFF: connector-private */
  char host[HANDLE_HOST_LEN] = {0};
  scopy(host, sizeof(host), h->host);
  w_bytes(&w, host, HANDLE_HOST_LEN);

  int n = 0;
  for (int i = 0; i < h->ncands && i < HANDLE_MAX_CAND; i++) {
    const struct handle_cand *c = &h->cands[i];
    size_t alen = c->addr.family == AF_INET ? 4 : 16;
    size_t iflen = strnlen(c->ifname, HANDLE_IFNAME_LEN - 1);
    size_t need = 1 + 1 + 2 + alen + 1 + iflen;
    if (w.len + need > w.cap) {
      flags |= HANDLE_F_TRUNCATED;
      break;
    }
    w_u8(&w, c->addr.family == AF_INET ? 4 : 6);
    w_u8(&w, (uint8_t)(c->addr.prefix < 0 ? 255 : c->addr.prefix));
    w_u16(&w, c->port);
    w_bytes(&w, c->addr.bytes, alen);
    w_u8(&w, (uint8_t)iflen);
    w_bytes(&w, c->ifname, iflen);
    n++;
  }
  out[5] = flags;
  out[6] = (uint8_t)n;
  return n;
}

enum handle_err handle_decode(const uint8_t in[NCCL_NET_HANDLE_MAXSIZE], struct handle *h,
                              char *why, size_t cap) {
  struct rbuf r = {in, NCCL_NET_HANDLE_MAXSIZE, 0, 0};
  memset(h, 0, sizeof(*h));
  uint32_t magic = r_u32(&r);
  if (magic != DIAG_MAGIC) {
    snprintf(why, cap, "magic 0x%08x is not ours (0x%08x)", magic, DIAG_MAGIC);
    return HANDLE_BAD_MAGIC;
  }
  h->version = r_u8(&r);
  if (h->version != HANDLE_VERSION) {
    snprintf(why, cap, "handle protocol version %u, this build speaks %u", h->version,
             HANDLE_VERSION);
    return HANDLE_BAD_VERSION;
  }
  h->flags = r_u8(&r);
  int ncand = r_u8(&r);
  h->nsocks = r_u8(&r);
  h->nthreads = r_u8(&r);
  (void)r_u8(&r);
  (void)r_u16(&r);
  h->dev = r_u32(&r);
  h->nonce = r_u64(&r);
  (void)r_u64(&r); /* connector-private state */
  const uint8_t *host = r_take(&r, HANDLE_HOST_LEN);
  if (!host) goto corrupt;
  wire_clean_str(h->host, sizeof(h->host), host, strnlen((const char *)host, HANDLE_HOST_LEN - 1));
  if (ncand < 1 || ncand > HANDLE_MAX_CAND) {
    snprintf(why, cap, "%d candidate addresses (1..%d expected)", ncand, HANDLE_MAX_CAND);
    return HANDLE_CORRUPT;
  }
  if (h->nsocks > 64 || h->nthreads > 16) {
    snprintf(why, cap, "%u sockets and %u threads per connection exceed 64 and 16", h->nsocks,
             h->nthreads);
    return HANDLE_CORRUPT;
  }
  for (int i = 0; i < ncand; i++) {
    struct handle_cand *c = &h->cands[i];
    uint8_t fam = r_u8(&r);
    uint8_t prefix = r_u8(&r);
    c->port = r_u16(&r);
    if (r.is_short) goto corrupt;
    if (fam != 4 && fam != 6) {
      snprintf(why, cap, "candidate %d has address family %u", i, fam);
      return HANDLE_CORRUPT;
    }
    c->addr.family = fam == 4 ? AF_INET : AF_INET6;
    int maxp = fam == 4 ? 32 : 128;
    if (prefix != 255 && prefix > maxp) {
      snprintf(why, cap, "candidate %d has prefix length %u", i, prefix);
      return HANDLE_CORRUPT;
    }
    c->addr.prefix = prefix == 255 ? -1 : prefix;
    if (r_bytes(&r, c->addr.bytes, fam == 4 ? 4 : 16)) goto corrupt;
    uint8_t iflen = r_u8(&r);
    if (iflen >= HANDLE_IFNAME_LEN) {
      snprintf(why, cap, "candidate %d has an interface name of %u bytes", i, iflen);
      return HANDLE_CORRUPT;
    }
    const uint8_t *ifn = r_take(&r, iflen);
    if (!ifn) goto corrupt;
    wire_clean_str(c->ifname, sizeof(c->ifname), ifn, iflen);
    if (c->port == 0) {
      snprintf(why, cap, "candidate %d has port 0", i);
      return HANDLE_CORRUPT;
    }
  }
  h->ncands = ncand;
  return HANDLE_OK;
corrupt:
  snprintf(why, cap, "the handle ends inside its address list");
  return HANDLE_CORRUPT;
}

void handle_local_host(char host[HANDLE_HOST_LEN]) {
  char name[256] = {0};
  gethostname(name, sizeof(name) - 1);
  name[strcspn(name, ".")] = 0;
  snprintf(host, HANDLE_HOST_LEN, "%.*s", HANDLE_HOST_LEN - 1, name);
}

bool handle_host_is_local(const struct handle *h) {
  char mine[HANDLE_HOST_LEN];
  handle_local_host(mine);
  return !strcmp(mine, h->host);
}
