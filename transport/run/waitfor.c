/* SPDX-License-Identifier: Apache-2.0 */
/* The wait-for facts on the liveness channel (waitfor.h), and the root's
 * own word: a process that peers wait on while its caller posts nothing
 * says so in its own log, so every rank's log and explain name it. */
#include "transport/run/waitfor.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "transport/run/stall.h"

static pthread_mutex_t root_lock = PTHREAD_MUTEX_INITIALIZER;
static struct run_root my_root;

void run_root_set(const struct run_root *r) {
  pthread_mutex_lock(&root_lock); /* a copy: never held for long */
  my_root = *r;
  pthread_mutex_unlock(&root_lock);
}

bool run_root_get(struct run_root *r) {
  pthread_mutex_lock(&root_lock);
  *r = my_root;
  pthread_mutex_unlock(&root_lock);
  return r->verdict != RUN_ROOT_NONE;
}

uint16_t run_answer_flags(int64_t now) {
  int64_t idle = run_caller_idle_ns(now) / 1000000000LL;
  if (idle > 0x7fff) idle = 0x7fff;
  return (uint16_t)(RUN_FLAG_IDLE_SET | (uint16_t)idle);
}

int run_idle_from_flags(uint16_t flags) {
  return flags & RUN_FLAG_IDLE_SET ? (int)(flags & 0x7fffu) : -1;
}

void run_waited_on(const char *src, int64_t now) {
  static atomic_llong said_idle_since; /* once per idle spell */
  const struct run_prefs *pr = run_prefs_read();
  int64_t idle = run_caller_idle_ns(now);
  if (!pr->stall_ns || idle < pr->stall_ns) return;
  long long since = (long long)(now - idle);
  if (atomic_exchange(&said_idle_since, since) == since) return;
  long long secs = (long long)(idle / 1000000000LL);
  WARN("stall: this process (pid %d) is the one its peers wait on: its caller has posted nothing "
       "to the network for %lld s while the process at %s waits for it, so it did not enter "
       "the collective its peers are in. Fix: look at its stack with py-spy dump --pid %d",
       (int)getpid(), secs, src, (int)getpid());
  if (!ev_enabled()) return;
  struct ev e;
  ev_begin(&e, "stall");
  ev_str(&e, "verdict", "self_caller_idle");
  ev_str(&e, "waited_on_by", src);
  ev_int(&e, "caller_idle_s", secs);
  ev_end(&e);
}
