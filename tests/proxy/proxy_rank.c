/* SPDX-License-Identifier: Apache-2.0 */
/* One rank: the plugin loaded as NCCL loads it, listen comms whose handles
 * go to the peer over the control socket, then one thread that connects,
 * accepts, moves data and closes, every connection in turn, as NCCL's proxy
 * thread does. Each phase's outcome goes to the parent as one line. */
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proxy.h"
#include "tools/proc_usage.h"

static int log_rank, log_warns, log_echo;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
                   const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level != NCCL_LOG_WARN && !log_echo) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (level == NCCL_LOG_WARN) __atomic_add_fetch(&log_warns, 1, __ATOMIC_RELAXED);
  printf("#   rank %d %s %s\n", log_rank, level == NCCL_LOG_WARN ? "WARN" : "INFO", msg);
  fflush(stdout);
}

static void report(int fd, const char *phase, int ok, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
static void report(int fd, const char *phase, int ok, const char *fmt, ...) {
  char line[512], detail[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof(detail), fmt, ap);
  va_end(ap);
  int n = snprintf(line, sizeof(line), "%s %d %s\n", phase, ok, detail);
  if (write(fd, line, (size_t)n) != n) perror("report");
}

static int ctl_io(struct proxy_rank *r, void *buf, size_t len, int out) {
  char *p = buf;
  while (len) {
    ssize_t n = out ? write(r->ctl, p, len) : read(r->ctl, p, len);
    if (n <= 0) {
      proxy_fail(r, "the control socket to rank %d closed: that rank died or gave up", r->peer);
      return -1;
    }
    p += n, len -= (size_t)n;
  }
  return 0;
}

static int load(struct proxy_rank *r) {
  char err[512];
  struct netload_props p;
  int ndev = 0, res;
  log_rank = r->rank, log_echo = getenv("PROXY_ECHO_LOG") != NULL;
  if (netload_open(&r->nl, NULL, r->o->abi, err, sizeof(err)))
    return proxy_fail(r, "cannot load the plugin: %s", err), -1;
  if ((res = netload_init(&r->nl, logger)) || (res = netload_devices(&r->nl, &ndev)) || ndev < 1 ||
      (res = netload_props(&r->nl, 0, &p)))
    return proxy_fail(r, "init/devices/getProperties: %d (%s), %d devices", res,
                      proxy_res_name(res), ndev),
           -1;
  r->dev = 0;
  r->group = r->o->group < p.max_recvs ? r->o->group : p.max_recvs;
  if (r->group < 1) r->group = 1;
  r->depth = r->o->depth ? r->o->depth : PROXY_STEPS;
  if (!r->o->depth && r->group > 1 && PROXY_SHARED / r->group < r->depth)
    r->depth = PROXY_SHARED / r->group;
  r->slot = r->o->max_size ? r->o->max_size : 1;
  printf("#   rank %d: %s v%d device 0 %s (maxRecvs %d): %d channels x %d steps, groups of %d, "
         "%d in flight\n",
         r->rank, netload_name(&r->nl), r->nl.version, p.name, p.max_recvs, r->o->channels,
         r->o->steps, r->group, r->depth);
  return 0;
}

static int exchange_handles(struct proxy_rank *r, char (*peer_handles)[NCCL_NET_HANDLE_MAXSIZE]) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  for (int i = 0; i < r->nlisten; i++) {
    memset(handle, 0, sizeof(handle));
    int res = netload_listen(&r->nl, r->dev, handle, &r->listens[i]);
    if (res || !r->listens[i])
      return proxy_fail(r, "listen %d: returned %d (%s)", i, res, proxy_res_name(res)), -1;
    if (ctl_io(r, handle, sizeof(handle), 1)) return -1;
  }
  for (int i = 0; i < r->nlisten; i++)
    if (ctl_io(r, peer_handles[i], NCCL_NET_HANDLE_MAXSIZE, 0)) return -1;
  return 0;
}

static int buffers(struct proxy_rank *r, void *comm, uint8_t **buf, size_t *bytes, void **mh,
                   int is_recv) {
  *bytes = (size_t)r->depth * (size_t)r->group * r->slot + 64;
  if (posix_memalign((void **)buf, 4096, *bytes)) return proxy_fail(r, "out of memory"), -1;
  memset(*buf, 0xa5, *bytes);
  int res = netload_reg_mr(&r->nl, comm, *buf, *bytes, NCCL_PTR_HOST, mh);
  if (res)
    return proxy_fail(r, "%s comm %p: regMr of %zu bytes returned %d (%s)",
                      is_recv ? "recv" : "send", comm, *bytes, res, proxy_res_name(res)),
           -1;
  return 0;
}

/* connect() on every send comm still without one; accept() once the late
 * accept delay is over, on every listen comm still owed comms. */
static int setup_round(struct proxy_rank *r, char (*peer_handles)[NCCL_NET_HANDLE_MAXSIZE]) {
  int moved = 0, res;
  for (int c = 0; c < r->o->channels; c++) {
    struct proxy_send *s = &r->sends[c];
    if (s->comm) continue;
    r->calls_connect++;
    res = netload_connect(&r->nl, r->dev, peer_handles[r->nlisten > 1 ? c : 0], &s->comm);
    if (res)
      return proxy_fail(r, "send channel %d: connect returned %d (%s) after %ld calls", c, res,
                        proxy_res_name(res), r->calls_connect),
             -1;
    if (s->comm && buffers(r, s->comm, &s->buf, &s->bytes, &s->mh, 0)) return -1;
    moved |= s->comm != NULL;
  }
  if (proxy_ms() < r->t0 + r->o->late_accept_ms) return moved;
  for (int c = 0; c < r->o->channels; c++) {
    struct proxy_recv *v = &r->recvs[r->nlisten > 1 ? c : r->accepted];
    if (r->accepted == r->o->channels) break;
    if (r->nlisten > 1 && v->comm) continue;
    void *lc = r->listens[r->nlisten > 1 ? c : 0];
    r->calls_accept++;
    res = netload_accept(&r->nl, lc, &v->comm);
    if (res)
      return proxy_fail(r, "recv channel %d: accept returned %d (%s) after %ld calls",
                        r->nlisten > 1 ? c : -1, res, proxy_res_name(res), r->calls_accept),
             -1;
    if (!v->comm) {
      if (r->nlisten == 1) break; /* one call per round, as NCCL's proxy makes */
      continue;
    }
    v->ch = r->nlisten > 1 ? c : -1;
    r->accepted++;
    moved = 1;
    if (buffers(r, v->comm, &v->buf, &v->bytes, &v->mh, 1)) return -1;
    if (r->nlisten > 1 || r->accepted == r->o->channels) { /* NCCL closes it once accepted */
      res = netload_close_listen(&r->nl, lc);
      if (res) return proxy_fail(r, "closeListen returned %d (%s)", res, proxy_res_name(res)), -1;
      r->listens_closed++;
    }
  }
  return moved;
}

/* A comm closes right after its last test() said done; rank 1 waits
 * close_lag_ms first, so its peer has closed already. */
static int close_round(struct proxy_rank *r) {
  long long now = proxy_ms(), lag = r->rank == 1 ? r->o->close_lag_ms : 0;
  int left = 0, res;
  for (int c = 0; c < r->o->channels; c++) {
    struct proxy_send *s = &r->sends[c];
    struct proxy_recv *v = &r->recvs[c];
    if (s->finished_ms && !s->closed && now >= s->finished_ms + lag) {
      if ((res = netload_dereg_mr(&r->nl, s->comm, s->mh)) ||
          (res = netload_close_send(&r->nl, s->comm)))
        return proxy_fail(r, "send channel %d: deregMr/closeSend returned %d (%s)", s->ch, res,
                          proxy_res_name(res)),
               -1;
      s->closed = 1;
      free(s->buf);
    }
    if (v->finished_ms && !v->closed && now >= v->finished_ms + lag) {
      if ((res = netload_dereg_mr(&r->nl, v->comm, v->mh)) ||
          (res = netload_close_recv(&r->nl, v->comm)))
        return proxy_fail(r, "recv channel %d: deregMr/closeRecv returned %d (%s)", v->ch, res,
                          proxy_res_name(res)),
               -1;
      v->closed = 1;
      free(v->buf);
    }
    left += !s->closed + !v->closed;
  }
  return left;
}

static void dump_state(struct proxy_rank *r) {
  for (int c = 0; c < r->o->channels; c++) {
    struct proxy_send *s = &r->sends[c];
    struct proxy_recv *v = &r->recvs[c];
    printf("#   rank %d send channel %d: %s, hello %d", r->rank, c,
           s->comm ? "connected" : "not connected", s->hello);
    for (int t = 0; t < r->group; t++)
      printf(", tag %d %d posted %d done", t, s->subs[t].posted, s->subs[t].done);
    printf("%s\n", s->closed ? ", closed" : "");
    printf("#   rank %d recv comm %d (channel %d): %s, hello %d, %d posted, %d received%s%s\n",
           r->rank, c, v->ch, v->comm ? "accepted" : "not accepted", v->hello, v->posted,
           v->received, v->flushing ? ", flushing" : "", v->closed ? ", closed" : "");
  }
}

static int all_connected(const struct proxy_rank *r) {
  for (int c = 0; c < r->o->channels; c++)
    if (!r->sends[c].comm) return 0;
  return r->accepted == r->o->channels;
}

static int all_finished(const struct proxy_rank *r) {
  for (int c = 0; c < r->o->channels; c++)
    if (!r->sends[c].finished_ms || !r->recvs[c].finished_ms) return 0;
  return 1;
}

/* The peer writes 'F' on the control socket when it fails, 'D' when it is
 * done: a rank stops once its peer failed, so each rank reports its own
 * first fault, not the peer's failure as seen from here. */
static int peer_failed(struct proxy_rank *r) {
  struct pollfd pfd = {r->ctl, POLLIN, 0};
  char b;
  if (r->peer_state || poll(&pfd, 1, 0) != 1) return r->peer_state == 'F';
  if (read(r->ctl, &b, 1) != 1) b = 'F';
  r->peer_state = b;
  if (b == 'F') proxy_fail(r, "stopped: rank %d failed (its lines say why)", r->peer);
  return b == 'F';
}

/* The proxy thread: every connection, round-robin, until all are closed. */
static int progress(struct proxy_rank *r, int fd, char (*peer_handles)[NCCL_NET_HANDLE_MAXSIZE]) {
  int connected = 0, finished = 0, left = 1, is_last = r->round == r->o->rounds - 1;
  while (left) {
    int moved = 0, x;
    if (!connected) {
      if ((x = setup_round(r, peer_handles)) < 0) break;
      moved |= x;
      if ((connected = all_connected(r)) && is_last)
        report(fd, "connect", 1,
               "%d send and %d recv comms, %d listen comms, in %lld ms (%ld "
               "connect and %ld accept calls)",
               r->o->channels, r->o->channels, r->nlisten, proxy_ms() - r->t0, r->calls_connect,
               r->calls_accept);
    }
    for (int c = 0; c < r->o->channels && !r->failed; c++) {
      if ((x = proxy_send_round(r, &r->sends[c])) < 0) break;
      moved |= x;
      if ((x = proxy_recv_round(r, &r->recvs[c])) < 0) break;
      moved |= x;
    }
    if (r->failed) break;
    if (!finished && (finished = all_finished(r)) && is_last)
      report(fd, "data", 1,
             "%d steps on %d channels each way checked in %lld ms (%ld sends and "
             "%ld receives refused for now with a NULL request)",
             r->o->steps, r->o->channels, proxy_ms() - r->t0, r->nulls_send, r->nulls_recv);
    if ((left = close_round(r)) < 0) break;
    if (peer_failed(r)) break;
    if (proxy_ms() > r->deadline) {
      proxy_fail(r, "not done after %d s", r->o->timeout_s);
      dump_state(r);
      break;
    }
    if (!moved) sched_yield();
  }
  if (!connected || (r->failed && !is_last)) {
    int ns = 0;
    for (int c = 0; c < r->o->channels; c++) ns += r->sends[c].comm != NULL;
    report(fd, "connect", 0, "%d of %d send and %d of %d recv comms when it stopped: %s", ns,
           r->o->channels, r->accepted, r->o->channels, r->first_fault);
  }
  if (!finished || (r->failed && !is_last)) report(fd, "data", 0, "%s", r->first_fault);
  return r->failed ? -1 : 0;
}

/* One round: fresh listen comms, handles to the peer, every connection up,
 * through and closed, then both ranks meet. */
static int one_round(struct proxy_rank *r, int fd, char (*peer_handles)[NCCL_NET_HANDLE_MAXSIZE]) {
  memset(r->sends, 0, (size_t)r->o->channels * sizeof(*r->sends));
  memset(r->recvs, 0, (size_t)r->o->channels * sizeof(*r->recvs));
  for (int c = 0; c < r->o->channels; c++) r->sends[c].ch = c, r->recvs[c].ch = -1;
  r->accepted = r->listens_closed = 0, r->peer_state = 0;
  r->nulls_send = r->nulls_recv = r->calls_connect = r->calls_accept = 0;
  if (exchange_handles(r, peer_handles)) {
    report(fd, "connect", 0, "%s", r->first_fault);
    report(fd, "data", 0, "not reached");
    return -1;
  }
  r->t0 = proxy_ms();
  r->deadline = r->t0 + r->o->timeout_s * 1000LL;
  int bad = progress(r, fd, peer_handles);
  /* Both ranks are done with their comms (or failed) before either goes
   * on: a failing rank's exit would otherwise fail its peer too. */
  char b = bad ? 'F' : 'D';
  struct pollfd pfd = {r->ctl, POLLIN, 0};
  if (write(r->ctl, &b, 1) != 1 ||
      (!r->peer_state && (poll(&pfd, 1, 30000) != 1 || read(r->ctl, &b, 1) != 1)))
    return bad ? -1 : (proxy_fail(r, "rank %d died or hung: no word from it in 30 s", r->peer), -1);
  if (!r->peer_state && b == 'F' && !bad) /* its own lines say why; nothing failed here */
    printf("#   rank %d: rank %d failed after this rank was done\n", r->rank, r->peer);
  return bad || (!r->peer_state && b == 'F') ? -1 : 0;
}

/* Every round closes all it opened: after the last, the process holds
 * about what it held after the first. A couple more is the plugin's
 * once-per-process state made on first need (its idle-wait eventfd, made
 * the first time the thread goes idle); a leak grows with the rounds.
 * Helper threads get a moment to exit. */
#define ONCE_PER_PROCESS 2
static int check_leaks(struct proxy_rank *r, const struct proc_usage *first) {
  struct proc_usage now;
  long long end = proxy_ms() + 2000;
  int more_threads, more_fds;
  do {
    proc_usage_now(&now);
    more_threads = now.threads - first->threads, more_fds = now.fds - first->fds;
    if (more_threads <= ONCE_PER_PROCESS && more_fds <= ONCE_PER_PROCESS) break;
    usleep(20000);
  } while (proxy_ms() < end);
  printf("#   rank %d after round 1: %d threads, %d descriptors, %lld kB; after round %d: %d, %d, "
         "%lld kB\n",
         r->rank, first->threads, first->fds, (long long)first->rss_kb, r->o->rounds, now.threads,
         now.fds, (long long)now.rss_kb);
  if (more_threads <= ONCE_PER_PROCESS && more_fds <= ONCE_PER_PROCESS) return 0;
  proxy_fail(r,
             "%d more threads and %d more descriptors after %d rounds than after the first: "
             "closed comms left them behind",
             more_threads, more_fds, r->o->rounds);
  return -1;
}

int proxy_rank_run(struct proxy_rank *r, int fd) {
  r->nlisten = r->o->listen_per_channel ? r->o->channels : 1;
  r->listens = calloc((size_t)r->nlisten, sizeof(void *));
  r->sends = calloc((size_t)r->o->channels, sizeof(*r->sends));
  r->recvs = calloc((size_t)r->o->channels, sizeof(*r->recvs));
  char(*peer_handles)[NCCL_NET_HANDLE_MAXSIZE] =
    calloc((size_t)r->nlisten, NCCL_NET_HANDLE_MAXSIZE);
  r->rng = r->o->seed ^ (0x51ed27u + (uint64_t)r->rank);
  if (load(r)) {
    report(fd, "connect", 0, "%s", r->first_fault);
    report(fd, "data", 0, "not reached");
    report(fd, "close", 0, "not reached");
    return 1;
  }
  int bad = 0;
  struct proc_usage first = {0};
  for (r->round = 0; r->round < r->o->rounds && !bad; r->round++) {
    bad = one_round(r, fd, peer_handles);
    if (r->round == 0) proc_usage_now(&first);
  }
  if (bad && !r->failed && r->round < r->o->rounds) { /* the peer failed in an earlier round */
    proxy_fail(r, "stopped after round %d: rank %d failed (its lines say why)", r->round, r->peer);
    report(fd, "connect", 0, "%s", r->first_fault);
    report(fd, "data", 0, "%s", r->first_fault);
  }
  r->round = r->o->rounds - 1;
  if (!bad && r->o->rounds > 1) bad = check_leaks(r, &first);
  int res = netload_finalize(&r->nl);
  if (res) proxy_fail(r, "finalize returned %d (%s)", res, proxy_res_name(res));
  int warns = __atomic_load_n(&log_warns, __ATOMIC_RELAXED);
  if (!bad && warns)
    proxy_fail(r, "the plugin logged %d WARN lines in a run without faults (above)", warns);
  report(fd, "close", !r->failed, "%s",
         r->failed ? r->first_fault
                   : "every comm closed at once after its last test(), finalize returned "
                     "ncclSuccess");
  return r->failed;
}
