/* SPDX-License-Identifier: Apache-2.0 */
/* Striping (NCCL 2.19+): a connection over a fused NIC cuts each message
 * over the member ports of both sides, on the fixture host with one
 * dual-port card fused into a virtual NIC. softverbs counts the payload
 * bytes each port sent (as a real port's port_xmit_data): both ports must
 * carry each message's share. A side that does not stripe (an older
 * release, or a port used alone) keeps the connection on one port; a
 * port that fails under a striped connection fails it, naming the port,
 * without a hang and without a corrupt message delivered. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"

static void close_comm(struct side *s, void *comm) {
  if (!comm) return;
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
}

/* softverbs' per-port counters (0 when not there). */
static unsigned long long counter(const char *name, const char *dev) {
  void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
  unsigned long long (*fn)(const char *, int) =
    h ? (unsigned long long (*)(const char *, int))dlsym(h, name) : NULL;
  return fn ? fn(dev, 1) : 0;
}
/* payload bytes the port sent */
static unsigned long long port_tx(const char *dev) {
  return counter("softverbs_port_tx_bytes", dev);
}

/* Fuses the card's two ports (devices 0 and 1) into s->dev. 0 or -1. */
static int fuse(struct side *s) {
  int n = 0, devs[2] = {0, 1}, vd = -1;
  netload_devices(&s->nl, &n);
  CHECK(n == 2, "the dual-port host shows %d devices", n);
  int r = netload_make_vdevice(&s->nl, 2, devs, &vd);
  CHECK(r == ncclSuccess && vd == 2, "makeVDevice: %d, device %d", r, vd);
  if (r != ncclSuccess) return -1;
  s->dev = vd;
  return 0;
}

static int open_host(struct side *s) {
  if (use_fixture(s, ROLE_RECV, "roce-dual-port") || use_fixture(s, ROLE_SEND, "roce-dual-port"))
    return -1;
  if (side_open(s)) return -1;
  if (s->abi < 9) { /* no makeVDevice before v9 */
    side_close(s);
    return -1;
  }
  return 0;
}

/* A grouped receive of n buffers, each with its own size, every byte checked. */
static void grouped(struct side *s, void *comm, int n, unsigned seed) {
  enum { CAP = 300000 };
  uint8_t *buf = malloc((size_t)n * CAP);
  void *mh = NULL, *data[8], *mhs[8], *req[8] = {0};
  size_t caps[8];
  int tags[8], sizes[8];
  netload_reg_mr(&s->nl, comm, buf, (size_t)n * CAP, NCCL_PTR_HOST, &mh);
  for (int i = 0; i < n; i++) {
    data[i] = buf + (size_t)i * CAP, mhs[i] = mh, caps[i] = CAP, tags[i] = 200 + i;
    sizes[i] = (int)((i * 77003 + seed * 13) % CAP) * (i % 4 != 2); /* some are empty */
  }
  if (s->role == ROLE_RECV) {
    int r = netload_irecv(&s->nl, comm, n, data, caps, tags, mhs, &req[0]);
    CHECK(r == 0 && req[0], "irecv of %d buffers: %d", n, r);
    int got[8] = {0};
    CHECK(req[0] && wait_req_sizes(s, req[0], got, n, 20000) == 0, "grouped receive not done");
    for (int i = 0; i < n; i++) {
      CHECK(got[i] == sizes[i], "buffer %d: %d bytes, expected %d", i, got[i], sizes[i]);
      CHECK(check_pattern(data[i], (size_t)sizes[i], seed + (unsigned)tags[i]) == (size_t)sizes[i],
            "buffer %d of a grouped receive holds the wrong data", i);
    }
  } else {
    for (int i = 0; i < n; i++) {
      fill_pattern(data[i], (size_t)sizes[i], seed + (unsigned)tags[i]);
      long long end = ms_now() + 20000;
      int r;
      do r = netload_isend(&s->nl, comm, data[i], (size_t)sizes[i], tags[i], mh, &req[i]);
      while (!r && !req[i] && ms_now() < end);
      CHECK(r == 0 && req[i], "isend tag %d: %d", tags[i], r);
    }
    for (int i = 0; i < n; i++)
      if (req[i]) CHECK(wait_req(s, req[i], NULL, 20000) == 0, "send %d not done", i);
  }
  netload_dereg_mr(&s->nl, comm, mh);
  free(buf);
}

/* The sizes NCCL sends, then grouped receives; on the sending side each
 * port's counter must have grown by a third of the bytes at least. */
static void traffic(struct side *s, void *comm, bool is_striped) {
  static const size_t sizes[] = {8, 65536, 1 << 20, 16 << 20};
  unsigned long long p0 = port_tx("mlx5_0"), p1 = port_tx("mlx5_1"), total = 0;
  for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    for (unsigned k = 0; k < 2; k++) {
      CHECK(xfer_one(s, comm, sizes[i] - k, sizes[i], i * 2 + k) == 0, "transfer of %zu bytes",
            sizes[i] - k);
      total += sizes[i] - k;
    }
  }
  for (unsigned k = 0; k < 3; k++) grouped(s, comm, 2 + (int)k * 3, k);
  ctl_sync(s);
  if (s->role != ROLE_SEND) return;
  unsigned long long d0 = port_tx("mlx5_0") - p0, d1 = port_tx("mlx5_1") - p1;
  tap_diag("sent %llu bytes of messages: mlx5_0 port 1 carried %llu, mlx5_1 port 1 %llu", total, d0,
           d1);
  CHECK(d0 + d1 >= total, "the ports carried %llu bytes of %llu", d0 + d1, total);
  if (is_striped)
    CHECK(d0 >= total / 3 && d1 >= total / 3,
          "both ports must carry a share: mlx5_0 %llu, mlx5_1 %llu bytes of %llu", d0, d1, total);
  else
    CHECK(d0 < total / 100 || d1 < total / 100,
          "an unstriped connection used both ports: mlx5_0 %llu, mlx5_1 %llu bytes", d0, d1);
}

/* Both directions: the second connection has the roles swapped. */
void case_stripe_both_ports(struct side *s) {
  if (open_host(s) || fuse(s)) return;
  void *comm = NULL;
  log_clear();
  if (pair_open(s, &comm)) return;
  const char *i = log_find(NCCL_LOG_INFO, "striped over");
  CHECK(i && strstr(i, "striped over mlx5_0 port 1 and mlx5_1 port 1 (the peer's 2 ports)"),
        "the connection does not say it is striped over both ports: %s", i ? i : "none");
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 2 queue pairs"), "not one queue pair per port");
  traffic(s, comm, true);
  int role = s->role;
  s->role = role == ROLE_SEND ? ROLE_RECV : ROLE_SEND;
  void *back = NULL;
  if (!pair_open(s, &back)) traffic(s, back, true);
  ctl_sync(s);
  close_comm(s, back);
  s->role = role;
  close_comm(s, comm);
  side_close(s);
}

/* NCCL_IB_SPLIT_DATA_ON_QPS=1 and 2 queue pairs per port: each message
 * over all four, still on both ports. */
void case_stripe_split(struct side *s) {
  setenv("NCCL_IB_QPS_PER_CONNECTION", "2", 1);
  setenv("NCCL_IB_SPLIT_DATA_ON_QPS", "1", 1);
  if (open_host(s) || fuse(s)) return;
  void *comm = NULL;
  log_clear();
  if (pair_open(s, &comm)) return;
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 4 queue pairs, each message striped"),
        "not 2 queue pairs on each of the 2 ports");
  traffic(s, comm, true);
  close_comm(s, comm);
  side_close(s);
}

/* The sender uses port 0 alone (its hello offers no striping, as an older
 * release's): the connection stays on one port, and data moves. */
void case_stripe_peer_unfused(struct side *s) {
  if (open_host(s)) return;
  if (s->role == ROLE_RECV && fuse(s)) return;
  void *comm = NULL;
  log_clear();
  if (pair_open(s, &comm)) return;
  CHECK(!log_find(NCCL_LOG_INFO, "striped"), "striped with a peer that does not stripe: %s",
        log_find(NCCL_LOG_INFO, "striped"));
  CHECK(log_find(NCCL_LOG_INFO, "on mlx5_0 port 1: RDMA, 1 queue pair"), "not one queue pair");
  traffic(s, comm, false);
  close_comm(s, comm);
  side_close(s);
}

/* The second port fails under a striped connection with messages in
 * flight: the connection fails on both sides within the window, the WARN
 * names the port; no message completes with wrong bytes. */
void case_stripe_port_down(struct side *s) {
  enum { MSGS = 60, WINDOW = 8, SIZE = 200000, FAIL_AT = 20 };
  if (open_host(s) || fuse(s)) return;
  void *comm = NULL, *mh = NULL, *reqs[MSGS] = {0};
  if (pair_open(s, &comm)) return;
  uint8_t *buf = calloc(WINDOW * 2, SIZE);
  netload_reg_mr(&s->nl, comm, buf, (size_t)WINDOW * 2 * SIZE, NCCL_PTR_HOST, &mh);
  int next = 0, done = 0, r = 0;
  long long end = ms_now() + 40000;
  while (done < MSGS && !r && ms_now() < end) {
    uint8_t *b = buf + (size_t)(next % (2 * WINDOW)) * SIZE;
    if (next < MSGS && next - done < WINDOW) {
      if (s->role == ROLE_SEND && next == FAIL_AT) {
        setenv("SOFTVERBS_PORT_DOWN", "mlx5_1:1", 1);
        setenv("SOFTVERBS_WC_ERROR", "RETRY_EXC_ERR:0:mlx5_1", 1);
      }
      int tag = 3;
      size_t cap = SIZE;
      if (s->role == ROLE_SEND) {
        fill_pattern(b, SIZE, (unsigned)next);
        r = netload_isend(&s->nl, comm, b, SIZE, tag, mh, &reqs[next]);
      } else {
        r = netload_irecv(&s->nl, comm, 1, (void **)&b, &cap, &tag, &mh, &reqs[next]);
      }
      if (!r && reqs[next]) next++;
    }
    if (r || done == next) continue;
    int ok = 0, got = 0;
    r = netload_test(&s->nl, reqs[done], &ok, &got);
    if (r || !ok) continue;
    if (s->role == ROLE_RECV) {
      const uint8_t *d = buf + (size_t)(done % (2 * WINDOW)) * SIZE;
      CHECK(got == SIZE && check_pattern(d, SIZE, (unsigned)done) == SIZE,
            "message %d completed with %d bytes, or wrong ones", done, got);
    }
    done++;
  }
  CHECK(r != 0 && done < MSGS, "the %s side did not fail (%d of %d done, result %d)",
        s->role == ROLE_SEND ? "sending" : "receiving", done, MSGS, r);
  if (s->role == ROLE_SEND) {
    const char *w = log_find(NCCL_LOG_WARN, "(RDMA): ");
    CHECK(w && strstr(w, "mlx5_1 port 1 went down") &&
            strstr(w, "NCCL_IB_RESILIENCY_PORT_FAILOVER=1 on both sides would have moved this "
                      "connection to mlx5_0 port 1, a surviving port of its virtual NIC"),
          "the failure names mlx5_1 port 1 and the setting that keeps connections: %s",
          w ? w : "none");
  }
  unsetenv("SOFTVERBS_PORT_DOWN");
  unsetenv("SOFTVERBS_WC_ERROR");
  ctl_sync(s);
  netload_dereg_mr(&s->nl, comm, mh);
  close_comm(s, comm);
  free(buf);
  side_close(s);
}

/* A fatal device event on the receiver's second port: a striped
 * connection uses it too, so the next call fails there, naming it. */
void case_stripe_fatal_second(struct side *s) {
  events_set("");
  setenv("SOFTVERBS_PORT_EVENTS", events_path(), 1);
  if (open_host(s) || fuse(s)) return;
  void *comm = NULL;
  if (pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 70000, 70000, 4) == 0, "transfer before the event");
  ctl_sync(s);
  if (s->role == ROLE_RECV) {
    events_set("fatal:mlx5_1");
    long long end = ms_now() + 5000;
    while (!log_find(NCCL_LOG_WARN, "fatal device error") && ms_now() < end) usleep(10000);
  }
  ctl_sync(s);
  int r = xfer_one(s, comm, 70000, 70000, 5);
  if (s->role == ROLE_RECV) {
    CHECK(r == ncclSystemError, "the receiver's next call: %d, expected ncclSystemError", r);
    const char *w = log_find(NCCL_LOG_WARN, "reported a fatal error");
    CHECK(w && strstr(w, "device mlx5_1 port 1 on "),
          "the failure names the striped connection's second port: %s", w ? w : "none");
  } else {
    CHECK(r == ncclRemoteError || r == ncclSystemError, "the sender's calls: %d", r);
  }
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
  unlink(events_path());
}

/* The GPUDirect flush (forced: host memory here): a striped receiver
 * reads through each of its ports, as data landed through each; the
 * flush completes when both reads have. */
void case_stripe_flush(struct side *s) {
  setenv("NCCL_DIAG_FORCE_FLUSH", "1", 1);
  if (open_host(s) || fuse(s)) return;
  void *comm = NULL;
  if (pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 300000, 300000, 6) == 0, "transfer before the flushes");
  if (s->role == ROLE_RECV) {
    CHECK(log_find(NCCL_LOG_INFO, "flush queue pair"), "no flush queue pair");
    unsigned long long r0 = counter("softverbs_port_reads", "mlx5_0");
    unsigned long long r1 = counter("softverbs_port_reads", "mlx5_1");
    uint8_t *buf = malloc(4096);
    void *mh = NULL, *req = NULL;
    netload_reg_mr(&s->nl, comm, buf, 4096, NCCL_PTR_HOST, &mh);
    for (int i = 0; i < 20; i++) {
      int sz = 4096;
      req = NULL;
      CHECK(netload_iflush(&s->nl, comm, 1, (void **)&buf, &sz, &mh, &req) == 0 && req,
            "iflush %d gave no request", i);
      if (req) CHECK(wait_req(s, req, NULL, 10000) == 0, "flush %d did not complete", i);
    }
    r0 = counter("softverbs_port_reads", "mlx5_0") - r0;
    r1 = counter("softverbs_port_reads", "mlx5_1") - r1;
    CHECK(r0 == 20 && r1 == 20, "20 flushes read %llu times on mlx5_0 and %llu on mlx5_1", r0, r1);
    netload_dereg_mr(&s->nl, comm, mh);
    free(buf);
  }
  CHECK(xfer_one(s, comm, 300000, 300000, 7) == 0, "transfer after the flushes");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}
