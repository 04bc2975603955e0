/* Small helpers every transport uses. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plugin/knobs.h"
#include "plugin/log.h"
#include "transport/xp.h"

void xp_peer_describe(struct xp_peer *p, const struct hello *h, const char *addr) {
  memset(p, 0, sizeof(*p));
  p->hello = *h;
  snprintf(p->addr, sizeof(p->addr), "%s", addr);
  snprintf(p->desc, sizeof(p->desc), "%s (%s%s%s)", h->host[0] ? h->host : "unknown host", addr,
           h->ifname[0] ? ", " : "", h->ifname);
}

void xp_setup_init(struct xp_setup *s, const struct xp_dev *dev, int send_side, int ctrl_fd,
                   const struct hello *mine, const struct hello *peer, const char *peer_addr) {
  memset(s, 0, sizeof(*s));
  s->dev = dev;
  s->send_side = send_side;
  s->ctrl_fd = ctrl_fd;
  s->mine = *mine;
  xp_peer_describe(&s->peer, peer, peer_addr);
}

/* NCCL's meaning: threads x sockets per thread, at most 64 sockets. Auto
 * values were chosen by measurement (bench/README.md). */
void xp_socket_shape(int *nsocks, int *nthreads) {
  int th = (int)knob_int(K_SOCKET_NTHREADS);
  int per = (int)knob_int(K_NSOCKS_PERTHREAD);
  if (th == -2) th = 2;
  if (per == -2) per = 1;
  if (per < 1) per = 1;
  int total = (th ? th : 1) * per;
  if (total > XP_MAX_DATA_SOCKS) {
    static int warned;
    if (!warned++)
      WARN("NCCL_SOCKET_NTHREADS=%d x NCCL_NSOCKS_PERTHREAD=%d is %d sockets per connection, "
           "more than the %d allowed; using %d",
           th, per, total, XP_MAX_DATA_SOCKS, XP_MAX_DATA_SOCKS);
    total = XP_MAX_DATA_SOCKS;
  }
  *nsocks = total;
  *nthreads = th;
}
