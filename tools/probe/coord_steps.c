/* SPDX-License-Identifier: Apache-2.0 */
/* The pair rounds at rank 0: which hosts, which pairs, and each pair's
 * steps (one per device), from the task to both results. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/strutil.h"
#include "tools/probe/coord.h"
#include "tools/probe/verdict.h"

#define NS 1000000000LL
#define STEP_GRACE_NS (5 * NS) /* past the ranks' own deadline: their results travel */

/* One rank per host tests pairs: the lowest local rank, then the lowest rank. */
static void pick_hosts(struct coord *c) {
  struct probe_run *r = c->run;
  r->host_rank = calloc((size_t)c->l->world, sizeof(int));
  if (!r->host_rank) return;
  for (int k = 0; k < c->l->world; k++) {
    const struct probe_facts *f = &r->facts[k];
    if (!c->reported[k] || r->ranks[k].dead) continue;
    int h = 0;
    while (h < r->nhost && strcmp(r->facts[r->host_rank[h]].host, f->host)) h++;
    if (h == r->nhost) r->host_rank[r->nhost++] = k;
    else if (f->local_rank >= 0 && f->local_rank < r->facts[r->host_rank[h]].local_rank)
      r->host_rank[h] = k;
  }
}

static int plan_schedule(struct coord *c) {
  const struct probe_opts *o = c->o;
  int n = c->run->nhost;
  enum probe_pairs_mode m = o->pairs;
  int extra = o->sample_n;
  if (m == PAIRS_AUTO) m = n <= o->all_pairs_max ? PAIRS_ALL : PAIRS_SAMPLE, extra = n;
  int e = m == PAIRS_ALL    ? sched_all(n, &c->sched)
          : m == PAIRS_RING ? sched_ring(n, &c->sched)
                            : sched_sample(n, extra, o->seed, &c->sched);
  snprintf(c->run->pairs_mode, sizeof(c->run->pairs_mode), "%s%s",
           m == PAIRS_ALL    ? "all pairs"
           : m == PAIRS_RING ? "ring"
                             : "ring and a random sample",
           o->pairs == PAIRS_AUTO && m != PAIRS_ALL ? " (more hosts than --all-pairs-max)" : "");
  c->run->nrounds = c->sched.nround;
  return e;
}

static struct probe_pair *new_pair(struct probe_run *r) {
  struct probe_pair *grown = probe_grow(r->pairs, r->npair, sizeof(*grown));
  if (!grown) return NULL;
  r->pairs = grown;
  memset(&grown[r->npair], 0, sizeof(*grown));
  return &grown[r->npair++];
}

static void describe(struct coord *c, struct probe_pair *p, int src, int dst, int dev) {
  const struct probe_facts *f = &c->run->facts[src], *g = &c->run->facts[dst];
  p->src = src, p->dst = dst, p->dev = dev;
  scopy(p->transport, sizeof(p->transport), f->transport);
  if (dev < f->ndev) scopy(p->dev_name, sizeof(p->dev_name), f->devs[dev].name);
  if (dev < g->ndev) scopy(p->dst_dev_name, sizeof(p->dst_dev_name), g->devs[dev].name);
}

/* Both directions of a pair's device that is not run, and why. */
static void not_tested(struct coord *c, int a, int b, int dev, const char *why) {
  for (int dir = 0; dir < 2; dir++) {
    struct probe_pair *p = new_pair(c->run);
    if (!p) return;
    describe(c, p, dir ? b : a, dir ? a : b, dev);
    scopy(p->error, sizeof(p->error), why);
    verdict_cause(p);
  }
}

/* Why a pair cannot run, "" when it can. */
static void blocked(struct coord *c, int a, int b, char *why, size_t cap) {
  char h[PROBE_HOST_MAX + 16];
  why[0] = 0;
  for (int i = 0; i < 2 && !why[0]; i++) {
    int k = i ? b : a;
    const struct probe_facts *f = &c->run->facts[k];
    probe_rank_host(c->run, k, h, sizeof(h));
    if (c->run->ranks[k].dead)
      snprintf(why, cap, "not tested: %s (rank %d) was gone: %s", h, k, c->run->ranks[k].why);
    else if (!f->ndev)
      snprintf(why, cap, "not tested: host %s offers no network device through the plugin: %s", h,
               f->no_dev);
  }
}

static uint32_t step_timeout_ms(struct coord *c) {
  int64_t t = (int64_t)c->o->timeout_s * NS / 4;
  if (t < 15 * NS) t = 15 * NS;
  if (t > 60 * NS) t = 60 * NS;
  int64_t left = c->end_deadline - clock_mono_ns() - STEP_GRACE_NS;
  if (t > left) t = left > NS ? left : NS;
  return (uint32_t)(t / 1000000);
}

static void send_task(struct coord *c, struct coord_step *s, int first) {
  struct wire_task t = {.step = s->id, .peer = first ? s->b : s->a, .dev = s->dev, .first = first};
  t.bytes = c->o->bytes;
  t.pings = (uint32_t)c->o->pings;
  t.timeout_ms = step_timeout_ms(c);
  probe_rank_host(c->run, t.peer, t.peer_host, sizeof(t.peer_host));
  s->deadline_ns = clock_mono_ns() + (int64_t)t.timeout_ms * 1000000 + STEP_GRACE_NS;
  struct wire_buf b = {0};
  if (!wire_enc_task(&b, &t)) server_send(c, first ? s->a : s->b, &b);
  wb_free(&b);
}

static void step_start(struct coord *c, struct coord_step *s, int dev) {
  s->active = 1;
  s->id = ++c->next_id;
  s->dev = dev;
  s->have[0] = s->have[1] = 0;
  s->fail[0] = 0;
  memset(s->res, 0, sizeof(s->res));
  send_task(c, s, 1);
  if (s->active) send_task(c, s, 0); /* a dead first side ends the step at once */
}

static void round_start(struct coord *c) {
  struct sched *sc = &c->sched;
  int from = sc->round_start[c->round], to = sc->round_start[c->round + 1];
  fprintf(stderr, "nccl-net-diag probe: %s %d of %d: %d pair%s\n",
          c->retest ? "retest round" : "round", c->round + 1, sc->nround, to - from,
          to - from == 1 ? "" : "s");
  c->nsteps = 0;
  for (int i = from; i < to; i++) {
    int a = c->run->host_rank[sc->pairs[i].a], b = c->run->host_rank[sc->pairs[i].b];
    char why[800];
    blocked(c, a, b, why, sizeof(why));
    if (why[0]) {
      if (!c->retest) not_tested(c, a, b, 0, why);
      continue;
    }
    struct coord_step *s = &c->steps[c->nsteps++];
    memset(s, 0, sizeof(*s));
    s->pair = i, s->a = a, s->b = b;
    int na = c->run->facts[a].ndev, nb = c->run->facts[b].ndev;
    s->ndev = c->retest ? sc->pairs[i].tag + 1 : na < nb ? na : nb;
    step_start(c, s, c->retest ? sc->pairs[i].tag : 0);
  }
}

/* Room for the largest round of c->sched; 0 or ENOMEM. */
static int alloc_steps(struct coord *c) {
  int most = 0;
  for (int r = 0; r < c->sched.nround; r++)
    if (c->sched.round_start[r + 1] - c->sched.round_start[r] > most)
      most = c->sched.round_start[r + 1] - c->sched.round_start[r];
  free(c->steps);
  c->steps = calloc((size_t)(most ? most : 1), sizeof(*c->steps));
  c->nsteps = 0;
  c->round = -1;
  return c->steps ? 0 : ENOMEM;
}

void steps_plan(struct coord *c) {
  pick_hosts(c);
  if (plan_schedule(c) || alloc_steps(c)) {
    fprintf(stderr, "nccl-net-diag probe: out of memory planning the pairs\n");
    c->stage = CS_END;
  }
}

/* The host whose probing rank is rank: true with *h set, false when it is
 * none's. */
static bool host_index(const struct coord *c, int rank, int *h) {
  for (*h = 0; *h < c->run->nhost; ++*h)
    if (c->run->host_rank[*h] == rank) return true;
  return false;
}

/* A pair far below its kind's median may have met a busy moment: it runs
 * again, in rounds of its own, and keeps its better result; only a pair
 * slow both times is reported. 1 when retests were scheduled. */
static int retest_plan(struct coord *c) {
  int n = verdict_mark_slow(c->run), count = 0;
  struct sched_pair *list = n ? calloc((size_t)n, sizeof(*list)) : NULL;
  for (int i = 0; list && i < c->run->npair; i++) {
    const struct probe_pair *p = &c->run->pairs[i];
    int a, b, seen = 0;
    if (!p->slow || !host_index(c, p->src, &a) || !host_index(c, p->dst, &b)) continue;
    struct sched_pair x = {a < b ? a : b, a < b ? b : a, p->dev};
    for (int k = 0; k < count; k++) seen |= !memcmp(&list[k], &x, sizeof(x));
    if (!seen) list[count++] = x;
  }
  sched_free(&c->sched);
  int ok = count && !sched_rounds(c->run->nhost, list, count, &c->sched) && !alloc_steps(c);
  free(list);
  if (ok)
    fprintf(stderr, "nccl-net-diag probe: %d pair%s looked slow: measuring again\n", count,
            count == 1 ? "" : "s");
  return ok;
}

/* Records both directions of a finished step, then starts the next device
 * (go_on), or lists the devices left as not tested. */
/* A retest keeps the better of the two measurements of each direction. */
static void retest_finish(struct coord *c, struct coord_step *s) {
  for (int dir = 0; dir < 2; dir++) {
    struct probe_pair again = {0}, *p = NULL;
    describe(c, &again, dir ? s->b : s->a, dir ? s->a : s->b, s->dev);
    verdict_direction(c->run, &again, s->fail, &s->res[!dir], s->have[!dir], &s->res[dir],
                      s->have[dir], s->res[0].lat_ns);
    for (int i = 0; i < c->run->npair && !p; i++) {
      struct probe_pair *q = &c->run->pairs[i];
      if (q->src == again.src && q->dst == again.dst && q->dev == again.dev) p = q;
    }
    if (!p) continue;
    p->retested = 1;
    if (again.ok && again.gbps > p->gbps) p->gbps = again.gbps;
  }
  s->active = 0;
}

static void step_finish(struct coord *c, struct coord_step *s, int go_on) {
  if (c->retest) return retest_finish(c, s);
  for (int dir = 0; dir < 2; dir++) {
    struct probe_pair *p = new_pair(c->run);
    if (!p) break;
    describe(c, p, dir ? s->b : s->a, dir ? s->a : s->b, s->dev);
    /* a->b is received by b (res[1]), b->a by a (res[0]). */
    verdict_direction(c->run, p, s->fail, &s->res[!dir], s->have[!dir], &s->res[dir], s->have[dir],
                      s->res[0].lat_ns);
  }
  s->active = 0;
  int dead = c->run->ranks[s->a].dead || c->run->ranks[s->b].dead;
  if (s->dev + 1 < s->ndev && !dead && go_on) return step_start(c, s, s->dev + 1);
  char why[600];
  snprintf(why, sizeof(why), "not tested: device %d failed before it (%s)", s->dev,
           s->fail[0] ? s->fail : "see that device");
  for (int d = s->dev + 1; d < s->ndev; d++) not_tested(c, s->a, s->b, d, why);
}

static struct coord_step *find_step(struct coord *c, int rank, uint32_t id, int *side) {
  for (int i = 0; i < c->nsteps; i++) {
    struct coord_step *s = &c->steps[i];
    if (!s->active || s->id != id || (rank != s->a && rank != s->b)) continue;
    *side = rank == s->b;
    return s;
  }
  return NULL;
}

void steps_on_handle(struct coord *c, int rank, const struct wire_handle *h) {
  int side;
  struct coord_step *s = find_step(c, rank, h->step, &side);
  if (!s) return; /* an ended step's */
  struct wire_buf b = {0};
  if (!wire_enc_handle(&b, W_PEER_HANDLE, h)) server_send(c, side ? s->a : s->b, &b);
  wb_free(&b);
}

/* Ends a step rank 0 gives up: both sides are told, what they sent is kept. */
static void step_abort(struct coord *c, struct coord_step *s, const char *why) {
  if (!s->fail[0]) scopy(s->fail, sizeof(s->fail), why);
  s->active = 0; /* a send below may find a side dead and come back here */
  for (int side = 0; side < 2; side++)
    if (!s->have[side]) server_send_note(c, side ? s->b : s->a, W_ABORT, s->id, 0, why);
  step_finish(c, s, 0);
}

void steps_on_result(struct coord *c, int rank, const struct wire_result *r) {
  int side;
  struct coord_step *s = find_step(c, rank, r->step, &side);
  if (!s) return;
  s->res[side] = *r;
  s->have[side] = 1;
  if (s->have[!side]) return step_finish(c, s, 1);
  if (r->error[0]) {
    /* The other side would wait out its deadline for a peer that gave up. */
    char why[1200], h[PROBE_HOST_MAX + 16];
    snprintf(why, sizeof(why), "the peer %s gave up: %s",
             probe_rank_host(c->run, rank, h, sizeof(h)), r->error);
    server_send_note(c, side ? s->a : s->b, W_ABORT, s->id, 0, why);
  }
}

void steps_rank_dead(struct coord *c, int rank) {
  char why[512], h[PROBE_HOST_MAX + 16];
  snprintf(why, sizeof(why), "%s (rank %d) stopped during this pair's test: %s",
           probe_rank_host(c->run, rank, h, sizeof(h)), rank, c->run->ranks[rank].why);
  for (int i = 0; i < c->nsteps; i++) {
    struct coord_step *s = &c->steps[i];
    if (s->active && (s->a == rank || s->b == rank)) step_abort(c, s, why);
  }
}

void steps_tick(struct coord *c) {
  int64_t now = clock_mono_ns();
  int busy = 0;
  for (int i = 0; i < c->nsteps; i++) {
    struct coord_step *s = &c->steps[i];
    if (s->active && now > s->deadline_ns) {
      char why[256], h[PROBE_HOST_MAX + 16];
      int late = s->have[0] ? s->b : s->a;
      snprintf(why, sizeof(why),
               "%s (rank %d) did not report this pair's result in time "
               "(it hangs, or the transfer stalled)",
               probe_rank_host(c->run, late, h, sizeof(h)), late);
      step_abort(c, s, why);
    }
    busy |= s->active;
  }
  if (busy) return;
  if (c->round + 1 >= c->sched.nround) {
    if (c->retest || !(c->retest = retest_plan(c))) c->stage = CS_END;
    return;
  }
  c->round++;
  round_start(c);
}

void steps_finish_all(struct coord *c, const char *why) {
  for (int i = 0; i < c->nsteps; i++)
    if (c->steps[i].active) step_abort(c, &c->steps[i], why);
  if (c->stage != CS_PAIRS || c->retest) return;
  char text[300];
  snprintf(text, sizeof(text), "not tested: %s", why);
  for (int r = c->round + 1; r < c->sched.nround; r++)
    for (int i = c->sched.round_start[r]; i < c->sched.round_start[r + 1]; i++)
      not_tested(c, c->run->host_rank[c->sched.pairs[i].a], c->run->host_rank[c->sched.pairs[i].b],
                 0, text);
}
