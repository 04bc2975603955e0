/* SPDX-License-Identifier: Apache-2.0 */
/* The slow-link judge (slow.h). Its state is the liveness thread's own;
 * the lock is for the metrics writer and the summary, which ask what was
 * named. */
#include "transport/run/slow.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "transport/prefs.h"
#include "transport/run/conns.h"
#include "transport/run/slow_say.h"

/* One connection's figures at its window's start, and its streak. */
struct slow_state {
  uint32_t id;
  uint64_t bytes, busy_ns, retrans, ooo;
  unsigned history;                                        /* bit w: window w back was slow */
  int ok_streak;                                           /* windows in a row that look healthy */
  uint64_t w_retrans[RUN_SLOW_SPAN], w_ooo[RUN_SLOW_SPAN]; /* per window, the last SPAN */
  int w_next;
  double ratio; /* the last window's */
  bool is_named;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slow_state *states;
static int nstates, cap_states, named_count;

static int percent(void) { return (int)transport_prefs()->slow_percent; }

/* Room for more states up front: samples keep pointers into the array. */
static bool reserve(int more) {
  if (nstates + more <= cap_states) return true;
  int cap = cap_states ? cap_states : 64;
  while (cap < nstates + more) cap *= 2;
  struct slow_state *n = realloc(states, (size_t)cap * sizeof(*n));
  if (!n) return false;
  states = n;
  cap_states = cap;
  return true;
}

static struct slow_state *state_of(uint32_t id, bool *is_new) {
  *is_new = false;
  for (int k = 0; k < nstates; k++)
    if (states[k].id == id) return &states[k];
  if (nstates == cap_states) return NULL;
  *is_new = true;
  states[nstates] = (struct slow_state){.id = id};
  return &states[nstates++];
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Siblings compare: same transport, same direction. */
static bool same_kind(const struct slow_sample *a, const struct slow_sample *b) {
  return a->i->is_send == b->i->is_send && !strcmp(a->i->transport, b->i->transport);
}

/* The medians of s[k]'s measured siblings into *sib; false when fewer than two. */
static bool sibling_medians(const struct slow_sample *s, int n, int k, double *tmp,
                            struct slow_sample *sib) {
  double *rate = tmp, *retr = tmp + n, *ooo = tmp + 2 * n, *rtt = tmp + 3 * n;
  int m = 0;
  for (int j = 0; j < n; j++) {
    if (j == k || !s[j].is_measured || !same_kind(&s[j], &s[k])) continue;
    rate[m] = s[j].rate, retr[m] = (double)s[j].d_retrans, ooo[m] = (double)s[j].d_ooo;
    rtt[m++] = s[j].i->tcp.rtt_us;
  }
  if (m < 2) return false;
  sib->rate = median(rate, m);
  sib->d_retrans = (uint64_t)median(retr, m);
  sib->d_ooo = (uint64_t)median(ooo, m);
  sib->rtt_us = (uint32_t)median(rtt, m);
  sib->nsiblings = m;
  return true;
}

/* What its own sockets show that its siblings' do not. A receiver's RTT
 * is left out: it sends nothing, so the kernel has no fresh one. */
static bool has_evidence(const struct slow_sample *x, const struct slow_sample *sib) {
  uint64_t lossy = x->d_retrans + x->i->tcp.lost;
  if (lossy >= 3 && lossy > 4 * sib->d_retrans) return true;
  if (x->d_ooo >= 3 && x->d_ooo > 4 * sib->d_ooo) return true;
  return x->i->is_send && x->i->tcp.rtt_us >= 2000 && x->i->tcp.rtt_us > 4 * sib->rtt_us;
}

static void judge(struct slow_sample *s, int n, int k, double *tmp, int pct) {
  struct slow_sample *x = &s[k], sib = {0};
  struct slow_state *st = x->st;
  bool is_slow = false, is_clear = false; /* unmeasured (idle): neither */
  if (x->is_measured && !strcmp(x->i->transport, "tcp") && sibling_medians(s, n, k, tmp, &sib) &&
      sib.rate > 0) {
    st->ratio = x->rate / sib.rate;
    bool has = has_evidence(x, &sib);
    is_slow = st->ratio * 100 < pct && has;
    is_clear = st->ratio * 100 >= pct && !has;
  }
  st->history = ((st->history << 1) | is_slow) & ((1u << RUN_SLOW_SPAN) - 1);
  st->w_retrans[st->w_next] = is_slow ? x->d_retrans : 0;
  st->w_ooo[st->w_next] = is_slow ? x->d_ooo : 0;
  st->w_next = (st->w_next + 1) % RUN_SLOW_SPAN;
  /* A lossy link's rate swings with where its losses fall: it has
   * recovered when both its rate and its sockets look like its siblings'. */
  st->ok_streak = is_clear ? st->ok_streak + 1 : 0;
  if (st->is_named && st->ok_streak >= RUN_SLOW_WINDOWS) {
    st->is_named = false;
    slow_say_recovered(x->i);
  }
  /* Said once per episode: again only after it recovered. */
  if (!is_slow || st->is_named || __builtin_popcount(st->history) < RUN_SLOW_WINDOWS) return;
  named_count++;
  st->is_named = true;
  uint64_t retrans = 0, ooo = 0;
  for (int w = 0; w < RUN_SLOW_SPAN; w++) retrans += st->w_retrans[w], ooo += st->w_ooo[w];
  slow_say(x, &sib, st->ratio, RUN_SLOW_SPAN * RUN_SLOW_WINDOW_SEC, retrans, ooo);
}

static uint64_t delta(uint64_t now, uint64_t before) { return now > before ? now - before : 0; }

/* This window's sample of connection i: deltas from the state's last figures. */
static void sample(struct slow_sample *x, const struct run_conn_info *i) {
  bool is_new = false;
  struct slow_state *st = state_of(i->id, &is_new);
  x->i = i;
  x->st = st;
  if (!st) return;
  if (!is_new) {
    uint64_t db = delta(i->v.bytes, st->bytes), dbusy = delta(i->v.busy_ns, st->busy_ns);
    x->d_retrans = delta(i->tcp.retrans, st->retrans); /* a socket that left lowers the sum */
    x->d_ooo = delta(i->tcp.ooo, st->ooo);
    x->rate = dbusy ? (double)db * 1e9 / (double)dbusy : 0;
    x->is_measured = db >= RUN_SLOW_MIN_BYTES && dbusy >= (uint64_t)RUN_SLOW_MIN_BUSY_NS;
  }
  st->bytes = i->v.bytes, st->busy_ns = i->v.busy_ns;
  st->retrans = i->tcp.retrans, st->ooo = i->tcp.ooo;
}

static void judge_all(struct run_conn_info *all, int n, int pct) {
  struct slow_sample *s = calloc((size_t)n, sizeof(*s));
  double *tmp = malloc((size_t)n * 4 * sizeof(*tmp));
  if (!s || !tmp || !reserve(n)) goto out;
  int m = 0;
  for (int k = 0; k < n; k++)
    if (all[k].is_open) sample(&s[m++], &all[k]);
  for (int k = 0; k < m; k++)
    if (s[k].st) judge(s, m, k, tmp, pct);
out:
  free(s);
  free(tmp);
}

void run_slow_tick(int64_t now) {
  static int64_t next_ns; /* the liveness thread's own */
  int pct = percent();
  if (!pct || now < next_ns) return;
  next_ns = now + RUN_SLOW_WINDOW_SEC * 1000000000LL;
  int n = 0, nopen = 0;
  struct run_conn_info *all = run_conn_snapshot(&n, &nopen);
  if (!all) return;
  pthread_mutex_lock(&lock);
  judge_all(all, n, pct);
  pthread_mutex_unlock(&lock);
  free(all);
}

bool run_slow_of(uint32_t id, double *ratio) {
  bool is_named = false;
  pthread_mutex_lock(&lock);
  for (int k = 0; k < nstates; k++)
    if (states[k].id == id) {
      is_named = states[k].is_named;
      *ratio = states[k].ratio;
    }
  pthread_mutex_unlock(&lock);
  return is_named;
}

int run_slow_count(void) {
  pthread_mutex_lock(&lock);
  int n = named_count;
  pthread_mutex_unlock(&lock);
  return n;
}
