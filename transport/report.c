/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/report.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "common/ncclver.h"
#include "transport/prefs.h"
#include "transport/transport.h"

#define REPORT_SLOTS 256

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seen[REPORT_SLOTS];
static int nseen;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ULL;
  return h ? h : 1;
}

bool report_first(const char *key) {
  uint64_t h = hash_str(key);
  bool first = true;
  pthread_mutex_lock(&report_lock);
  for (int i = 0; i < nseen; i++)
    if (seen[i] == h) first = false;
  if (first) seen[nseen++ % REPORT_SLOTS] = h;
  if (nseen > REPORT_SLOTS) nseen = REPORT_SLOTS;
  pthread_mutex_unlock(&report_lock);
  return first;
}

static bool is_offerable(const char *ifname) {
  return ifname && ifname[0] && strncmp(ifname, "lo", 2) != 0;
}

bool report_job_ifname(const char *if_a, const char *if_b, char *buf, size_t cap) {
  bool a = is_offerable(if_a), b = is_offerable(if_b);
  buf[0] = 0;
  if (a && b && strcmp(if_a, if_b)) {
    bool a_first = strcmp(if_a, if_b) < 0;
    snprintf(buf, cap, "%s,%s", a_first ? if_a : if_b, a_first ? if_b : if_a);
  } else if (a || b) {
    snprintf(buf, cap, "%s", a ? if_a : if_b);
  }
  return buf[0] != 0;
}

bool report_routable_ifname(const char *skip, char *buf, size_t cap) {
  const struct netif_list *l = &transport_host()->ifs;
  int k;
  bool has_default;
  int i = netif_routable_pick(l, skip, &k, &has_default);
  buf[0] = 0;
  if (i < 0) return false;
  const struct netif *n = &l->ifs[i];
  char a[64];
  ipaddr_cidr(&n->addr[k], a, sizeof(a));
  bool needs_v6 = n->addr[k].family == AF_INET6 && transport_prefs()->socket_family == 0;
  snprintf(buf, cap, "NCCL_SOCKET_IFNAME=%s%s (here %s has %s, is up%s)", n->name,
           needs_v6 ? " and NCCL_SOCKET_FAMILY=AF_INET6" : "", n->name, a,
           has_default ? " and holds the default route" : "");
  return true;
}

void report_size_mismatch(const char *settings_diff, const char *peer_host, char *buf, size_t cap) {
  if (settings_diff) {
    snprintf(buf, cap,
             "the two hosts differ where message sizes are decided: %s. Make them the same on "
             "every node",
             settings_diff);
    return;
  }
  char me[64] = "this host";
  if (!gethostname(me, sizeof(me) - 1)) me[sizeof(me) - 1] = 0;
  snprintf(buf, cap,
           "NCCL, the plugin and the NCCL_* settings that size messages (NCCL_PROTO, NCCL_ALGO, "
           "NCCL_BUFFSIZE, ...) are the same on %s and %s, so the application posts mismatched "
           "sizes: a send and a receive that do not pair up (ranks or tags out of step, or "
           "different counts on the two ranks). Check that both ranks issue the same sequence of "
           "sends and receives with the same sizes",
           me, peer_host);
}

char *report_settings_diff(const struct hello *mine, const struct hello *peer, int *err) {
  char diff[1200];
  *err = 0;
  if (hello_diff(mine, peer, diff, sizeof(diff)) <= 0) return NULL;
  char *d = strdup(diff);
  if (!d) *err = ENOMEM;
  return d;
}

int report_hello(const struct hello *mine, const struct hello *peer, const char *peer_desc,
                 const char *role) {
  char diff[2048], mv[32], pv[32];
  int n = hello_diff(mine, peer, diff, sizeof(diff));
  nccl_version_str((int)peer->nccl_version, pv, sizeof(pv));
  nccl_version_str((int)mine->nccl_version, mv, sizeof(mv));
  struct ev e;
  ev_begin(&e, "handshake");
  ev_str(&e, "role", role);
  ev_str(&e, "peer", peer_desc);
  ev_str(&e, "peer_host", peer->host);
  ev_str(&e, "peer_plugin_version", peer->plugin_version);
  ev_str(&e, "peer_nccl_version", pv);
  ev_str(&e, "nccl_version", mv);
  ev_str(&e, "peer_transport", peer->transport);
  ev_int(&e, "differences", n);
  if (n) ev_str(&e, "diff", diff);
  ev_end(&e);
  INFO(LOG_NET, "handshake (%s) with %s: plugin %s, NCCL %s, device %s", role, peer_desc,
       peer->plugin_version, pv, peer->dev);
  if (!n) return 0;
  ev_count(C_HELLO_MISMATCHES, 1);
  char key[2300];
  snprintf(key, sizeof(key), "hello|%s|%s", peer->host, diff);
  if (report_first(key))
    WARN("hosts %s and %s are configured differently: %s. Every node of a job needs the same "
         "NCCL, plugin and NCCL_* settings (check each node and each container's environment, "
         "including /proc/1/environ where a scheduler injects variables)",
         mine->host, peer->host, diff);
  else
    INFO(LOG_NET, "hosts %s and %s are configured differently: %s", mine->host, peer->host, diff);
  return n;
}
