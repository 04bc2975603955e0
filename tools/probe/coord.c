/* SPDX-License-Identifier: Apache-2.0 */
/* Rank 0's coordinator: the port, the arrival of the ranks, the thread. */
#include "tools/probe/coord.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/strutil.h"
#include "tools/probe/transfer.h"

#define NS 1000000000LL
#define END_MARGIN_NS (2 * NS) /* kept for the report */

double coord_elapsed_s(const struct coord *c) { return (double)(clock_mono_ns() - c->t0) / 1e9; }

/* Dual-stack [::]:port, else 0.0.0.0:port. */
static int listen_on(int family, int port, int *out) {
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_storage ss = {0};
  socklen_t len;
  if (family == AF_INET6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    a->sin6_family = AF_INET6, a->sin6_port = htons((uint16_t)port), a->sin6_addr = in6addr_any;
    len = sizeof(*a);
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    a->sin_family = AF_INET, a->sin_port = htons((uint16_t)port);
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    len = sizeof(*a);
  }
  if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 1024)) {
    int e = errno;
    close(fd);
    return e;
  }
  *out = fd;
  return 0;
}

/* One connection per rank: a large job needs more descriptors than the
 * usual soft limit of 1024. */
static void raise_fd_limit(int world) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= (rlim_t)world + 512) return;
  rl.rlim_cur = rl.rlim_max < (rlim_t)world + 512 ? rl.rlim_max : (rlim_t)world + 512;
  setrlimit(RLIMIT_NOFILE, &rl);
}

int coord_listen(struct coord *c, const struct probe_opts *o, const struct probe_launch *l,
                 struct probe_run *run) {
  memset(c, 0, sizeof(*c));
  c->o = o, c->l = l, c->run = run;
  c->on_rank_lost = coord_rank_lost, c->on_message = coord_on_message;
  c->t0 = clock_mono_ns();
  int64_t total = (int64_t)o->timeout_s * NS;
  c->end_deadline = c->t0 + (total > 2 * END_MARGIN_NS ? total - END_MARGIN_NS : total / 2);
  /* Late ranks are waited for up to a third of the time (at most a minute);
   * the rest is for the pairs. */
  int64_t arrival = total / 3 < 60 * NS ? total / 3 : 60 * NS;
  c->arrival_deadline = c->t0 + arrival;
  c->conns = calloc((size_t)l->world, sizeof(*c->conns));
  c->reported = calloc((size_t)l->world, sizeof(int));
  if (!c->conns || !c->reported) {
    snprintf(c->listen_why, sizeof(c->listen_why), "out of memory for %d ranks", l->world);
    return c->listen_err = ENOMEM;
  }
  for (int r = 0; r < l->world; r++) c->conns[r].fd = -1;
  raise_fd_limit(l->world);
  int e;
  /* A probe that just ended may still hold the port for a moment. */
  for (int64_t until = c->t0 + (total / 4 < 10 * NS ? total / 4 : 10 * NS);;) {
    e = listen_on(AF_INET6, l->port, &c->lfd[0]);
    if (e == EAFNOSUPPORT || e == EADDRNOTAVAIL) e = listen_on(AF_INET, l->port, &c->lfd[0]);
    if (e != EADDRINUSE || clock_mono_ns() > until) break;
    usleep(200000);
  }
  if (e) {
    snprintf(c->listen_why, sizeof(c->listen_why),
             "rank 0 cannot serve the rendezvous on port %d: %s%s", l->port, strerror(e),
             e == EADDRINUSE ? " (another job or probe uses it: give this one another "
                               "MASTER_PORT, the same on every rank)"
                             : "");
    return c->listen_err = e;
  }
  c->nlfd = 1;
  return 0;
}

void coord_rank_lost(struct coord *c, int rank, const char *why) {
  if (c->conns[rank].fd >= 0) rdv_conn_close(&c->conns[rank]);
  if (c->stage == CS_END) return;
  struct probe_rank_state *rs = &c->run->ranks[rank];
  if (rs->dead) return;
  rs->dead = 1;
  rs->dead_at_s = coord_elapsed_s(c);
  scopy(rs->why, sizeof(rs->why), why);
  char host[PROBE_HOST_MAX + 16];
  probe_rank_host(c->run, rank, host, sizeof(host));
  fprintf(stderr, "nccl-net-diag probe: %s (rank %d) is gone after %.1f s: %s\n", host, rank,
          rs->dead_at_s, why);
  steps_rank_dead(c, rank);
}

static void on_facts(struct coord *c, int rank, const uint8_t *body, uint32_t len) {
  char why[256];
  struct probe_facts *f = &c->run->facts[rank];
  if (c->reported[rank]) return;
  probe_facts_free(f);
  if (wire_dec_facts(body, len, f, why, sizeof(why)) || f->rank != rank) {
    if (!why[0] || f->rank != rank) snprintf(why, sizeof(why), "its facts are not its own");
    probe_facts_free(f);
    memset(f, 0, sizeof(*f));
    coord_rank_lost(c, rank, why);
    return;
  }
  c->reported[rank] = 1;
  c->nreported++;
}

void coord_on_message(struct coord *c, int rank, int type, const uint8_t *body, uint32_t len) {
  char why[256];
  if (type == W_FACTS) return on_facts(c, rank, body, len);
  if (type == W_HANDLE) {
    struct wire_handle h;
    if (!wire_dec_handle(body, len, &h, why, sizeof(why))) return steps_on_handle(c, rank, &h);
  } else if (type == W_RESULT) {
    struct wire_result *res = malloc(sizeof(*res));
    int bad = !res || wire_dec_result(body, len, res, why, sizeof(why));
    if (!bad) steps_on_result(c, rank, res);
    free(res);
    if (!bad) return;
  } else {
    snprintf(why, sizeof(why), "it sent an unexpected %s message", wire_type_name(type));
  }
  coord_rank_lost(c, rank, why);
}

/* Every rank reported or died, or the wait is over: the pairs start. */
static void arrival_tick(struct coord *c) {
  int waiting = 0;
  for (int r = 0; r < c->l->world; r++) waiting += !c->reported[r] && !c->run->ranks[r].dead;
  if (waiting && clock_mono_ns() < c->arrival_deadline) return;
  char missing[200] = "";
  size_t o = 0;
  for (int r = 0, shown = 0; r < c->l->world && o < sizeof(missing); r++)
    if (!c->reported[r] && shown++ < 8)
      o += (size_t)snprintf(missing + o, sizeof(missing) - o, "%s%d", o ? ", " : "; missing: rank ",
                            r);
  c->run->arrival_s = coord_elapsed_s(c);
  fprintf(stderr, "nccl-net-diag probe: %d of %d rank%s reported in %.1f s%s%s\n", c->nreported,
          c->l->world, c->l->world == 1 ? "" : "s", c->run->arrival_s, missing,
          c->l->world - c->nreported > 8 ? ", ..." : "");
  c->stage = CS_PAIRS;
  steps_plan(c);
}

static void *coord_main(void *arg) {
  struct coord *c = arg;
  fprintf(stderr, "nccl-net-diag probe: rank 0 waits for %d rank%s on port %d\n", c->l->world,
          c->l->world == 1 ? "" : "s", c->l->port);
  while (c->stage != CS_END) {
    int64_t now = clock_mono_ns();
    if (now >= c->end_deadline) {
      c->run->timed_out = 1;
      steps_finish_all(c, "the probe ran out of time (--timeout)");
      break;
    }
    server_poll(c, 20);
    if (c->stage == CS_ARRIVAL) arrival_tick(c);
    if (c->stage == CS_PAIRS) steps_tick(c);
  }
  c->stage = CS_END;
  for (int r = 0; r < c->l->world; r++)
    if (c->conns[r].fd >= 0) server_send_note(c, r, W_BYE, 0, 0, "the probe is over");
  server_close_all(c);
  c->run->elapsed_s = coord_elapsed_s(c);
  return NULL;
}

int coord_start(struct coord *c) { return pthread_create(&c->thread, NULL, coord_main, c); }

void coord_join(struct coord *c) { pthread_join(c->thread, NULL); }

void coord_free(struct coord *c) {
  free(c->conns);
  free(c->reported);
  free(c->steps);
  sched_free(&c->sched);
}
