/* SPDX-License-Identifier: Apache-2.0 */
#include "transport/idle.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "transport/prefs.h"
#include "transport/sock.h"

#define MAX_WAIT_FDS 128
/* A comm's sockets stay in its thread's wait set this long after it last
 * waited: long enough to outlive a pass of NCCL's proxy over many comms,
 * short enough that a closed comm's stale entries (at worst a wait that
 * returns at once) go soon. */
#define ENTRY_TTL_NS 20000000LL

struct wait_entry {
  const void *owner;
  int64_t seen;
  struct pollfd pfd;
};

static int wake_fd = -1;
static atomic_int waiters;
static pthread_once_t wake_once = PTHREAD_ONCE_INIT;
static int64_t spin_ns, wait_ns;
static _Thread_local int64_t last_progress;
static _Thread_local struct wait_entry wait_entries[MAX_WAIT_FDS];
static _Thread_local int nwait_entries;
static _Thread_local const void *last_noted; /* the owner the last bare note refreshed, and when */
static _Thread_local int64_t last_noted_ns;

static void wake_init(void) {
  wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  spin_ns = transport_prefs()->spin_us * 1000;
  wait_ns = transport_prefs()->idle_wait_us * 1000;
}

void transport_idle_progress(void) { last_progress = now_ns(); }

bool transport_idle_should_wait(void) {
  pthread_once(&wake_once, wake_init);
  if (!wait_ns || wake_fd < 0) return false;
  int64_t now = now_ns();
  if (!last_progress) last_progress = now;
  return now - last_progress > spin_ns;
}

/* Drops expired entries, refreshes owner's, then (replace) drops owner's
 * or (merge) keeps them, and adds fds it lacks. */
static void set_update(const void *owner, const struct pollfd *fds, int n, int replace) {
  int64_t now = now_ns();
  int k = 0;
  for (int i = 0; i < nwait_entries; i++) {
    if (wait_entries[i].owner == owner) {
      if (replace) continue;
      wait_entries[i].seen = now;
    }
    if (now - wait_entries[i].seen < ENTRY_TTL_NS) wait_entries[k++] = wait_entries[i];
  }
  for (int i = 0; i < n && k < MAX_WAIT_FDS - 1; i++) {
    if (fds[i].fd < 0 || !fds[i].events) continue;
    int have = 0;
    for (int j = 0; j < k && !have; j++)
      have = wait_entries[j].owner == owner && wait_entries[j].pfd.fd == fds[i].fd &&
             wait_entries[j].pfd.events == fds[i].events;
    if (!have) wait_entries[k++] = (struct wait_entry){owner, now, {fds[i].fd, fds[i].events, 0}};
  }
  nwait_entries = k;
}

/* A bare note (nothing to add) for the owner refreshed a moment ago has
 * nothing to do: NCCL's proxy tests the same comm many times in a row. */
#define NOTE_AGAIN_NS 1000000LL
void transport_idle_note(const void *owner, const struct pollfd *fds, int n) {
  if (n == 0) {
    int64_t now = now_ns();
    if (owner == last_noted && now - last_noted_ns < NOTE_AGAIN_NS) return;
    last_noted = owner;
    last_noted_ns = now;
  }
  set_update(owner, fds, n, 0);
}

void transport_idle_wait(const void *owner, const struct pollfd *fds, int n) {
  struct pollfd all[MAX_WAIT_FDS];
  set_update(owner, fds, n, 1);
  int k = 0;
  for (; k < nwait_entries; k++) all[k] = wait_entries[k].pfd;
  all[k] = (struct pollfd){wake_fd, POLLIN, 0};
  struct timespec ts = {0, (long)wait_ns};
  atomic_fetch_add(&waiters, 1);
  ppoll(all, (nfds_t)k + 1, &ts, NULL);
  atomic_fetch_sub(&waiters, 1);
  if (all[k].revents & POLLIN) {
    uint64_t v;
    ssize_t r = read(wake_fd, &v, sizeof(v));
    (void)r;
  }
}

void transport_idle_forget(const void *owner) {
  if (owner == last_noted) last_noted = NULL;
  set_update(owner, NULL, 0, 1);
}

void transport_idle_wake(void) {
  /* Acquire: a waiter increments after creating wake_fd, so we see it. */
  if (atomic_load_explicit(&waiters, memory_order_acquire) == 0) return;
  uint64_t one = 1;
  ssize_t r = write(wake_fd, &one, sizeof(one));
  (void)r;
}
