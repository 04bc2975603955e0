/* SPDX-License-Identifier: Apache-2.0 */
#include "tools/probe/worker.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "common/strutil.h"
#include "tools/probe/capture.h"
#include "tools/probe/plugin_events.h"
#include "tools/probe/transfer.h"

#define SEND_WAIT_NS (10LL * 1000000000)
#define BYE_GRACE_NS (15LL * 1000000000)

/* One task in progress, as the stop callback sees it. */
struct task_ctx {
  struct worker *w;
  const struct wire_task *t;
  int have_peer;
  struct wire_handle peer;
  int stopped;
  char stop_why[512];
};

static int send_msg(struct worker *w, struct wire_buf *b) {
  char why[512];
  int r = rdv_client_send(&w->rc, b, clock_mono_ns() + SEND_WAIT_NS, why, sizeof(why));
  if (r && !w->why[0]) scopy(w->why, sizeof(w->why), why);
  return r;
}

static void gone(struct worker *w, enum rdv_io r, const char *why) {
  if (w->why[0]) return;
  if (r == RDV_CLOSED)
    snprintf(w->why, sizeof(w->why),
             "rank 0 at %s closed the connection before the end of the probe (it exited or was "
             "killed; its output says why)",
             w->rc.where);
  else snprintf(w->why, sizeof(w->why), "rank 0 at %s: %s", w->rc.where, why);
}

/* Handles the one message just read during a task; 1 when it ends the task. */
static int task_message(struct task_ctx *tc) {
  struct rdv_conn *c = &tc->w->rc.conn;
  char why[256];
  if (c->type == W_ABORT || c->type == W_BYE) {
    struct wire_note n;
    if (wire_dec_note(c->body, c->len, &n, why, sizeof(why))) return 0;
    if (c->type == W_BYE) tc->w->got_bye = 1;
    else if (n.step != tc->t->step) return 0; /* an older task's */
    snprintf(tc->stop_why, sizeof(tc->stop_why), "%s",
             c->type == W_BYE ? "the probe ended before this pair finished" : n.text);
    return 1;
  }
  if (c->type == W_PEER_HANDLE) {
    struct wire_handle h;
    if (!wire_dec_handle(c->body, c->len, &h, why, sizeof(why)) && h.step == tc->t->step)
      tc->peer = h, tc->have_peer = 1;
  } else if (c->type == W_TASK && !tc->w->have_stash) {
    tc->w->have_stash = !wire_dec_task(c->body, c->len, &tc->w->stash, why, sizeof(why));
  }
  return 0;
}

/* Reads what rank 0 sent, waiting up to timeout_ms; 1 when the task must stop. */
static int pump(struct task_ctx *tc, int timeout_ms) {
  struct worker *w = tc->w;
  char why[512];
  enum rdv_io r;
  while ((r = rdv_client_next(&w->rc, timeout_ms, why, sizeof(why))) == RDV_MSG) {
    int stop = task_message(tc);
    rdv_conn_consume(&w->rc.conn);
    if (stop) return tc->stopped = 1;
    timeout_ms = 0;
  }
  if (r == RDV_AGAIN) return 0;
  gone(w, r, why);
  snprintf(tc->stop_why, sizeof(tc->stop_why), "rank 0 went away");
  return tc->stopped = 1;
}

static int task_stop(void *arg, char *why, size_t cap) {
  struct task_ctx *tc = arg;
  if (!tc->stopped) pump(tc, 0);
  if (tc->stopped) snprintf(why, cap, "%s", tc->stop_why);
  return tc->stopped;
}

/* The data part, once both connections are up: the first side streams to
 * the second, then the second to the first, each stream with its own seed
 * so data of one can never pass for the other's; then the round trips. */
static void task_data(struct xfer *x, const struct wire_task *t, struct wire_result *res) {
  uint64_t seed_ab = (uint64_t)t->step * 2, seed_ba = seed_ab + 1;
  uint64_t ns = 0, rtt = 0;
  int r = xfer_size_check(x, t->first);
  res->stall = x->stall_bytes;
  if (r) return;
  r =
    t->first ? xfer_send_stream(x, t->bytes, seed_ab) : xfer_recv_stream(x, t->bytes, seed_ab, &ns);
  if (!r && !t->first) res->ok_recv = 1, res->recv_ns = ns;
  if (!r)
    r = t->first ? xfer_recv_stream(x, t->bytes, seed_ba, &ns)
                 : xfer_send_stream(x, t->bytes, seed_ba);
  if (!r && t->first) res->ok_recv = 1, res->recv_ns = ns;
  res->recv_bytes = (t->bytes / x->chunk ? t->bytes / x->chunk : 1) * x->chunk;
  if (!r && t->pings) r = xfer_pingpong(x, t->first, (int)t->pings, &rtt);
  if (!r && t->first) res->lat_ns = rtt / 2;
}

static void run_task(struct worker *w, const struct wire_task *t) {
  struct wire_result res = {.step = t->step};
  struct task_ctx tc = {.w = w, .t = t};
  struct xfer x;
  uint64_t mark = capture_mark();
  long ev_mark = plugin_events_mark();
  size_t chunk = t->bytes < XFER_CHUNK_MAX ? (size_t)t->bytes : XFER_CHUNK_MAX;
  struct wire_handle mine = {.step = t->step, .len = WIRE_HANDLE_MAX};
  int r = xfer_init(&x, &w->fx->nl, t->dev, chunk, t->peer_host);
  x.stop = task_stop;
  x.stop_arg = &tc;
  x.deadline_ns = clock_mono_ns() + (int64_t)t->timeout_ms * 1000000;
  if (!r) r = xfer_listen(&x, mine.handle);
  struct wire_buf b = {0};
  if (!r && (r = wire_enc_handle(&b, W_HANDLE, &mine)) == 0) r = send_msg(w, &b);
  while (!r && !tc.have_peer && !tc.stopped && clock_mono_ns() < x.deadline_ns) pump(&tc, 50);
  if (!r && !tc.have_peer)
    snprintf(x.error, sizeof(x.error), "%s",
             tc.stopped ? tc.stop_why : "the peer's listen handle never came through rank 0");
  else if (!r) r = xfer_connect(&x, tc.peer.handle);
  if (!r && tc.have_peer) task_data(&x, t, &res);
  scopy(res.error, sizeof(res.error), x.error);
  capture_warns_since(mark, res.warns, sizeof(res.warns));
  plugin_events_cause(ev_mark, res.cause, sizeof(res.cause));
  xfer_done(&x);
  if (!wire_enc_result(&b, &res)) send_msg(w, &b);
  wb_free(&b);
}

static int hello(struct worker *w, const struct probe_facts *f) {
  struct wire_hello h = {.world = w->l->world, .rank = w->l->rank, .local_rank = w->l->local_rank};
  scopy(h.job, sizeof(h.job), w->l->job);
  h.secret = w->l->secret;
  scopy(h.host, sizeof(h.host), f->host);
  scopy(h.version, sizeof(h.version), f->probe_version);
  struct wire_buf b = {0};
  int r = wire_enc_hello(&b, &h) || send_msg(w, &b);
  if (!r) r = wire_enc_facts(&b, f) || send_msg(w, &b);
  wb_free(&b);
  return r ? EIO : 0;
}

/* The answer to hello: welcome (with how long rank 0 will run) or refusal. */
static int welcome(struct worker *w) {
  char why[512];
  int64_t left = (w->deadline_ns - clock_mono_ns()) / 1000000;
  enum rdv_io r = rdv_client_next(&w->rc, left > 0 ? (int)left : 0, why, sizeof(why));
  if (r != RDV_MSG) {
    if (r == RDV_AGAIN) snprintf(why, sizeof(why), "it did not answer this rank's hello");
    gone(w, r, why);
    return EIO;
  }
  struct wire_note n;
  int type = w->rc.conn.type;
  int bad = (type != W_WELCOME && type != W_REFUSE) ||
            wire_dec_note(w->rc.conn.body, w->rc.conn.len, &n, why, sizeof(why));
  rdv_conn_consume(&w->rc.conn);
  if (bad) {
    gone(w, RDV_ERROR, "it answered with something else than a welcome");
    return EIO;
  }
  if (type == W_REFUSE) {
    snprintf(w->why, sizeof(w->why), "rank 0 at %s refused this rank: %s", w->rc.where, n.text);
    return EACCES;
  }
  w->deadline_ns = clock_mono_ns() + (int64_t)n.value * 1000000 + BYE_GRACE_NS;
  return 0;
}

static int serve(struct worker *w) {
  char why[512];
  while (!w->got_bye && !w->why[0]) {
    struct wire_task t;
    if (w->have_stash) {
      t = w->stash, w->have_stash = 0;
      run_task(w, &t);
      continue;
    }
    int64_t left = (w->deadline_ns - clock_mono_ns()) / 1000000;
    enum rdv_io r = rdv_client_next(&w->rc, left > 0 ? (int)left : 0, why, sizeof(why));
    if (r == RDV_AGAIN) snprintf(why, sizeof(why), "it sent nothing until this rank's deadline");
    if (r != RDV_MSG) {
      gone(w, r, why);
      break;
    }
    int type = w->rc.conn.type;
    if (type == W_BYE) w->got_bye = 1;
    int ok =
      type == W_TASK && !wire_dec_task(w->rc.conn.body, w->rc.conn.len, &t, why, sizeof(why));
    rdv_conn_consume(&w->rc.conn);
    if (ok) run_task(w, &t);
  }
  return w->why[0] ? 1 : 0;
}

int worker_run(struct worker *w, const struct probe_facts *f, const char *host, int port,
               const char *from) {
  char why[768];
  if (rdv_client_connect(&w->rc, host, port, from, w->deadline_ns, why, sizeof(why))) {
    scopy(w->why, sizeof(w->why), why);
    return 1;
  }
  int r = hello(w, f) || welcome(w) ? 1 : serve(w);
  rdv_client_close(&w->rc);
  return r;
}
