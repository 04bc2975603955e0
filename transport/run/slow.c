/* SPDX-License-Identifier: Apache-2.0 */
/* The slow-link judge (slow.h). Its state is the liveness thread's own;
 * the lock is for the metrics writer and the summary, which ask what was
 * named. */
#include "transport/run/slow.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "transport/liveness.h"
#include "transport/prefs.h"
#include "transport/run/conns.h"
#include "transport/run/port_state.h"
#include "transport/run/slow_peer.h"
#include "transport/run/slow_port.h"
#include "transport/run/slow_say.h"

/* One connection's figures at its window's start, and its last
 * RUN_SLOW_SPAN windows: the judge reads the span as a whole, since a
 * lossy link's rate swings with where its losses fall (a window with no
 * timeout runs near its siblings) while its sum over the span does not. */
struct slow_window {
  uint32_t kib, busy_us, retrans, ooo; /* small: one per connection of a job that has thousands */
  uint32_t segs;                       /* data segments sent (a sender) or received (a receiver) */
  uint32_t lat_n, lat_us;              /* sampled completions and their latencies' sum */
  uint32_t done;                       /* requests completed */
};

struct slow_state {
  uint32_t id;
  uint64_t bytes, busy_ns, retrans, ooo, segs, lat_n, lat_ns, done;
  struct slow_window w[RUN_SLOW_SPAN];
  int w_next, nwin; /* the ring's next slot; windows it holds */
  double ratio;     /* the span's, at the last judgement */
  int ev;           /* the evidence it was named with */
  bool is_named;
  bool is_peer_named; /* its other end named their path, this end had no evidence (slow_peer.h) */
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
  states[nstates] = (struct slow_state){.id = id, .ratio = 1}; /* alike until judged */
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

/* Windows of the span in which this connection's sockets saw loss or
 * disorder: loss must persist, not be one burst. */
static int lossy_windows(const struct slow_state *st) {
  int n = 0;
  for (int w = 0; w < st->nwin; w++) n += st->w[w].retrans > 0 || st->w[w].ooo > 0;
  return n;
}

/* Whether n of the span's segs data segments is a share that means loss:
 * a loaded host's healthy sockets retransmit a few spuriously (51 of some
 * 180,000 in 20 s seen), a path that drops 1 % far more. A kernel without
 * segment counts (before 4.6) leaves the share unknown. */
static bool is_share(uint64_t n, uint64_t segs) {
  return !segs || n * 1000 >= (uint64_t)RUN_SLOW_LOSS_PER_MILLE * segs;
}

/* What its own sockets show over the span that its siblings' do not. A
 * receiver's RTT is left out: it sends nothing, so the kernel has no
 * fresh one. A smoothed RTT four times its siblings', or twice when it
 * moves under a tenth of their rate: bursty healthy sockets' RTTs spread
 * several-fold (5 to 36 ms over one mesh), and a path shaped to a third of
 * its traffic held its sender at 0.005x its siblings with 2.5 times their
 * RTT; no healthy connection runs a tenth of its siblings (0.61x the
 * slowest seen in clean runs). */
static enum slow_evidence evidence(const struct slow_sample *x, const struct slow_sample *sib,
                                   double ratio) {
  bool persists = lossy_windows(x->st) >= RUN_SLOW_WINDOWS;
  uint64_t lossy = x->d_retrans + x->i->tcp.lost;
  if (persists && lossy >= 3 && lossy > 4 * sib->d_retrans && is_share(lossy, x->segs))
    return SLOW_EV_LOSS;
  if (persists && x->d_ooo >= 3 && x->d_ooo > 4 * sib->d_ooo && is_share(x->d_ooo, x->segs))
    return SLOW_EV_DISORDER;
  double factor = ratio < 0.1 ? 2 : 4;
  if (x->i->is_send && x->i->tcp.rtt_us >= 2000 && x->i->tcp.rtt_us > factor * sib->rtt_us)
    return SLOW_EV_QUEUE;
  return SLOW_EV_NONE;
}

static bool same_port(const struct run_conn_info *a, const struct run_conn_info *b) {
  return a->port == b->port && !strcmp(a->dev, b->dev);
}

/* Siblings' ports, RDMA: the medians over those on another port than s[k]'s. */
static void sibling_ports(const struct slow_sample *s, int n, int k, double *tmp,
                          struct slow_sample *sib) {
  double *retr = tmp, *cong = tmp + n, *gbps = tmp + 2 * n, *lat = tmp + 3 * n;
  int m = 0, nl = 0;
  for (int j = 0; j < n; j++) {
    if (j == k || !s[j].is_measured || !same_kind(&s[j], &s[k])) continue;
    if (s[j].lat_us > 0) lat[nl++] = s[j].lat_us;
    if (!s[j].port.has) continue;
    if (same_port(s[j].i, s[k].i)) {
      sib->nsame_port++;
      continue;
    }
    retr[m] = (double)s[j].port.retries, cong[m] = (double)s[j].port.congestion;
    gbps[m++] = s[j].port.gbps;
  }
  if (nl) sib->lat_us = median(lat, nl);
  sib->nother_ports = m;
  if (!m) return;
  sib->port_retries = (uint64_t)median(retr, m);
  sib->port_congestion = (uint64_t)median(cong, m);
  sib->port_gbps = median(gbps, m);
}

/* What its port shows over the span that its siblings' ports do not. Its
 * siblings on the same port run at their rate, so loss the port counts
 * lies on this connection's path. Counts must persist (loss in
 * RUN_SLOW_WINDOWS windows) and be four times those of siblings' ports.
 * Else, for a sender, its writes' time to complete: twice its siblings'
 * (and 2 ms or more). A path shaped to a third of what is sent over it
 * moved its sender at 0.31x its siblings with writes 2.5 times as long as
 * theirs (queued behind the shaper, not longer: the window caps the
 * queue), so four times missed it; a write is posted once the receiver is
 * ready, so its time is the path's, not either caller's. */
static enum slow_evidence port_evidence(const struct slow_sample *x,
                                        const struct slow_sample *sib) {
  const struct slow_port_view *p = &x->port;
  if (p->has && p->retry_windows >= RUN_SLOW_WINDOWS && p->retries >= 3 &&
      p->retries > 4 * sib->port_retries)
    return SLOW_EV_PORT_LOSS;
  if (p->has && p->congestion_windows >= RUN_SLOW_WINDOWS && p->congestion >= 3 &&
      p->congestion > 4 * sib->port_congestion)
    return SLOW_EV_PORT_CONGESTION;
  if (p->gbps > 0 && sib->port_gbps > 0 && p->gbps * 4 <= sib->port_gbps * 3)
    return SLOW_EV_PORT_RATE;
  /* a queue on the path shows there, as in a TCP socket's RTT */
  if (x->i->is_send && x->lat_us >= 2000 && x->lat_us > 2 * sib->lat_us) return SLOW_EV_QUEUE;
  return SLOW_EV_NONE;
}

static void judge(struct slow_sample *s, int n, int k, double *tmp, int pct) {
  struct slow_sample *x = &s[k], sib = {0};
  struct slow_state *st = x->st;
  bool is_ib = !strcmp(x->i->transport, "ib");
  if (!x->is_measured || x->is_flapped || (!is_ib && strcmp(x->i->transport, "tcp")) ||
      !sibling_medians(s, n, k, tmp, &sib) || sib.rate <= 0)
    return; /* idle, alone, or not a kind judged: no change either way */
  st->ratio = x->rate / sib.rate;
  if (is_ib) sibling_ports(s, n, k, tmp, &sib);
  enum slow_evidence ev = is_ib ? port_evidence(x, &sib) : evidence(x, &sib, st->ratio);
  bool has = ev != SLOW_EV_NONE;
  if (st->is_named && st->ratio * 100 >= pct && !has) {
    /* the whole span ran like its siblings, its sockets clean: recovered */
    st->is_named = false;
    slow_say_recovered(x->i);
  }
  /* Said once per episode: again only after it recovered. */
  if (st->is_named || st->ratio * 100 >= pct || !has) return;
  named_count++;
  st->is_named = true;
  st->ev = ev;
  slow_say(x, &sib, ev, st->ratio, st->nwin * RUN_SLOW_WINDOW_SEC);
}

/* Its other end names their path slow and this end has no evidence of its
 * own: said once, with what the other end measured; over when the other
 * end stops saying it. */
static void peer_judge(struct slow_sample *s, int n, int k, double *tmp, int64_t now) {
  struct slow_sample *x = &s[k], sib = {0};
  struct slow_state *st = x->st;
  uint16_t flags = 0;
  bool is_heard = x->i->peer_token && slow_peer_names(x->i, now, &flags);
  if (st->is_peer_named && !is_heard) {
    st->is_peer_named = false;
    slow_say_recovered(x->i);
  }
  if (st->is_named || st->is_peer_named || !is_heard) return;
  bool has_sib = x->is_measured && sibling_medians(s, n, k, tmp, &sib) && sib.rate > 0;
  st->is_peer_named = true;
  named_count++;
  slow_say_peer(x, has_sib ? &sib : NULL, has_sib ? x->rate / sib.rate : 0, flags,
                st->nwin * RUN_SLOW_WINDOW_SEC);
}

static uint64_t delta(uint64_t now, uint64_t before) { return now > before ? now - before : 0; }

/* The segments its loss counts compare with: a sender's sent, a receiver's received. */
static uint64_t segs_of(const struct run_conn_info *i) {
  return i->is_send ? i->tcp.data_segs_out : i->tcp.data_segs_in;
}

static uint32_t u32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

/* Connection i's window enters its ring; x gets the span's sums. */
static void sample(struct slow_sample *x, const struct run_conn_info *i) {
  bool is_new = false;
  struct slow_state *st = state_of(i->id, &is_new);
  x->i = i;
  x->st = st;
  if (!st) return;
  if (!is_new) {
    struct slow_window *w = &st->w[st->w_next];
    w->kib = u32(delta(i->v.bytes, st->bytes) >> 10);
    w->busy_us = u32(delta(i->v.busy_ns, st->busy_ns) / 1000);
    w->retrans = u32(delta(i->tcp.retrans, st->retrans)); /* a socket that left lowers the sum */
    w->ooo = u32(delta(i->tcp.ooo, st->ooo));
    w->segs = u32(delta(segs_of(i), st->segs));
    w->lat_n = u32(delta(i->v.lat_count, st->lat_n));
    w->lat_us = u32(delta(i->v.lat_sum_ns, st->lat_ns) / 1000);
    w->done = u32(delta(i->v.completions, st->done));
    st->w_next = (st->w_next + 1) % RUN_SLOW_SPAN;
    if (st->nwin < RUN_SLOW_SPAN) st->nwin++;
  }
  st->bytes = i->v.bytes, st->busy_ns = i->v.busy_ns;
  st->retrans = i->tcp.retrans, st->ooo = i->tcp.ooo, st->segs = segs_of(i);
  st->lat_n = i->v.lat_count, st->lat_ns = i->v.lat_sum_ns, st->done = i->v.completions;
  uint64_t kib = 0, busy_us = 0, lat_n = 0, lat_us = 0;
  for (int w = 0; w < st->nwin; w++) {
    kib += st->w[w].kib, busy_us += st->w[w].busy_us, x->segs += st->w[w].segs;
    x->d_retrans += st->w[w].retrans, x->d_ooo += st->w[w].ooo;
    lat_n += st->w[w].lat_n, lat_us += st->w[w].lat_us, x->requests += st->w[w].done;
  }
  x->lat_us = lat_n ? (double)lat_us / (double)lat_n : 0;
  x->rate = busy_us ? (double)kib * 1024 * 1e6 / (double)busy_us : 0;
  if (!strcmp(i->transport, "ib")) slow_port_of(i->dev, i->port, &x->port);
  x->is_measured = st->nwin >= RUN_SLOW_WINDOWS && kib >= RUN_SLOW_MIN_BYTES / 1024 &&
                   busy_us >= (uint64_t)RUN_SLOW_MIN_BUSY_NS / 1000;
}

/* A span that held a port's flap, at this end or the peer's (its liveness
 * answers say), shows the flap's figures: no bytes while it was down, the
 * ACK timeouts and resends of the messages it caught. The flap's own
 * WARNs name it; judging the span would blame the path or its priority. */
static void mark_flapped(struct slow_sample *s, int n, int64_t now) {
  const int64_t span = (int64_t)(RUN_SLOW_SPAN + 1) * RUN_SLOW_WINDOW_SEC * 1000000000LL;
  int64_t here = run_port_last_down_ns(now);
  bool is_here = here && now - here < span;
  for (int k = 0; k < n; k++) {
    if (strcmp(s[k].i->transport, "ib")) continue;
    int64_t there =
      is_here || !s[k].i->peer_token ? 0 : liveness_token_port_last_down_ns(s[k].i->peer_token);
    s[k].is_flapped = is_here || (there && now - there < span);
  }
}

static void judge_all(struct run_conn_info *all, int n, int pct, int64_t now) {
  struct slow_sample *s = calloc((size_t)n, sizeof(*s));
  double *tmp = malloc((size_t)n * 4 * sizeof(*tmp));
  if (!s || !tmp || !reserve(n)) goto out;
  slow_port_window(all, n);
  int m = 0;
  for (int k = 0; k < n; k++)
    if (all[k].is_open) sample(&s[m++], &all[k]);
  mark_flapped(s, m, now);
  for (int k = 0; k < m; k++)
    if (s[k].st) judge(s, m, k, tmp, pct);
  for (int k = 0; k < m; k++) {
    s[k].is_named = s[k].st && s[k].st->is_named;
    s[k].ratio = s[k].st ? s[k].st->ratio : 1;
    s[k].ev = s[k].st ? s[k].st->ev : 0;
  }
  slow_peer_publish(s, m);
  for (int k = 0; k < m; k++)
    if (s[k].st) peer_judge(s, m, k, tmp, now);
  slow_port_judge(s, m);
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
  judge_all(all, n, pct, now);
  pthread_mutex_unlock(&lock);
  free(all);
}

bool run_slow_of(uint32_t id, double *ratio) {
  bool is_named = false;
  pthread_mutex_lock(&lock);
  for (int k = 0; k < nstates; k++)
    if (states[k].id == id) {
      is_named = states[k].is_named || states[k].is_peer_named;
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

int run_slow_port_count(void) {
  pthread_mutex_lock(&lock);
  int n = slow_port_named();
  pthread_mutex_unlock(&lock);
  return n;
}
