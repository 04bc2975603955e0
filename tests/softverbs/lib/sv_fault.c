/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: fault hooks, for what the network itself cannot produce.
 *
 *   SOFTVERBS_NODEV=ENOSYS               ibv_get_device_list fails (NULL, errno);
 *                                        an errno name or number, else ENOSYS
 *   SOFTVERBS_PORT_DOWN=mlx5_2:1,mlx5_3  ports reported DOWN (no ":port": all)
 *   SOFTVERBS_OPEN_FAIL=mlx5_2:EPERM,*   ibv_open_device fails with that errno
 *                                        (default ENOENT, as without the
 *                                        device's /dev/infiniband/uverbsN)
 *   SOFTVERBS_FAIL_MODIFY=RTR:ETIMEDOUT[:dev[:count]],...
 *                                        modify_qp to that state fails with that
 *                                        errno (on dev, or "*"; the first count
 *                                        times, or always)
 *   SOFTVERBS_WC_ERROR=RETRY_EXC_ERR[:after[:dev]]
 *                                        after that many successful send
 *                                        completions, the next one carries this
 *                                        status instead (once)
 *   SOFTVERBS_DROP_ABOVE=BYTES[:dev]     writes and sends of more than BYTES
 *                                        never arrive (a hop whose MTU is below
 *                                        the path MTU: a path-MTU black hole);
 *                                        the requester retries, then
 *                                        RETRY_EXC_ERR
 *   SOFTVERBS_LOSS=PER_MILLE[:dev[:ADDR]] that share of the writes and sends
 *                                        from dev (to the GID whose address is
 *                                        ADDR) is lost on the way: a lossy
 *                                        link or priority; the requester
 *                                        resends on the sequence NAK or the
 *                                        ACK timeout, and the ports count it
 * Hooks with a count are counted from the first call that sees the value;
 * setting a new value starts over. */
#include "sv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;

int sv_fault_nodev(void) {
  const char *v = sv_env("SOFTVERBS_NODEV");
  if (!v) return 0;
  int e = sv_parse_errno(v);
  return e ? e : ENOSYS;
}

static bool dev_matches(const char *want, const char *dev) {
  return !*want || !strcmp(want, "*") || !strcmp(want, dev);
}

bool sv_fault_port_down(const char *dev, int port) {
  const char *v = sv_env("SOFTVERBS_PORT_DOWN");
  if (!v) return false;
  char list[512], *save = NULL;
  snprintf(list, sizeof list, "%s", v);
  for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(item, ':');
    if (colon) *colon = 0;
    if (dev_matches(item, dev) && (!colon || atoi(colon + 1) == port)) return true;
  }
  return false;
}

/* Per-value state of the counted hooks. */
static struct {
  char spec[512];
  unsigned used[16];
} modify_state;
static struct {
  char spec[128];
  unsigned seen;
  bool fired;
} wc_state;

int sv_fault_modify(const char *dev, int to_state) {
  const char *v = sv_env("SOFTVERBS_FAIL_MODIFY");
  if (!v) return 0;
  char list[512], *save = NULL;
  int result = 0;
  snprintf(list, sizeof list, "%s", v);
  pthread_mutex_lock(&fault_lock);
  if (strcmp(modify_state.spec, list)) {
    memset(&modify_state, 0, sizeof modify_state);
    snprintf(modify_state.spec, sizeof modify_state.spec, "%s", list);
  }
  int rule = 0;
  for (char *item = strtok_r(list, ",", &save); item && !result && rule < 16;
       item = strtok_r(NULL, ",", &save), rule++) {
    char *f[4] = {item, "", "", ""};
    for (int i = 1; i < 4 && (f[i] = strchr(f[i - 1], ':')) != NULL; i++) *f[i]++ = 0;
    for (int i = 1; i < 4; i++)
      if (!f[i]) f[i] = "";
    long count = *f[3] ? atol(f[3]) : -1;
    if (sv_qp_state_parse(f[0]) != to_state || !dev_matches(f[2], dev)) continue;
    if (count >= 0 && modify_state.used[rule] >= (unsigned long)count) continue;
    modify_state.used[rule]++;
    result = sv_parse_errno(f[1]);
    if (!result) result = EINVAL;
  }
  pthread_mutex_unlock(&fault_lock);
  if (result)
    sv_log("fault hook: modify_qp to %s on %s fails with %s", sv_qp_state_name(to_state), dev,
           strerror(result));
  return result;
}

enum ibv_wc_status sv_fault_wc(const char *dev) {
  const char *v = sv_env("SOFTVERBS_WC_ERROR");
  if (!v) return IBV_WC_SUCCESS;
  char spec[128];
  snprintf(spec, sizeof spec, "%s", v);
  char *after = strchr(spec, ':'), *want = "";
  if (after) *after++ = 0;
  if (after && (want = strchr(after, ':')) != NULL) *want++ = 0;
  if (!want) want = "";
  int status = sv_wc_status_parse(spec);
  if (status <= 0 || !dev_matches(want, dev)) return IBV_WC_SUCCESS;
  enum ibv_wc_status st = IBV_WC_SUCCESS;
  pthread_mutex_lock(&fault_lock);
  if (strcmp(wc_state.spec, v)) {
    memset(&wc_state, 0, sizeof wc_state);
    snprintf(wc_state.spec, sizeof wc_state.spec, "%s", v);
  }
  if (!wc_state.fired && wc_state.seen++ == (unsigned)(after ? atoi(after) : 0)) {
    wc_state.fired = true;
    st = (enum ibv_wc_status)status;
  }
  pthread_mutex_unlock(&fault_lock);
  if (st != IBV_WC_SUCCESS)
    sv_log("fault hook: a completion on %s carries %s", dev, ibv_wc_status_str(st));
  return st;
}

bool sv_fault_drops(const char *dev, uint32_t len) {
  const char *v = sv_env("SOFTVERBS_DROP_ABOVE");
  if (!v) return false;
  char spec[128];
  snprintf(spec, sizeof spec, "%s", v);
  char *want = strchr(spec, ':');
  if (want) *want++ = 0;
  return len > strtoul(spec, NULL, 10) && dev_matches(want ? want : "", dev);
}

int sv_fault_open(const char *dev) {
  const char *v = sv_env("SOFTVERBS_OPEN_FAIL");
  if (!v) return 0;
  char list[512], *save = NULL;
  snprintf(list, sizeof list, "%s", v);
  for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char *colon = strchr(item, ':');
    if (colon) *colon++ = 0;
    if (!dev_matches(item, dev)) continue;
    int e = colon ? sv_parse_errno(colon) : 0;
    sv_log("fault hook: opening %s fails with %s", dev, strerror(e ? e : ENOENT));
    return e ? e : ENOENT;
  }
  return 0;
}

/* The destination GID as the address a user names: IPv4 for a v4-mapped
 * GID, IPv6 otherwise. */
static void gid_text(const union ibv_gid *gid, char *out, size_t cap) {
  struct sockaddr_storage ss;
  const void *a = gid->raw;
  int family = AF_INET6;
  if (sv_gid_to_addr(gid, &ss) && ss.ss_family == AF_INET) {
    a = &((struct sockaddr_in *)&ss)->sin_addr;
    family = AF_INET;
  }
  if (!inet_ntop(family, a, out, (socklen_t)cap)) *out = 0;
}

/* splitmix64 over a shared counter: which messages are lost need not be
 * reproducible, only spread evenly and cheap under any QP's lock. */
static uint64_t next_random(void) {
  static _Atomic uint64_t state = 0x9e3779b97f4a7c15ull;
  uint64_t z = atomic_fetch_add(&state, 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool sv_fault_loses(const char *dev, const union ibv_gid *dgid) {
  const char *v = sv_env("SOFTVERBS_LOSS");
  if (!v) return false;
  char spec[160], addr[INET6_ADDRSTRLEN];
  snprintf(spec, sizeof spec, "%s", v);
  char *want = strchr(spec, ':'), *to = NULL;
  if (want) *want++ = 0;
  if (want && (to = strchr(want, ':')) != NULL) *to++ = 0;
  long per_mille = strtol(spec, NULL, 10);
  if (per_mille <= 0 || !dev_matches(want ? want : "", dev)) return false;
  if (to && *to) {
    gid_text(dgid, addr, sizeof addr);
    if (strcmp(addr, to)) return false;
  }
  return next_random() % 1000 < (uint64_t)per_mille;
}
