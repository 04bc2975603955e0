/* SPDX-License-Identifier: Apache-2.0 */
/* The rendezvous connections at rank 0. A new connection must identify
 * itself with a hello within a few seconds; one that speaks something
 * else, belongs to another job, claims a rank out of range or a rank
 * already here is refused, named and logged (the first few as warnings),
 * and the rendezvous keeps serving, as the plugin's own listener does. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/clock.h"
#include "common/strutil.h"
#include "tools/probe/coord.h"

#define IDENTIFY_NS (5LL * 1000000000)
#define REFUSAL_WARNS 5

static void refuse(struct coord *c, struct rdv_conn *conn, int tell, const char *why) {
  struct probe_run *r = c->run;
  /* A rank claimed twice goes first: the report names the first few, and a
   * flood of strangers must not push it out. */
  bool is_claim = strstr(why, "claimed twice") != NULL;
  if (r->nrefusal < 1000 || is_claim) {
    struct probe_refusal *grown = probe_grow(r->refusals, r->nrefusal, sizeof(*grown));
    if (grown) {
      r->refusals = grown;
      int at = 0;
      while (is_claim && at < r->nrefusal && strstr(grown[at].why, "claimed twice")) at++;
      if (!is_claim) at = r->nrefusal;
      memmove(&grown[at + 1], &grown[at], (size_t)(r->nrefusal - at) * sizeof(*grown));
      scopy(grown[at].peer, sizeof(grown->peer), conn->peer);
      scopy(grown[at].why, sizeof(grown->why), why);
      r->nrefusal++;
    }
  }
  if (r->nrefusal <= REFUSAL_WARNS)
    fprintf(stderr,
            "nccl-net-diag probe: rank 0 refused a connection from %s to its rendezvous on port "
            "%d: %s; still waiting for this job's ranks\n",
            conn->peer, c->l->port, why);
  if (tell) {
    struct wire_buf b = {0};
    struct wire_note n = {0};
    scopy(n.text, sizeof(n.text), why);
    if (!wire_enc_note(&b, W_REFUSE, &n) && !rdv_conn_queue(conn, &b)) {
      char e[64];
      rdv_conn_flush(conn, e, sizeof(e)); /* best effort: it is leaving anyway */
    }
    wb_free(&b);
  }
  rdv_conn_close(conn);
}

/* Checks a hello: 0, or the reason to refuse. The secret first: a
 * stranger learns nothing about this job (not even its id) from the
 * refusal. */
static int check_hello(struct coord *c, const struct rdv_conn *conn, const struct wire_hello *h,
                       char *why, size_t cap) {
  if (!h->has_secret)
    snprintf(why, cap,
             "it presents no rendezvous secret: a probe of an older release (run the same "
             "nccl-net-diag on every rank)");
  else if (h->secret != c->l->secret)
    snprintf(why, cap,
             "it does not present this job's rendezvous secret (a probe of another job on this "
             "port, or a rank started without this job's NCCL_DIAG_PROBE_SECRET or --job-id)");
  else if (strcmp(h->job, c->l->job))
    snprintf(why, cap,
             "it belongs to job '%s', this rendezvous serves job '%s' (two probes on "
             "one port; give each its own MASTER_PORT)",
             h->job, c->l->job);
  else if (h->world != c->l->world)
    snprintf(why, cap,
             "host %s (rank %d) expects %d ranks, this job has %d: the launcher's "
             "world size (WORLD_SIZE) differs on that node",
             h->host, h->rank, h->world, c->l->world);
  else if (h->rank < 0 || h->rank >= c->l->world)
    snprintf(why, cap, "host %s claims rank %d, outside 0..%d", h->host, h->rank, c->l->world - 1);
  else if (c->conns[h->rank].fd >= 0 || c->run->ranks[h->rank].arrived)
    snprintf(why, cap,
             "host %s at %s claims rank %d, which %s claimed first: the rank is claimed twice "
             "(every rank needs its own RANK, and only this job's hosts may hold its secret)",
             h->host, conn->peer, h->rank, c->run->ranks[h->rank].addr);
  else return 0;
  return EINVAL;
}

static void drop_pending(struct coord *c, int i) {
  c->pending[i] = c->pending[--c->npending];
  c->pending_deadline[i] = c->pending_deadline[c->npending];
}

static void identify(struct coord *c, int i) {
  struct rdv_conn *conn = &c->pending[i];
  char why[512];
  struct wire_hello h;
  if (conn->type != W_HELLO) {
    snprintf(why, sizeof(why), "its first message is a %s, not a hello",
             wire_type_name(conn->type));
    refuse(c, conn, 1, why);
  } else if (wire_dec_hello(conn->body, conn->len, &h, why, sizeof(why)) ||
             check_hello(c, conn, &h, why, sizeof(why))) {
    /* A rank claimed twice is always said: the second may be the real one. */
    if (strstr(why, "claimed twice"))
      fprintf(stderr, "nccl-net-diag probe: rank 0 refused a connection from %s: %s\n", conn->peer,
              why);
    refuse(c, conn, 1, why);
  } else {
    rdv_conn_consume(conn);
    /* Identified: from now on its messages may be as large as any. */
    free(conn->rd.buf);
    conn->rd.buf = NULL;
    conn->max_body = 0;
    c->conns[h.rank] = *conn;
    struct probe_rank_state *rs = &c->run->ranks[h.rank];
    rs->arrived = 1;
    snprintf(rs->addr, sizeof(rs->addr), "%s", conn->peer);
    int64_t left = (c->end_deadline - clock_mono_ns()) / 1000000;
    server_send_note(c, h.rank, W_WELCOME, 0, (uint64_t)(left > 0 ? left : 0), "");
  }
  drop_pending(c, i);
}

/* An IPv4 peer on a dual-stack socket arrives as ::ffff:a.b.c.d: shown as IPv4. */
static void peer_str(const struct sockaddr_storage *ss, char *buf, size_t cap) {
  const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
  if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
    struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = s6->sin6_port};
    memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
    sockaddr_str((const struct sockaddr *)&s4, buf, cap);
  } else {
    sockaddr_str((const struct sockaddr *)ss, buf, cap);
  }
}

/* The address part of "10.0.0.2<51234>". */
static bool same_source(const char *a, const char *b) {
  size_t n = strcspn(a, "<");
  return n == strcspn(b, "<") && !strncmp(a, b, n);
}

/* Room for a connection from peer: the oldest unidentified one from the
 * same address goes when that address holds its share, else the oldest of
 * all when the table is full; a rank, whose hello follows its connect at
 * once, is never crowded out by silent ones. */
static void make_room(struct coord *c, const char *peer) {
  int from = 0, oldest_from = -1, oldest = -1;
  for (int i = 0; i < c->npending; i++) {
    bool is_from = same_source(c->pending[i].peer, peer);
    from += is_from;
    if (is_from && (oldest_from < 0 || c->pending_deadline[i] < c->pending_deadline[oldest_from]))
      oldest_from = i;
    if (oldest < 0 || c->pending_deadline[i] < c->pending_deadline[oldest]) oldest = i;
  }
  int victim = from >= COORD_PENDING_PER_SOURCE   ? oldest_from
               : c->npending == COORD_MAX_PENDING ? oldest
                                                  : -1;
  if (victim < 0) return;
  refuse(c, &c->pending[victim], 0,
         "it had not identified itself, and newer connections needed its place");
  drop_pending(c, victim);
}

static void accept_new(struct coord *c, int lfd) {
  for (int k = 0; k < 256; k++) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct rdv_conn conn;
    rdv_conn_init(&conn, fd);
    conn.max_body = COORD_HELLO_MAX; /* a stranger's half-sent message costs little */
    peer_str(&ss, conn.peer, sizeof(conn.peer));
    if (c->stage == CS_END) {
      refuse(c, &conn, 0, "the probe is over");
      continue;
    }
    make_room(c, conn.peer);
    c->pending_deadline[c->npending] = clock_mono_ns() + IDENTIFY_NS;
    c->pending[c->npending++] = conn;
  }
}

static void read_pending(struct coord *c, int i) {
  struct rdv_conn *conn = &c->pending[i];
  char why[512];
  enum rdv_io r = rdv_conn_read(conn, why, sizeof(why));
  if (r == RDV_MSG) return identify(c, i);
  if (r == RDV_AGAIN && clock_mono_ns() < c->pending_deadline[i]) return;
  if (r == RDV_AGAIN)
    snprintf(why, sizeof(why), "it did not identify itself within %lld s",
             IDENTIFY_NS / 1000000000);
  else if (r == RDV_CLOSED)
    snprintf(why, sizeof(why), "it closed the connection before identifying itself");
  /* Only a probe (of another release) reads our refusal; others just go. */
  refuse(c, conn, r == RDV_ERROR && rdv_conn_is_probe(conn), why);
  drop_pending(c, i);
}

static void read_rank(struct coord *c, int rank) {
  struct rdv_conn *conn = &c->conns[rank];
  char why[512];
  for (;;) {
    enum rdv_io r = rdv_conn_read(conn, why, sizeof(why));
    if (r == RDV_AGAIN) return;
    if (r == RDV_MSG) {
      c->on_message(c, rank, conn->type, conn->body, conn->len);
      if (conn->fd >= 0) rdv_conn_consume(conn);
      if (conn->fd < 0) return;
      continue;
    }
    if (r == RDV_CLOSED)
      snprintf(why, sizeof(why),
               "its connection to rank 0 closed: the process exited or was "
               "killed");
    c->on_rank_lost(c, rank, why);
    return;
  }
}

int server_send(struct coord *c, int rank, struct wire_buf *b) {
  struct rdv_conn *conn = &c->conns[rank];
  if (conn->fd < 0) return EPIPE;
  char why[256];
  if (rdv_conn_queue(conn, b)) return ENOMEM;
  enum rdv_io r = rdv_conn_flush(conn, why, sizeof(why));
  if (r == RDV_CLOSED || r == RDV_ERROR) {
    c->on_rank_lost(c, rank, r == RDV_CLOSED ? "its connection to rank 0 closed" : why);
    return EPIPE;
  }
  return 0;
}

void server_send_note(struct coord *c, int rank, int type, uint32_t step, uint64_t value,
                      const char *text) {
  struct wire_buf b = {0};
  struct wire_note n = {.step = step, .value = value};
  scopy(n.text, sizeof(n.text), text);
  if (!wire_enc_note(&b, type, &n)) server_send(c, rank, &b);
  wb_free(&b);
}

/* One poll over the listeners, the unidentified and the ranks. */
void server_poll(struct coord *c, int timeout_ms) {
  int world = c->l->world, n = 0;
  struct pollfd *p = calloc((size_t)(c->nlfd + COORD_MAX_PENDING + world), sizeof(*p));
  int *who = calloc((size_t)(c->nlfd + COORD_MAX_PENDING + world), sizeof(int));
  if (!p || !who) {
    free(p);
    free(who);
    return;
  }
  for (int i = 0; i < c->nlfd; i++) p[n] = (struct pollfd){c->lfd[i], POLLIN, 0}, who[n++] = -1;
  for (int i = 0; i < c->npending; i++)
    p[n] = (struct pollfd){c->pending[i].fd, POLLIN, 0}, who[n++] = -2;
  for (int r = 0; r < world; r++) {
    if (c->conns[r].fd < 0) continue;
    short ev = POLLIN | (rdv_conn_pending_out(&c->conns[r]) ? POLLOUT : 0);
    p[n] = (struct pollfd){c->conns[r].fd, ev, 0}, who[n++] = r;
  }
  poll(p, (nfds_t)n, timeout_ms);
  for (int i = 0; i < c->nlfd; i++)
    if (p[i].revents) accept_new(c, c->lfd[i]);
  for (int i = c->npending - 1; i >= 0; i--) read_pending(c, i);
  for (int i = 0; i < n; i++) {
    int r = who[i];
    if (r < 0 || c->conns[r].fd != p[i].fd || !p[i].revents) continue;
    char why[256];
    if ((p[i].revents & POLLOUT) && rdv_conn_flush(&c->conns[r], why, sizeof(why)) >= RDV_CLOSED) {
      c->on_rank_lost(c, r, "its connection to rank 0 broke");
      continue;
    }
    read_rank(c, r);
  }
  free(p);
  free(who);
}

/* Tells every rank the probe is over and gives the messages a moment to
 * leave: a rank that misses it gives up at its own deadline anyway. */
void server_close_all(struct coord *c) {
  int64_t end = clock_mono_ns() + 2LL * 1000000000;
  int world = c->l->world;
  for (int pending = 1; pending && clock_mono_ns() < end;) {
    pending = 0;
    for (int r = 0; r < world; r++) {
      char why[128];
      if (c->conns[r].fd >= 0 && rdv_conn_pending_out(&c->conns[r]) &&
          rdv_conn_flush(&c->conns[r], why, sizeof(why)) == RDV_AGAIN)
        pending = 1;
    }
    if (pending) poll(NULL, 0, 10);
  }
  for (int r = 0; r < world; r++)
    if (c->conns[r].fd >= 0) rdv_conn_close(&c->conns[r]);
  for (int i = 0; i < c->npending; i++) rdv_conn_close(&c->pending[i]);
  c->npending = 0;
  for (int i = 0; i < c->nlfd; i++) close(c->lfd[i]);
  c->nlfd = 0;
}
