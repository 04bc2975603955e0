/* SPDX-License-Identifier: Apache-2.0 */
/* connect: the connector's state machine, whose state lives behind a token
 * in the handle's connector-private bytes (NCCL passes the same handle
 * buffer on every retry). Each call runs stages until one has to wait, and
 * returns. The stages, in order (connect.h has the details):
 *   trying the listener's addresses -> setting up RDMA (both sides have RDMA
 *   devices) or opening data sockets -> done
 * A fall back from RDMA to TCP goes on to the data sockets. The first stage
 * tries the listener's candidate addresses -- those on a local subnet
 * first, each next one after a short stagger -- records every failed
 * attempt with its errno, and completes the first one whose listener
 * answers our hello with the right nonce. When that is not the address we
 * preferred, the user hears which one failed, which one worked, and what
 * NCCL_SOCKET_IFNAME would avoid the detour. A connection that is up waits
 * for the listener's answer as long as it takes (NCCL accepts when its
 * proxy gets to it); only a refusal, a broken connection or no connection
 * at all ends the connect. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/events.h"
#include "common/log.h"
#include "transport/connect.h"
#include "transport/handle.h"
#include "transport/prefs.h"
#include "transport/report.h"
#include "transport/sock.h"

#define STAGGER_NS (250 * 1000000LL)

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct connecting *registry;

static void registry_add(struct connecting *c) {
  pthread_mutex_lock(&registry_lock);
  c->next = registry;
  registry = c;
  pthread_mutex_unlock(&registry_lock);
}

static void registry_del(struct connecting *c) {
  pthread_mutex_lock(&registry_lock);
  for (struct connecting **p = &registry; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  pthread_mutex_unlock(&registry_lock);
}

/* The token in the handle is only trusted if it names a live connect for
 * this very handle buffer: garbage there must not be dereferenced. */
static struct connecting *registry_find(void *handle, uint64_t token) {
  struct connecting *found = NULL;
  pthread_mutex_lock(&registry_lock);
  for (struct connecting *c = registry; c; c = c->next)
    if ((uint64_t)(uintptr_t)c == token && c->handle == handle) found = c;
  pthread_mutex_unlock(&registry_lock);
  return found;
}

static void set_token(void *handle, uint64_t token) {
  memcpy((uint8_t *)handle + HANDLE_STATE_OFF, &token, sizeof(token));
}

static void connecting_free(struct connecting *c) {
  for (int i = 0; i < c->ncands; i++)
    if (c->cands[i].fd >= 0) close(c->cands[i].fd);
  for (int i = 0; i < c->ndata; i++)
    if (c->data_socks[i].fd >= 0) close(c->data_socks[i].fd);
  if (c->ctrl_fd >= 0) close(c->ctrl_fd);
  if (c->ks) c->ks_ops->free(c->ks);
  c->obj = OBJ_DEAD;
  free(c->cands);
  free(c->cand_order);
  free(c->data_socks);
  free(c);
}

/* Whether the peer's handle is one of ours that this build speaks; a WARN
 * says what is wrong with it when not. */
static bool peer_handle_ok(const struct transport_dev *dev, const void *handle, struct handle *h) {
  char why[200];
  enum handle_err he = handle_decode(handle, h, why, sizeof(why));
  if (he == HANDLE_OK) return true;
  if (he == HANDLE_BAD_MAGIC)
    WARN("connect on device %s: the handle from the peer is not a libnccl-net-diag handle (%s). "
         "The peer runs another net plugin or another NCCL (is NCCL_NET_PLUGIN / NCCL_NET the "
         "same on every node?), or the handle was corrupted on the way",
         dev->name, why);
  else if (he == HANDLE_BAD_VERSION)
    WARN("connect on device %s: %s. Install the same libnccl-net-diag on every node", dev->name,
         why);
  else
    WARN("connect on device %s: the peer's handle is malformed: %s. The peer may run another "
         "plugin version, or the handle was corrupted on the way",
         dev->name, why);
  ev_count(C_CONN_FAILURES, 1);
  return false;
}

/* A new connect for the decoded handle h: 0 or ENOMEM (logged). */
static int connecting_new(const struct transport_dev *dev, int tc, void *handle,
                          const struct handle *h, struct connecting **out) {
  struct connecting *c = calloc(1, sizeof(*c));
  if (c) {
    c->h = *h;
    c->data_socks = calloc((size_t)h->nsocks, sizeof(*c->data_socks));
  }
  if (!c || (h->nsocks && !c->data_socks) || connect_cands_build(c)) {
    WARN("connect on device %s: out of memory", dev->name);
    if (c) free(c->cands), free(c->cand_order), free(c->data_socks), free(c);
    return ENOMEM;
  }
  c->obj = OBJ_CONNECTING;
  c->handle = handle;
  c->dev = dev;
  c->traffic_class = tc;
  c->ctrl_fd = -1;
  c->stage = CONNECT_CANDIDATES;
  if (getrandom(&c->connid, sizeof(c->connid), GRND_NONBLOCK) != sizeof(c->connid))
    c->connid = (uint64_t)now_ns() ^ ((uint64_t)(uintptr_t)c << 8);
  c->start = now_ns();
  c->deadline = c->start + transport_prefs()->connect_timeout_ms * 1000000LL;
  c->handshake_ns = transport_prefs()->handshake_timeout_ms * 1000000LL;
  for (int i = 0; i < h->nsocks; i++) c->data_socks[i].fd = -1;
  *out = c;
  return 0;
}

/* err: the attempt's errno, when a retryable one may be tried again; 0
 * when the listener there refused us (the candidate is dead). */
static void attempt_failed(struct connecting *c, struct cand *k, int err, const char *why) {
  int64_t now = now_ns();
  k->last_err = err;
  snprintf(k->last_why, sizeof(k->last_why), "%s", why);
  if (k->fd >= 0) close(k->fd);
  k->fd = -1;
  record_writer_start(&k->out, k->out_buf, 0);
  record_reader_reset(&k->in);
  char d[256];
  connect_cand_desc(c, k, d, sizeof(d));
  INFO(LOG_NET, "connect for device %s: attempt %d to %s failed after %lld ms: %s", c->dev->name,
       k->attempts, d, (long long)((now - k->attempt_start) / 1000000), why);
  if (err == ECONNREFUSED && k->was_dropped) {
    k->stage = CAND_DEAD; /* reached before, refused now: its process is gone */
  } else if (err && sock_err_retryable(err)) {
    int64_t backoff = 100000000LL * k->attempts;
    if (backoff > 1000000000LL) backoff = 1000000000LL;
    k->stage = CAND_WAIT;
    k->next_try = now + backoff;
  } else {
    k->stage = CAND_DEAD;
  }
}

/* The listener's addresses tried before k that failed or are still
 * unanswered: the listener names them in its own log (accept_report.c). */
static void fill_tried(const struct connecting *c, const struct cand *k, struct hello *m) {
  int64_t now = now_ns();
  m->ntried = 0;
  for (int i = 0; i < c->ncands && m->ntried < HELLO_MAX_TRIED; i++) {
    const struct cand *t = &c->cands[c->cand_order[i]];
    bool is_refused_by_process = t->stage == CAND_DEAD && !t->last_err; /* it was reached */
    if (t == k || !t->attempts || t->was_connected || is_refused_by_process) continue;
    struct hello_tried *e = &m->tried[m->ntried++];
    snprintf(e->addr, sizeof(e->addr), "%s", t->str);
    snprintf(e->ifname, sizeof(e->ifname), "%s", t->hc.ifname);
    e->err = t->stage == CAND_CONNECTING ? 0 : t->last_err;
    e->ms = (int)((now - t->attempt_start) / 1000000);
  }
}

static void build_hello(struct connecting *c, struct cand *k) {
  struct hello *m = &c->mine;
  hello_fill_local(m, HELLO_CONNECT);
  m->nonce = c->h.nonce;
  m->connid = c->connid;
  snprintf(m->transport, sizeof(m->transport), "tcp");
  snprintf(m->dev, sizeof(m->dev), "%s", c->dev->name);
  transport_setup_fill_hello(c->dev, m);
  snprintf(m->ifname, sizeof(m->ifname), "%s", k->is_local ? k->local_if : c->dev->ifname);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof(ss);
  if (getsockname(k->fd, (struct sockaddr *)&ss, &sl) == 0)
    sockaddr_str((struct sockaddr *)&ss, m->addr, sizeof(m->addr));
  m->if_mtu = (uint32_t)sock_local_mtu(k->fd, NULL, 0);
  m->nsocks = c->h.nsocks;
  m->nthreads = c->h.nthreads;
  fill_tried(c, k, m);
  struct preamble p = {ROLE_CTRL, 0, c->h.nonce, c->connid};
  preamble_encode(&p, k->out_buf);
  size_t len; /* our own record always fits */
  (void)hello_encode(m, k->out_buf + PREAMBLE_LEN, sizeof(k->out_buf) - PREAMBLE_LEN, &len);
  record_writer_start(&k->out, k->out_buf, PREAMBLE_LEN + len);
  record_reader_init(&k->in, k->in_buf, sizeof(k->in_buf), HELLO_HDR_LEN, hello_decode_header);
  /* The wait for a busy listener has no deadline: a host that dies under
   * it must still end it, in the time a silent peer is given. */
  sock_keepalive(k->fd, (int)transport_prefs()->peer_timeout_sec);
}

static void start_attempt(struct connecting *c, struct cand *k, int64_t now) {
  k->attempts++;
  k->attempt_start = now;
  int err = sock_connect_start((struct sockaddr *)&k->ss, k->sl, &k->fd);
  if (err == 0) {
    k->stage = CAND_HELLO;
    k->was_connected = true;
    build_hello(c, k);
  } else if (err == EINPROGRESS) {
    k->stage = CAND_CONNECTING;
  } else if (sock_err_local(err)) {
    c->local_err = err; /* every other address would fail the same way */
    k->stage = CAND_DEAD;
  } else {
    char why[600], advice[400];
    sock_errno_advice(err, advice, sizeof(advice));
    snprintf(why, sizeof(why), "%s (%s)%s%s", strerror(err), errno_name(err), advice[0] ? "; " : "",
             advice);
    attempt_failed(c, k, err, why);
  }
}

/* "host-b" from "host-b.example.com", as the handle carries it. */
static void short_host(const char *host, char *out, size_t cap) {
  snprintf(out, cap, "%.*s", HANDLE_HOST_LEN - 1, host);
  out[strcspn(out, ".")] = 0;
}

/* The listener at k refused us and said why (hello.h): the address is dead;
 * when that listener runs on the handle's own host the handle itself is
 * refused, and the connect fails at once (step_candidates). */
static void refused(struct connecting *c, struct cand *k) {
  struct hello_refusal r;
  char why[200], text[640], a[HANDLE_HOST_LEN], b[HANDLE_HOST_LEN];
  if (hello_decode_refusal(k->in.buf + HELLO_HDR_LEN, k->in.body_len, &r, why, sizeof(why)))
    snprintf(r.reason, sizeof(r.reason), "a refusal we cannot read (%s)", why);
  if (r.host[0])
    snprintf(text, sizeof(text), "the listener there (on %s) refused this connection: %s", r.host,
             r.reason);
  else snprintf(text, sizeof(text), "the listener there refused this connection: %s", r.reason);
  attempt_failed(c, k, 0, text);
  short_host(r.host, a, sizeof(a));
  short_host(c->h.host, b, sizeof(b));
  if (!c->refuser) c->refuser = k;
  /* A listener that names no host (it tells strangers nothing) is at an
   * address the handle gave: taken as the handle's host. */
  if (!r.host[0] || !strcmp(a, b)) c->is_refusal_final = true;
}

static void fail_refused(struct connecting *c) {
  char d[256];
  const struct cand *k = c->refuser;
  connect_cand_desc(c, k, d, sizeof(d));
  ev_count(C_CONN_FAILURES, 1);
  struct ev e;
  ev_begin(&e, "connect_refused");
  ev_str(&e, "device", c->dev->name);
  ev_str(&e, "peer_host", c->h.host);
  ev_str(&e, "listener", k->str);
  ev_str(&e, "reason", k->last_why);
  ev_end(&e);
  WARN("cannot connect to %s for device %s: at %s, %s. The handle names a listen that is not open "
       "there: pass every rank the handle of the listen that is open now (a handle kept across a "
       "restart of the peer, or taken from another communicator, is refused)",
       c->h.host, c->dev->name, d, k->last_why);
}

/* Connected, and our hello unanswered for long: the listening process has
 * not taken the connection yet (NCCL accepts when its proxy gets to it, so
 * a busy or slow rank answers late), or it is stopped. A process that
 * exited or refuses us would have closed the connection or said so. The
 * connect keeps waiting, as NCCL's own socket transport does; said once. */
static void warn_busy_listener(struct connecting *c, const struct cand *k, int64_t now) {
  if (c->has_warned_busy) return;
  c->has_warned_busy = true;
  char d[256];
  connect_cand_desc(c, k, d, sizeof(d));
  WARN("connect to %s for device %s: the TCP connection to %s is up, but the process listening "
       "there has not taken it in %lld s (it has not called accept yet: busy, slow to start, or "
       "stopped); still waiting for it. If the job stays stuck here, see on %s why that rank "
       "stalled",
       c->h.host, c->dev->name, d, (long long)((now - k->attempt_start) / 1000000000LL), c->h.host);
}

/* Whether this candidate's listener has answered our hello as the
 * listener this handle came from. */
static bool progress_hello(struct connecting *c, struct cand *k, int64_t now) {
  char why[240];
  int err;
  if (record_write(&k->out, k->fd, &err) == PROGRESS_FAILED) {
    snprintf(why, sizeof(why), "sending our hello failed: %s", strerror(err));
    attempt_failed(c, k, err, why);
    return false;
  }
  enum progress got = record_read(&k->in, k->fd, &err, why, sizeof(why));
  if (got == PROGRESS_FAILED) {
    if (err == ETIMEDOUT)
      snprintf(why, sizeof(why),
               "the host stopped answering while its process had not yet taken the connection "
               "(no TCP keepalive answer in NCCL_DIAG_PEER_TIMEOUT_SEC=%lld s): the host is down "
               "or the network between the two is cut",
               (long long)transport_prefs()->peer_timeout_sec);
    else if (err != EPROTO) /* else why names what is wrong with the header */
      snprintf(why, sizeof(why), "the connection was %s before the listener answered our hello",
               err == EPIPE ? "closed" : "reset");
    bool is_drop = err == EPIPE || err == ECONNRESET;
    attempt_failed(c, k, is_drop ? err : 0, why);
    /* Closed or reset with no answer: a process that died with our
     * connection queued in its kernel, or a live one that does not know
     * this handle. One more attempt tells them apart (refused: gone). */
    if (is_drop && !k->was_dropped) {
      k->was_dropped = true;
      k->stage = CAND_WAIT;
      k->next_try = now + 100000000LL;
    } else k->stage = CAND_DEAD;
    return false;
  }
  if (got == PROGRESS_PENDING) {
    if (now - k->attempt_start > c->handshake_ns) warn_busy_listener(c, k, now);
    return false;
  }
  struct hello *p = &c->peer;
  if (k->in.kind == HELLO_REFUSE) {
    refused(c, k);
    return false;
  }
  if (hello_decode_body(k->in.buf + HELLO_HDR_LEN, k->in.body_len, p, why, sizeof(why))) {
    attempt_failed(c, k, 0, why);
    k->stage = CAND_DEAD;
    return false;
  }
  p->kind = k->in.kind;
  if (p->kind != HELLO_ACCEPT || p->nonce != c->h.nonce || p->connid != c->connid) {
    attempt_failed(c, k, 0, "the answer names another listen or connection");
    k->stage = CAND_DEAD;
    return false;
  }
  return true;
}

/* Drives every candidate one step; returns the one that won, if any. */
static struct cand *progress_candidates(struct connecting *c, int64_t now) {
  bool earlier_active = false;
  for (int o = 0; o < c->ncands; o++) {
    struct cand *k = &c->cands[c->cand_order[o]];
    if (k->stage == CAND_IDLE || (k->stage == CAND_WAIT && now >= k->next_try)) {
      /* The next candidate starts after a stagger, or at once when all the
       * earlier ones have failed. */
      bool may_start = k->stage == CAND_WAIT || !earlier_active || now >= c->start + o * STAGGER_NS;
      if (may_start) start_attempt(c, k, now);
    }
    if (k->stage == CAND_CONNECTING) {
      int err = sock_connect_done(k->fd);
      if (err == 0) {
        k->stage = CAND_HELLO;
        k->was_connected = true;
        build_hello(c, k);
      } else if (err != EINPROGRESS) {
        char why[160];
        snprintf(why, sizeof(why), "%s (%s)", strerror(err), errno_name(err));
        attempt_failed(c, k, err, why);
      }
    }
    if (k->stage == CAND_HELLO && progress_hello(c, k, now)) return k;
    if (k->stage == CAND_CONNECTING || k->stage == CAND_HELLO) earlier_active = true;
  }
  return NULL;
}

const char *connect_stage_name(enum connect_stage stage) {
  switch (stage) {
  case CONNECT_CANDIDATES: return "trying the listener's addresses";
  case CONNECT_RDMA: return "setting up RDMA";
  case CONNECT_DATA_SOCKETS: return "opening data sockets";
  case CONNECT_DONE: return "done";
  }
  return "in an unknown stage";
}

static void enter(struct connecting *c, enum connect_stage next) {
  TRACE(LOG_NET, "connect to %s for device %s: %s, then %s", c->h.host, c->dev->name,
        connect_stage_name(c->stage), connect_stage_name(next));
  c->stage = next;
}

/* A connection is up and waits for the listener's answer: the listener is
 * there, only busy, and no deadline ends the wait. */
static bool any_connected(const struct connecting *c) {
  for (int i = 0; i < c->ncands; i++)
    if (c->cands[i].stage == CAND_HELLO) return true;
  return false;
}

/* No candidate is left to try: each failed in a way a retry cannot mend. */
static bool all_dead(const struct connecting *c) {
  for (int i = 0; i < c->ncands; i++)
    if (c->cands[i].stage != CAND_DEAD) return false;
  return true;
}

/* CONNECT_CANDIDATES: PROGRESS_DONE once a listener answered our hello;
 * its socket is the control socket and the machine has moved on. */
static enum progress step_candidates(struct connecting *c, int64_t now) {
  struct cand *k = progress_candidates(c, now);
  if (!k) {
    if (c->refuser && (c->is_refusal_final || all_dead(c))) {
      fail_refused(c);
      return PROGRESS_FAILED;
    }
    if ((now <= c->deadline || any_connected(c)) && !all_dead(c) && !c->local_err)
      return PROGRESS_PENDING;
    connect_report_failure(c);
    return PROGRESS_FAILED;
  }
  c->winner = k;
  c->deadline = now + (c->deadline - c->start); /* the data sockets' own time */
  c->ctrl_fd = k->fd;
  k->fd = -1;
  snprintf(c->peer_addr, sizeof(c->peer_addr), "%s", k->str);
  for (int i = 0; i < c->ncands; i++)
    if (c->cands[i].fd >= 0) close(c->cands[i].fd), c->cands[i].fd = -1;
  struct transport_peer peer;
  transport_peer_describe(&peer, &c->peer, c->peer_addr);
  report_hello(&c->mine, &c->peer, peer.desc, "connect");
  connect_report_detour(c, k);
  c->ndata = c->h.nsocks;
  c->ks_ops = transport_setup_start(&c->ks, c->dev, true, c->ctrl_fd, &c->mine, &c->peer, peer.desc,
                                    c->traffic_class);
  enter(c, c->ks ? CONNECT_RDMA : CONNECT_DATA_SOCKETS);
  return PROGRESS_DONE;
}

/* Runs the current stage: PROGRESS_DONE when it finished (the machine has
 * moved on; at CONNECT_DONE *send_comm is set). */
static enum progress step(struct connecting *c, int64_t now, void **send_comm) {
  enum progress p = PROGRESS_DONE;
  switch (c->stage) {
  case CONNECT_CANDIDATES: return step_candidates(c, now);
  case CONNECT_RDMA:
    switch (connect_rdma(c, send_comm)) {
    case TRANSPORT_SETUP_PENDING: return PROGRESS_PENDING;
    case TRANSPORT_SETUP_FAILED: return PROGRESS_FAILED;
    case TRANSPORT_SETUP_UP: enter(c, CONNECT_DONE); break;
    case TRANSPORT_SETUP_FALL_BACK: enter(c, CONNECT_DATA_SOCKETS); break;
    }
    return PROGRESS_DONE;
  case CONNECT_DATA_SOCKETS:
    p = connect_data_sockets(c, now);
    if (p != PROGRESS_DONE) return p;
    if (connect_finish(c, send_comm)) return PROGRESS_FAILED;
    enter(c, CONNECT_DONE);
    return PROGRESS_DONE;
  case CONNECT_DONE: return PROGRESS_DONE;
  }
  return p;
}

ncclResult_t transport_connect(const struct transport_dev *dev, int traffic_class, void *handle,
                               void **send_comm) {
  *send_comm = NULL;
  uint64_t token;
  memcpy(&token, (uint8_t *)handle + HANDLE_STATE_OFF, sizeof(token));
  struct connecting *c = token ? registry_find(handle, token) : NULL;
  if (!c) {
    struct handle h;
    if (!peer_handle_ok(dev, handle, &h)) return ncclInvalidUsage;
    if (connecting_new(dev, traffic_class, handle, &h, &c)) return ncclSystemError;
    registry_add(c);
    set_token(handle, (uint64_t)(uintptr_t)c);
  }
  int64_t now = now_ns();
  enum progress p = PROGRESS_DONE;
  while (c->stage != CONNECT_DONE && p == PROGRESS_DONE) p = step(c, now, send_comm);
  if (p == PROGRESS_PENDING) return ncclSuccess;
  registry_del(c);
  set_token(handle, 0);
  bool is_refused = c->refuser != NULL;
  connecting_free(c);
  if (p != PROGRESS_FAILED) return ncclSuccess;
  /* Logged where it failed. A refused handle is not ours (any more). */
  return is_refused ? ncclInvalidUsage : ncclSystemError;
}
