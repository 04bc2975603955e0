/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: the wire format and connection I/O.
 *
 * One TCP connection per direction of a QP pair: the requester connects at
 * RTR, sends a 64-byte hello naming the destination QP and GID/LID, then
 * requests; the responder answers on the same connection with ACK, NAK and
 * READ responses. Every message starts with a 32-byte header (big endian);
 * SEND/WRITE requests and READ responses are followed by their payload,
 * which is read straight into the target memory and written straight from
 * the source memory (sendmsg/recvmsg with iovecs, no copies). PSNs count
 * messages, not MTU packets. */
#include "sv.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Payload written into a memory region is the NIC's DMA: outside the C
 * memory model, and the plugin polls such memory (clear-to-send entries)
 * as it would a device's. Under ThreadSanitizer those writes are hidden,
 * so the plugin's own threads are still checked against each other. */
#if defined(__SANITIZE_THREAD__)
#define SV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SV_TSAN 1
#endif
#endif
#ifdef SV_TSAN
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define DMA_BEGIN() AnnotateIgnoreWritesBegin(__FILE__, __LINE__)
#define DMA_END() AnnotateIgnoreWritesEnd(__FILE__, __LINE__)
#else
#define DMA_BEGIN() ((void)0)
#define DMA_END() ((void)0)
#endif

enum { SV_MAGIC = 0x53560001, SV_HELLO_MAGIC = 0x53564831, SV_IBUF = 65536, SV_BATCH_IOV = 64 };
enum { SV_PROGRESS_BYTES = 1 << 20 };

static void put32(uint8_t *b, uint32_t v) {
  v = htobe32(v);
  memcpy(b, &v, 4);
}
static uint32_t get32(const uint8_t *b) {
  uint32_t v;
  memcpy(&v, b, 4);
  return be32toh(v);
}
static void put64(uint8_t *b, uint64_t v) {
  v = htobe64(v);
  memcpy(b, &v, 8);
}
static uint64_t get64(const uint8_t *b) {
  uint64_t v;
  memcpy(&v, b, 8);
  return be64toh(v);
}

void sv_msg_encode(const struct sv_msg *m, uint8_t *b) {
  b[0] = m->kind;
  b[1] = m->flags;
  b[2] = m->syndrome;
  b[3] = m->rnr_timer;
  put32(b + 4, m->psn);
  put64(b + 8, m->raddr);
  put32(b + 16, m->rkey);
  put32(b + 20, m->len);
  memcpy(b + 24, &m->imm, 4); /* already in network order */
  put32(b + 28, SV_MAGIC);
}

int sv_msg_decode(const uint8_t *b, struct sv_msg *m) {
  if (get32(b + 28) != SV_MAGIC || b[0] < SV_REQ_SEND || b[0] > SV_RSP_READ) return EPROTO;
  m->kind = b[0];
  m->flags = b[1];
  m->syndrome = b[2];
  m->rnr_timer = b[3];
  m->psn = get32(b + 4);
  m->raddr = get64(b + 8);
  m->rkey = get32(b + 16);
  m->len = get32(b + 20);
  memcpy(&m->imm, b + 24, 4);
  return 0;
}

void sv_hello_encode(const struct sv_hello *h, uint8_t *b) {
  memset(b, 0, SV_HELLO_LEN);
  put32(b, SV_HELLO_MAGIC);
  put32(b + 4, h->src_qpn);
  put32(b + 8, h->dst_qpn);
  memcpy(b + 12, h->dgid.raw, 16);
  memcpy(b + 28, h->sgid.raw, 16);
  b[44] = (uint8_t)(h->dlid >> 8), b[45] = (uint8_t)h->dlid;
  b[46] = (uint8_t)(h->slid >> 8), b[47] = (uint8_t)h->slid;
}

int sv_hello_decode(const uint8_t *b, struct sv_hello *h) {
  if (get32(b) != SV_HELLO_MAGIC) return EPROTO;
  h->src_qpn = get32(b + 4);
  h->dst_qpn = get32(b + 8);
  memcpy(h->dgid.raw, b + 12, 16);
  memcpy(h->sgid.raw, b + 28, 16);
  h->dlid = (uint16_t)(b[44] << 8 | b[45]);
  h->slid = (uint16_t)(b[46] << 8 | b[47]);
  return 0;
}

struct sv_out *sv_out_new(const struct sv_msg *m, bool is_req) {
  struct sv_out *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  if (m) sv_msg_encode(m, o->hdr);
  o->is_req = is_req;
  o->iov[0].iov_base = o->hdr;
  o->iov[0].iov_len = SV_HDR_LEN;
  o->niov = 1;
  return o;
}

void sv_out_add(struct sv_out *o, void *p, size_t len) {
  if (!len) return;
  o->iov[o->niov].iov_base = p;
  o->iov[o->niov++].iov_len = len;
}

static size_t out_bytes(const struct sv_out *o) {
  size_t n = 0;
  for (int i = o->cur; i < o->niov; i++) n += o->iov[i].iov_len;
  return n;
}

struct sv_conn *sv_conn_new(struct sv_ctx *ctx, int fd, bool outgoing) {
  struct sv_conn *c = calloc(1, sizeof *c);
  if (c) c->ibuf = malloc(SV_IBUF);
  if (!c || !c->ibuf) {
    free(c);
    return NULL;
  }
  c->kind = SV_EV_CONN;
  c->ctx = ctx;
  c->fd = fd;
  c->outgoing = outgoing;
  atomic_init(&c->dead, false);
  return c;
}

void sv_conn_queue(struct sv_conn *c, struct sv_out *o) {
  if (c->oq_tail) c->oq_tail->next = o;
  else c->oq = o;
  c->oq_tail = o;
  c->oq_bytes += out_bytes(o);
}

static void want_out(struct sv_conn *c, bool on) {
  if (c->want_out == on) return;
  struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c};
  if (!epoll_ctl(c->ctx->epfd, EPOLL_CTL_MOD, c->fd, &ev)) c->want_out = on;
}

/* Marks n sent bytes off the queue's head items. */
static void consume(struct sv_conn *c, size_t n) {
  c->oq_bytes -= n;
  while (n && c->oq) {
    struct sv_out *o = c->oq;
    o->started = true;
    while (n && o->cur < o->niov) {
      struct iovec *v = &o->iov[o->cur];
      size_t k = n < v->iov_len ? n : v->iov_len;
      v->iov_base = (char *)v->iov_base + k;
      v->iov_len -= k;
      n -= k;
      if (!v->iov_len) o->cur++;
    }
    if (o->cur == o->niov) {
      c->oq = o->next;
      if (!c->oq) c->oq_tail = NULL;
      free(o);
    }
  }
}

/* Writes what the socket takes without blocking. -1: the connection is gone. */
int sv_conn_flush(struct sv_conn *c) {
  if (atomic_load(&c->dead) || c->state != SV_UP) return 0;
  while (c->oq) {
    struct iovec iov[SV_BATCH_IOV];
    int n = 0;
    for (struct sv_out *o = c->oq; o && n < SV_BATCH_IOV; o = o->next)
      for (int i = o->cur; i < o->niov && n < SV_BATCH_IOV; i++) iov[n++] = o->iov[i];
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t sent = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      want_out(c, true);
      return 0;
    }
    if (sent < 0) return -1;
    consume(c, (size_t)sent);
  }
  want_out(c, false);
  return 0;
}

/* Forgets requests not yet started (they will be sent again from the SQ). */
void sv_conn_drop_unstarted(struct sv_conn *c) {
  struct sv_out **pp = &c->oq;
  c->oq_tail = NULL;
  while (*pp) {
    struct sv_out *o = *pp;
    if (o->is_req && !o->started) {
      c->oq_bytes -= out_bytes(o);
      *pp = o->next;
      free(o);
    } else {
      c->oq_tail = o;
      pp = &o->next;
    }
  }
}

static void free_queue(struct sv_conn *c) {
  while (c->oq) {
    struct sv_out *o = c->oq;
    c->oq = o->next;
    free(o);
  }
  c->oq_tail = NULL;
  c->oq_bytes = 0;
}

/* Closes at once; the struct is freed by the progress thread later, since
 * an epoll event for it may still be in its hands. qp->lock held if bound. */
void sv_conn_kill(struct sv_conn *c) {
  if (atomic_exchange(&c->dead, true)) return;
  struct sv_ctx *ctx = c->ctx;
  epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  c->fd = -1;
  free_queue(c);
  if (c->qp && c->qp->out == c) c->qp->out = NULL;
  if (c->qp && c->qp->in == c) c->qp->in = NULL;
  pthread_mutex_lock(&ctx->grave_lock);
  c->next = ctx->grave;
  ctx->grave = c;
  pthread_mutex_unlock(&ctx->grave_lock);
}

void sv_conn_free(struct sv_conn *c) {
  if (c->fd >= 0) close(c->fd);
  free_queue(c);
  free(c->ibuf);
  free(c);
}

void sv_sink_set(struct sv_sink *s, size_t len, bool discard) {
  s->niov = s->cur = 0;
  s->left = len;
  s->discard = discard;
}

void sv_sink_add(struct sv_sink *s, void *p, size_t len) {
  if (len && s->niov < SV_MAX_SGE) {
    s->iov[s->niov].iov_base = p;
    s->iov[s->niov++].iov_len = len;
  }
}

static void sink_put(struct sv_sink *s, const uint8_t *p, size_t n) {
  s->left -= n;
  while (n && !s->discard && s->cur < s->niov) {
    struct iovec *v = &s->iov[s->cur];
    size_t k = n < v->iov_len ? n : v->iov_len;
    if (p) {
      DMA_BEGIN();
      memcpy(v->iov_base, p, k);
      DMA_END();
    }
    if (p) p += k;
    v->iov_base = (char *)v->iov_base + k;
    v->iov_len -= k;
    n -= k;
    if (!v->iov_len) s->cur++;
  }
}

/* 1: bytes arrived; 0: nothing now; -1: closed or failed. */
static int refill(struct sv_conn *c) {
  ssize_t n;
  do n = recv(c->fd, c->ibuf, SV_IBUF, MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
  if (n <= 0) return -1;
  c->ipos = 0;
  c->ilen = (size_t)n;
  return 1;
}

/* Large payloads go straight from the socket into the target memory. */
static int read_direct(struct sv_conn *c) {
  struct sv_sink *s = &c->sink;
  struct iovec iov[SV_MAX_SGE];
  int n = 0;
  size_t want = 0;
  for (int i = s->cur; i < s->niov && want < s->left; i++, n++) {
    iov[n] = s->iov[i];
    if (want + iov[n].iov_len > s->left) iov[n].iov_len = s->left - want;
    want += iov[n].iov_len;
  }
  struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
  ssize_t got;
  DMA_BEGIN();
  do got = recvmsg(c->fd, &mh, MSG_DONTWAIT);
  while (got < 0 && errno == EINTR);
  DMA_END();
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
  if (got <= 0) return -1;
  sink_put(s, NULL, (size_t)got);
  return 1;
}

static int read_payload(struct sv_conn *c) {
  struct sv_sink *s = &c->sink;
  if (c->ipos < c->ilen) {
    size_t k = c->ilen - c->ipos < s->left ? c->ilen - c->ipos : s->left;
    sink_put(s, c->ibuf + c->ipos, k);
    c->ipos += k;
    return 1;
  }
  if (!s->discard && s->left >= 8192) return read_direct(c);
  return refill(c);
}

static size_t payload_len(const struct sv_msg *m) {
  bool carries = m->kind == SV_REQ_SEND || m->kind == SV_REQ_SEND_IMM || m->kind == SV_REQ_WRITE ||
                 m->kind == SV_REQ_WRITE_IMM || m->kind == SV_RSP_READ;
  return carries ? m->len : 0;
}

/* A long payload is life: every SV_PROGRESS_BYTES the requester restarts its
 * ACK timer and the responder sends an ACK of what it completed so far, as
 * a HCA ACKs a long message packet by packet. */
static void payload_progress(struct sv_conn *c, size_t n) {
  c->progress += n;
  if (c->progress < SV_PROGRESS_BYTES || !c->qp) return;
  c->progress = 0;
  if (c->outgoing) sv_req_alive(c->qp);
  else sv_resp_alive(c->qp);
}

/* Completes the header being read; false while more bytes are needed. */
static bool header_done(struct sv_conn *c, size_t need) {
  size_t k = need - c->hgot < c->ilen - c->ipos ? need - c->hgot : c->ilen - c->ipos;
  memcpy(c->hdr + c->hgot, c->ibuf + c->ipos, k);
  c->ipos += k;
  c->hgot += k;
  if (c->hgot < need) return false;
  c->hgot = 0;
  return true;
}

/* Reads and dispatches what has arrived. 0: wait for more; -1: the
 * connection is gone or spoke nonsense; 1: a hello arrived (the caller
 * binds the connection and takes the lock of the QP it names). */
int sv_conn_input(struct sv_conn *c) {
  while (!atomic_load(&c->dead)) {
    if (c->in_payload) {
      if (c->sink.left) {
        size_t before = c->sink.left;
        int r = read_payload(c);
        if (r <= 0) return r;
        payload_progress(c, before - c->sink.left);
        continue;
      }
      c->in_payload = false;
      if (c->outgoing) sv_req_on_payload(c);
      else sv_resp_on_payload(c);
      continue;
    }
    if (c->ipos == c->ilen) {
      int r = refill(c);
      if (r <= 0) return r;
    }
    bool hello = c->state == SV_HELLO;
    if (!header_done(c, hello ? SV_HELLO_LEN : SV_HDR_LEN)) continue;
    if (hello) return sv_hello_decode(c->hdr, &c->hello) ? -1 : 1;
    if (sv_msg_decode(c->hdr, &c->msg)) return -1;
    c->in_payload = true;
    sv_sink_set(&c->sink, payload_len(&c->msg), true);
    if (c->outgoing) sv_req_on_msg(c);
    else sv_resp_on_msg(c);
  }
  return 0;
}
