/* SPDX-License-Identifier: Apache-2.0 */
/* The connection list (conns.h): a growing array under one lock, entries
 * of closed comms kept with their last figures so the summary and the
 * metrics file cover the whole run. */
#include "transport/run/conns.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "common/clock.h"
#include "transport/run/metrics.h"
#include "transport/run/summary.h"
#include "transport/transport.h"

/* Small while open (thousands of idle comms each have a memory budget):
 * the figures are read from the comm; its copy is made when it closes. */
struct run_conn {
  struct transport_comm *comm;  /* NULL once closed */
  struct run_conn_info *closed; /* its last figures, once closed (NULL: no memory) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct run_conn *conns;
static int nconns, cap_conns, nopen;
static uint32_t next_id = 1;
static atomic_int stalls;

static void fill(struct run_conn_info *i, const struct transport_comm *c) {
  memset(i, 0, sizeof(*i));
  i->id = c->run_id;
  i->is_send = c->obj == OBJ_SEND;
  i->is_open = true;
  snprintf(i->transport, sizeof(i->transport), "%s", c->ops ? c->ops->name : "?");
  snprintf(i->dev, sizeof(i->dev), "%s", c->dev ? c->dev->name : "?");
  i->port = c->dev ? c->dev->port : 0;
  if (c->dev) ipaddr_str(&c->dev->addr, i->local, sizeof(i->local));
  snprintf(i->peer_host, sizeof(i->peer_host), "%s", c->peer.host);
  snprintf(i->peer_addr, sizeof(i->peer_addr), "%s", c->peer.addr);
  snprintf(i->peer_desc, sizeof(i->peer_desc), "%s", c->peer.desc);
  i->peer_pid = c->peer.who.pid;
  i->peer_token = c->peer.who.live.is_present ? c->peer.who.live.token : 0;
}

/* The figures and the kernel's evidence of an open comm, now. */
static void refresh(struct run_conn_info *i, const struct transport_comm *c, int64_t now) {
  run_stats_read(&c->stats, now, &i->v);
  if (c->ops && !strcmp(c->ops->name, "tcp")) tcp_comm_evidence(c, &i->tcp);
}

void run_conn_add(struct transport_comm *c) {
  pthread_mutex_lock(&lock);
  if (nconns == cap_conns) {
    int cap = cap_conns ? cap_conns * 2 : 64;
    struct run_conn *n = realloc(conns, (size_t)cap * sizeof(*n));
    if (!n) { /* the comm works; only its figures go unlisted */
      pthread_mutex_unlock(&lock);
      return;
    }
    conns = n;
    cap_conns = cap;
  }
  c->run_id = next_id++;
  conns[nconns++] = (struct run_conn){c, NULL};
  bool is_first = nopen++ == 0;
  pthread_mutex_unlock(&lock);
  if (is_first) run_metrics_start();
}

void run_conn_remove(struct transport_comm *c) {
  bool is_last = false;
  pthread_mutex_lock(&lock);
  for (int k = 0; k < nconns; k++) {
    struct run_conn *e = &conns[k];
    if (e->comm != c) continue;
    e->closed = malloc(sizeof(*e->closed));
    if (e->closed) {
      fill(e->closed, c);
      refresh(e->closed, c, clock_mono_ns());
      e->closed->is_open = false;
    }
    e->comm = NULL;
    is_last = --nopen == 0;
    break;
  }
  pthread_mutex_unlock(&lock);
  if (!is_last) return;
  run_metrics_stop();
  run_summary_log();
}

struct run_conn_info *run_conn_snapshot(int *n, int *open) {
  *n = 0;
  *open = 0;
  pthread_mutex_lock(&lock);
  struct run_conn_info *out = nconns ? malloc((size_t)nconns * sizeof(*out)) : NULL;
  if (out) {
    int64_t now = clock_mono_ns();
    int m = 0;
    for (int k = 0; k < nconns; k++) {
      if (conns[k].comm) {
        fill(&out[m], conns[k].comm);
        refresh(&out[m++], conns[k].comm, now);
      } else if (conns[k].closed) {
        out[m++] = *conns[k].closed;
      }
    }
    *n = m;
    *open = nopen;
  }
  pthread_mutex_unlock(&lock);
  return out;
}

void run_conn_note_stall(void) { atomic_fetch_add(&stalls, 1); }
int run_conn_stalls(void) { return atomic_load(&stalls); }
