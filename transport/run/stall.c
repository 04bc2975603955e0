/* SPDX-License-Identifier: Apache-2.0 */
/* The stall verdict of one connection (stall.h): whom it waits for, and
 * what that process's liveness and caller say, root first. */
#include "transport/run/stall.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/events.h"
#include "common/knobs.h"
#include "common/log.h"
#include "transport/liveness.h"
#include "transport/run/conns.h"
#include "transport/run/path_words.h"
#include "transport/run/port_state.h"
#include "transport/run/slow.h"
#include "transport/run/waitfor.h"
#include "transport/sock.h"
#include "transport/transport.h"

atomic_bool run_called;
static _Atomic int64_t last_call_ns; /* the pass that last saw run_called raised */

void run_loop_tick(int64_t now, int64_t loop_ns) {
  static int64_t last_ns; /* the liveness thread's own */
  int64_t gap = last_ns ? now - last_ns : 0;
  last_ns = now;
  if (atomic_exchange_explicit(&run_called, false, memory_order_relaxed)) {
    atomic_store(&last_call_ns, now);
    run_slow_tick(now);
    return;
  }
  int64_t t = atomic_load(&last_call_ns);
  /* The whole process was stopped: its caller was not idle, it was frozen. */
  if (gap > loop_ns + 1500000000LL && t)
    atomic_compare_exchange_strong(&last_call_ns, &t, t + gap - loop_ns);
  run_slow_tick(now); /* the slow-link windows, off the proxy thread */
}

int64_t run_caller_idle_ns(int64_t now) {
  if (atomic_load_explicit(&run_called, memory_order_relaxed)) return 0; /* since the last pass */
  int64_t t = atomic_load_explicit(&last_call_ns, memory_order_relaxed);
  return t && now > t ? now - t : 0;
}

const struct run_prefs *run_prefs_read(void) {
  static struct run_prefs p;
  static atomic_bool is_read;
  if (!atomic_load(&is_read)) { /* racing readers compute the same value */
    p.stall_ns = transport_prefs()->stall_sec * 1000000000LL;
    atomic_store(&is_read, true);
  }
  return &p;
}

static const char *const wait_words[] = {
  [RUN_WAIT_DATA] = "a posted receive got no byte",
  [RUN_WAIT_BYTES] = "a message under way stopped moving",
  [RUN_WAIT_DRAIN] = "a send is not taken by the peer",
  [RUN_WAIT_CTS] = "a send has no clear-to-send (the peer posted no receive)",
};

/* The verdict, for the event and for explain: what the root is. */
enum verdict {
  V_PEER_STOPPED,
  V_PEER_CALLER_IDLE,
  V_LINK,
  V_PEER_WAITS,
  V_UNKNOWN,
  V_PORT_HERE, /* an RDMA port of this process is down */
  V_PORT_PEER, /* one of the peer's is, as its answers say */
  V_IFACE_HERE /* a TCP connection's interface here is down */
};
static const char *const verdict_ids[] = {"peer_not_answering", "peer_caller_idle", "link",
                                          "peer_waits",         "unknown",          "port_down",
                                          "peer_port_down",     "interface_down"};

static enum verdict judge(enum liveness_view lv, int idle_s, int stall_s, enum run_wait kind,
                          bool is_cut, bool is_peer_port_down) {
  /* A port that is down stops every connection through it, whatever else
   * the figures show: its own process says so (the caller, before
   * judging), and the peers hear it in the answers. */
  if (lv == LIVENESS_ANSWERS && is_peer_port_down) return V_PORT_PEER;
  /* A silent peer whose checks go unacknowledged: the path, not the process. */
  if (lv == LIVENESS_SILENT || lv == LIVENESS_LOST) return is_cut ? V_LINK : V_PEER_STOPPED;
  if (lv != LIVENESS_ANSWERS) return V_UNKNOWN;
  /* A rank in a collective tests all the time (idle ~0); half the stall
   * leaves room for the age of its last answer. */
  if (idle_s >= (stall_s + 1) / 2) return V_PEER_CALLER_IDLE;
  /* Both processes run and post: a message whose bytes stopped mid-way, or
   * a send the peer's kernel does not take while the peer itself is busy
   * reading, is the path; a receive with nothing yet waits on the peer. */
  if (kind == RUN_WAIT_BYTES || (kind == RUN_WAIT_DRAIN && idle_s >= 0)) return V_LINK;
  return V_PEER_WAITS;
}

/* The stall behind a port of this process that is down: the root is
 * here, and the peers that wait on this process hear it (RUN_ROOT_PORT). */
static void say_port_here(struct transport_comm *c, const struct run_port_down_view *d, int64_t now,
                          const char *what, long long secs) {
  /* once per down spell: every connection through the port stalls at once */
  static _Atomic int64_t said_since;
  if (atomic_exchange(&said_since, d->since_ns) == d->since_ns) return;
  const struct transport_peer *p = &c->peer;
  double down = (double)(now - d->since_ns) * 1e-9, deadline = (double)d->deadline_ns * 1e-9;
  char left[200];
  if (down < deadline)
    snprintf(left, sizeof(left),
             "back within %.1f s more, nothing is lost (its queue pairs outlast %.1f s of it: "
             "NCCL_IB_TIMEOUT=%d, NCCL_IB_RETRY_CNT=%d)",
             deadline - down, deadline, (int)transport_prefs()->ib_timeout,
             (int)transport_prefs()->ib_retry_cnt);
  else
    snprintf(left, sizeof(left),
             "its queue pairs' deadline of %.1f s has passed, so the connections that had "
             "messages in flight on it have failed or will",
             deadline);
  WARN("stall: this host's RDMA port %s is down (for %.0f s, since its port error event), so "
       "nothing moves on the connection with %s pid %u (%s) nor on any other through it, and "
       "the ranks that talk to this process over it wait too; here %s for %lld s. Fix: bring "
       "the link back (ibstat, ip link, dmesg; the port's cable, transceiver and switch port): "
       "%s",
       d->words, down, p->host, p->who.pid, p->addr, what, secs, left);
}

/* A TCP connection whose interface here is down: the root is here; its
 * peers see a path that drops everything (their checks go the same way). */
static void say_iface_here(struct transport_comm *c, const char *how, int64_t now, const char *what,
                           long long secs) {
  /* once per spell: every connection through it stalls at once (a later
   * stall, a stall time after, is another spell) */
  static _Atomic int64_t said_ns;
  int64_t last = atomic_load(&said_ns);
  if (last && now - last < 2 * run_prefs_read()->stall_ns) return;
  atomic_store(&said_ns, now);
  const struct transport_peer *p = &c->peer;
  WARN("stall: this host's interface %s %s, so nothing moves on the connection with %s pid %u "
       "(%s) nor on any other through it, and the ranks that talk to this process over it wait "
       "too; here %s for %lld s. Fix: ip link show %s and ethtool %s on this host, then its "
       "cable and switch port: back within NCCL_DIAG_PEER_TIMEOUT_SEC (%lld s) of its peers' "
       "liveness checks, TCP resends and nothing is lost",
       c->dev->ifname, how, p->host, p->who.pid, p->addr, what, secs, c->dev->ifname,
       c->dev->ifname, (long long)transport_prefs()->peer_timeout_sec);
}

static void say(enum verdict v, const struct transport_peer *p, const char *live, int idle_s,
                const char *what, long long secs) {
  unsigned pid = p->who.pid;
  switch (v) {
  case V_PORT_PEER:
    WARN("stall: waiting on %s pid %u (%s), whose RDMA port is down (for %d s, as its liveness "
         "answers say): nothing moves through it until the link is back; here %s for %lld s. "
         "Fix: on %s, the port its log names (its 'port error' WARN): its cable, transceiver "
         "and switch port (ibstat, dmesg)",
         p->host, pid, p->addr, idle_s, what, secs, p->host);
    break;
  case V_PEER_STOPPED:
    WARN("stall: waiting on %s pid %u (%s), whose process %s: it is stopped, frozen or dead, or "
         "its host is cut off; here %s for %lld s. Fix: on %s run ps -o stat,cmd -p %u (T = "
         "stopped: kill -CONT %u; gone = it died, see its log)",
         p->host, pid, p->addr, live, what, secs, p->host, pid, pid);
    break;
  case V_PEER_CALLER_IDLE:
    WARN("stall: waiting on %s pid %u (%s), whose caller has posted nothing to the network for "
         "%d s while its process answers: it did not enter this collective; here %s for %lld s. "
         "Fix: look at its stack with py-spy dump --pid %u on %s",
         p->host, pid, p->addr, idle_s, what, secs, pid, p->host);
    break;
  case V_PEER_WAITS:
    WARN("stall: waiting on %s pid %u (%s), which answers and is busy itself, so it most likely "
         "waits on another rank; here %s for %lld s. Fix: run nccl-net-diag explain on every "
         "rank's log to follow the chain to its root",
         p->host, pid, p->addr, what, secs);
    break;
  default:
    WARN("stall: waiting on %s pid %u (%s), whose liveness is not checked here; here %s for "
         "%lld s. Fix: look at that process (py-spy dump --pid %u on %s)",
         p->host, pid, p->addr, what, secs, pid, p->host);
  }
}

static void event(enum verdict v, const struct transport_peer *p, const char *live_word, int idle_s,
                  enum run_wait kind, long long secs, long long pending) {
  if (!ev_enabled()) return;
  struct ev e;
  ev_begin(&e, "stall");
  ev_str(&e, "verdict", verdict_ids[v]);
  ev_str(&e, "peer_host", p->host);
  ev_int(&e, "peer_pid", p->who.pid);
  ev_str(&e, "peer", p->addr);
  ev_str(&e, "waits_for", wait_words[kind]);
  ev_str(&e, "peer_liveness", live_word);
  ev_int(&e, "peer_caller_idle_s", idle_s);
  ev_int(&e, "seconds", secs);
  ev_int(&e, "pending_bytes", pending);
  ev_end(&e);
}

void run_stall_step(struct run_watch *w, struct transport_comm *c, enum run_wait kind,
                    int64_t since_ns, long long pending) {
  const struct run_prefs *pr = run_prefs_read();
  if (!pr->stall_ns) return;
  /* Requests in flight last moved at different times: the comm stalls
   * from the latest; only progress after the warning starts a new one. */
  if (w->has_warned && since_ns > w->warned_ns) {
    liveness_peer_set_waiting(c->live, false);
    w->has_warned = false;
    run_root_set(&(struct run_root){0}); /* moving again: no root to tell */
  }
  if (since_ns > w->since_ns) w->since_ns = since_ns;
  int64_t now = now_ns(), waited = now - w->since_ns;
  /* Tell the peer first (its answer brings its caller's state), decide a
   * check interval or so later: the answer is then in. */
  if (waited >= pr->stall_ns / 2) liveness_peer_set_waiting(c->live, true);
  if (w->has_warned || waited < pr->stall_ns) return;
  char live[200];
  enum liveness_view lv = liveness_peer_state(c->live, live, sizeof(live));
  int idle_s = liveness_peer_idle_s(c->live);
  int stall_s = (int)(pr->stall_ns / 1000000000LL);
  struct liveness_path lp;
  bool is_cut = liveness_peer_path(c->live, &lp);
  int down_s = 0;
  bool is_peer_down = liveness_peer_port_down(c->live, now, &down_s);
  enum verdict v = judge(lv, idle_s, stall_s, kind, is_cut, is_peer_down);
  long long secs = (long long)(waited / 1000000000LL);
  struct run_port_down_view down; /* an RDMA connection here waits on any port that is down */
  if (c->dev && c->dev->is_ib && run_port_down_now(&down)) v = V_PORT_HERE;
  char how[120];
  if (c->dev && !c->dev->is_ib && run_iface_down(c->dev->ifname, how, sizeof(how)))
    v = V_IFACE_HERE;
  if (v == V_PEER_WAITS) {
    /* The peer knows the root once its own stall is judged: one check
     * interval per hop. Wait for it up to half the stall time more. */
    if (run_stall_adopt(c, wait_words[kind], secs)) goto warned;
    if (waited < pr->stall_ns + pr->stall_ns / 2) return;
  } else {
    static const int roots[] = {
      [V_PEER_STOPPED] = RUN_ROOT_SILENT, [V_PEER_CALLER_IDLE] = RUN_ROOT_IDLE,
      [V_LINK] = RUN_ROOT_LINK,           [V_PORT_HERE] = RUN_ROOT_PORT,
      [V_PORT_PEER] = RUN_ROOT_PORT,      [V_IFACE_HERE] = RUN_ROOT_PORT};
    run_stall_root(c, roots[v], v == V_PORT_HERE || v == V_IFACE_HERE);
  }
  static const char *const lv_words[] = {"unchecked", "answers", "silent", "lost"};
  if (v == V_LINK) run_say_link(c, is_cut && lv != LIVENESS_ANSWERS, &lp, wait_words[kind], secs);
  else if (v == V_PORT_HERE) say_port_here(c, &down, now, wait_words[kind], secs);
  else if (v == V_IFACE_HERE) say_iface_here(c, how, now, wait_words[kind], secs);
  else say(v, &c->peer, live, v == V_PORT_PEER ? down_s : idle_s, wait_words[kind], secs);
  event(v, &c->peer, lv_words[lv], idle_s, kind, secs, pending);
warned:
  run_conn_note_stall(); /* for the end-of-job summary */
  w->has_warned = true;
  w->warned_ns = now;
}
