/* SPDX-License-Identifier: Apache-2.0 */
/* See port_state.h. A few ports per process: a small table under a lock
 * that is taken on port events, by the liveness thread, and by a stall's
 * verdict, never on the data path. */
#include "transport/run/port_state.h"

#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "topo/sysfs.h"
#include "transport/run/waitfor.h"

#define PORTS_MAX 32

struct port_spell {
  char dev[64];
  int port;
  int64_t down_ns; /* down since; 0 while up */
  int64_t back_ns; /* its last return; 0 never */
  int64_t deadline_ns;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct port_spell ports[PORTS_MAX];
static int nports;

static struct port_spell *find(const char *dev, int port) {
  for (int k = 0; k < nports; k++)
    if (ports[k].port == port && !strcmp(ports[k].dev, dev)) return &ports[k];
  if (nports == PORTS_MAX) return NULL; /* more ports than any host has: not tracked */
  struct port_spell *p = &ports[nports++];
  snprintf(p->dev, sizeof(p->dev), "%s", dev);
  p->port = port;
  return p;
}

void run_port_down(const char *dev, int port, int64_t now, int64_t deadline_ns) {
  pthread_mutex_lock(&lock);
  struct port_spell *p = find(dev, port);
  if (p && !p->down_ns) p->down_ns = now, p->deadline_ns = deadline_ns;
  pthread_mutex_unlock(&lock);
}

int64_t run_port_up(const char *dev, int port, int64_t now) {
  int64_t since = 0;
  pthread_mutex_lock(&lock);
  struct port_spell *p = find(dev, port);
  if (p && p->down_ns) since = p->down_ns, p->down_ns = 0, p->back_ns = now;
  pthread_mutex_unlock(&lock);
  return since;
}

bool run_port_is_down(const char *dev, int port) {
  bool is_down = false;
  pthread_mutex_lock(&lock);
  for (int k = 0; k < nports && !is_down; k++)
    is_down = ports[k].down_ns && ports[k].port == port && !strcmp(ports[k].dev, dev);
  pthread_mutex_unlock(&lock);
  return is_down;
}

bool run_port_down_now(struct run_port_down_view *out) {
  const struct port_spell *first = NULL;
  pthread_mutex_lock(&lock);
  for (int k = 0; k < nports; k++) /* the one down longest */
    if (ports[k].down_ns && (!first || ports[k].down_ns < first->down_ns)) first = &ports[k];
  if (first && out) {
    snprintf(out->words, sizeof(out->words), "%s port %d", first->dev, first->port);
    out->since_ns = first->down_ns;
    out->deadline_ns = first->deadline_ns;
  }
  pthread_mutex_unlock(&lock);
  return first != NULL;
}

int64_t run_port_last_down_ns(int64_t now) {
  int64_t last = 0;
  pthread_mutex_lock(&lock);
  for (int k = 0; k < nports && last != now; k++) {
    if (ports[k].down_ns) last = now;
    else if (ports[k].back_ns > last) last = ports[k].back_ns;
  }
  pthread_mutex_unlock(&lock);
  return last;
}

double run_port_rate(const char *dev, int port, char *text, size_t cap) {
  char buf[64] = "";
  if (sysfs_read_str(buf, sizeof(buf), "class/infiniband/%s/ports/%d/rate", dev, port)) return 0;
  if (text) snprintf(text, cap, "%s", buf);
  double gbps = strtod(buf, NULL);
  return gbps > 0 ? gbps : 0;
}

bool run_iface_down(const char *ifname, char *how, size_t cap) {
  struct ifreq ifr;
  if (!ifname || !ifname[0] || strlen(ifname) >= sizeof(ifr.ifr_name)) return false;
  memset(&ifr, 0, sizeof(ifr));
  memcpy(ifr.ifr_name, ifname, strlen(ifname));
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int err = ioctl(fd, SIOCGIFFLAGS, &ifr);
  close(fd);
  if (err || ((ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING))) return false;
  snprintf(how, cap, "%s",
           !(ifr.ifr_flags & IFF_UP)
             ? "is down (set down on this host: ip link set it up)"
             : "has no carrier (the link is down: its cable, transceiver or switch port)");
  return true;
}

static uint32_t secs16(int64_t ns) {
  int64_t s = ns > 0 ? ns / 1000000000LL : 0;
  return s > 0xffff ? 0xffffu : (uint32_t)s;
}

uint32_t run_port_answer(int64_t now) {
  struct run_port_down_view v;
  if (run_port_down_now(&v)) return RUN_PORT_DOWN | secs16(now - v.since_ns);
  int64_t last = run_port_last_down_ns(now);
  if (!last || now - last > RUN_PORT_TELL_SEC * 1000000000LL) return 0;
  return RUN_PORT_WAS_DOWN | secs16(now - last);
}

bool run_port_word_down(uint32_t word, int *secs) {
  if (!(word & RUN_PORT_DOWN)) return false;
  if (secs) *secs = (int)(word & 0xffffu);
  return true;
}

int64_t run_port_word_last_down_ns(uint32_t word, int64_t at) {
  if (word & RUN_PORT_DOWN) return at;
  if (!(word & RUN_PORT_WAS_DOWN)) return 0;
  /* whole seconds, rounded down: the latest its return can have been */
  return at - (int64_t)(word & 0xffffu) * 1000000000LL;
}
