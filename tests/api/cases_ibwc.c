/* SPDX-License-Identifier: Apache-2.0 */
/* The fix at failure time (over softverbs, which injects the completion
 * error): what the plugin knows beyond the status (the buffer's memory, a
 * forced GID index) changes the advice, in the words nccl-net-diag explain
 * uses for the same status. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"

/* One message in buffers registered as the given memory type; returns the
 * first failing call's result. */
static int xfer_typed(struct side *s, void *comm, int type, size_t size) {
  static uint8_t buf[1 << 20];
  void *mh = NULL, *req = NULL;
  int r = netload_reg_mr(&s->nl, comm, buf, size, type, &mh);
  CHECK(r == 0, "regMr of type %d: %d", type, r);
  if (r) return r;
  if (s->role == ROLE_SEND) {
    long long end = ms_now() + 20000;
    do r = netload_isend(&s->nl, comm, buf, size, 7, mh, &req);
    while (!r && !req && ms_now() < end);
  } else {
    size_t cap = size;
    int tag = 7;
    void *p = buf;
    r = netload_irecv(&s->nl, comm, 1, &p, &cap, &tag, &mh, &req);
  }
  if (!r && req) r = wait_req(s, req, NULL, 20000);
  netload_dereg_mr(&s->nl, comm, mh);
  return r;
}

/* The sender's first write completes with an injected status; the sender
 * names it with the advice that fits, the receiver hears why. */
static const char *failed_write(struct side *s, const char *inject, int type) {
  if (s->role == ROLE_SEND) setenv("SOFTVERBS_WC_ERROR", inject, 1);
  /* The status comes with the write's completion, at its ACK: were an ACK
   * lost under load, the queue pair would resend after 0.5 s of retries,
   * not 34 s (the default's), and the case stays within its 20 s. */
  setenv("NCCL_IB_TIMEOUT", "14", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return NULL;
  int r = 0; /* the receiver has its first message (the write landed): it fails on a later one */
  for (int i = 0; i < 3 && !r; i++) r = xfer_typed(s, comm, type, 65536);
  CHECK(r == ncclRemoteError, "the %s side ended with %d, expected ncclRemoteError",
        s->role == ROLE_SEND ? "sending" : "receiving", r);
  const char *w = log_find(NCCL_LOG_WARN, s->role == ROLE_SEND ? "completed with" : "ended");
  if (s->role == ROLE_RECV)
    CHECK(w && strstr(w, "sending side ended the connection") && strstr(w, "completed with"),
          "the receiver hears the sender's diagnosis: %s", w ? w : "none");
  CHECK(w && strstr(w, "connection with") && strstr(w, "<"),
        "the peer is named by host and address: %s", w ? w : "none");
  ctl_sync(s);
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
  return w;
}

/* LOC_PROT_ERR on a GPU buffer: PCIe ACS, and how to confirm it. */
void case_ib_loc_prot_gpu(struct side *s) {
  const char *w = failed_write(s, "LOC_PROT_ERR:0", NCCL_PTR_CUDA);
  if (s->role == ROLE_SEND)
    CHECK(w && strstr(w, "IBV_WC_LOC_PROT_ERR") && strstr(w, "(GPU memory)") &&
            strstr(w, "PCIe ACS") && strstr(w, "disable ACS") &&
            strstr(w, "NCCL_NET_GDR_LEVEL=LOC (0)"),
          "GPU memory: ACS, disable it, confirm with NCCL_NET_GDR_LEVEL: %s", w ? w : "none");
  side_close(s);
}

/* LOC_PROT_ERR on a host buffer: the registration, not ACS. */
void case_ib_loc_prot_host(struct side *s) {
  const char *w = failed_write(s, "LOC_PROT_ERR:0", NCCL_PTR_HOST);
  if (s->role == ROLE_SEND)
    CHECK(w && strstr(w, "IBV_WC_LOC_PROT_ERR") && strstr(w, "(host memory)") &&
            strstr(w, "registration") && !strstr(w, "ACS"),
          "host memory: the registration: %s", w ? w : "none");
  side_close(s);
}

/* RETRY_EXC_ERR with NCCL_IB_GID_INDEX forced on both nodes: the failure
 * repeats the GID index advice. The sender is the second node of the
 * fixture, so the two ends are not one NIC of one host (where a forced
 * index could not be the cause). */
void case_ib_retry_forced_gid(struct side *s) {
  if (use_fixture(s, ROLE_SEND, "roce-story5-b")) return;
  setenv("NCCL_IB_GID_INDEX", "3", 1);
  const char *w = failed_write(s, "RETRY_EXC_ERR:0", NCCL_PTR_HOST);
  if (s->role == ROLE_SEND)
    CHECK(w && strstr(w, "IBV_WC_RETRY_EXC_ERR") &&
            strstr(w, "NCCL_IB_GID_INDEX is forced (3 here, 3 on ") &&
            strstr(w, "unset it on every node"),
          "the forced GID index, on both hosts, and the fix: %s", w ? w : "none");
  side_close(s);
}

/* A port that goes down mid-transfer: the write fails before the event
 * thread has read PORT_ERR (softverbs raises none here). The sender asks
 * the port itself, and names it. */
void case_ib_port_down_before_event(struct side *s) {
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_typed(s, comm, NCCL_PTR_HOST, 65536) == 0, "a transfer while the port is up");
  ctl_sync(s);
  if (s->role == ROLE_SEND) {
    setenv("SOFTVERBS_PORT_DOWN", "*", 1);
    setenv("SOFTVERBS_WC_ERROR", "RETRY_EXC_ERR:0", 1);
  }
  int r = 0;
  for (int i = 0; i < 3 && !r; i++) r = xfer_typed(s, comm, NCCL_PTR_HOST, 65536);
  CHECK(r == ncclRemoteError, "the %s side ended with %d, expected ncclRemoteError",
        s->role == ROLE_SEND ? "sending" : "receiving", r);
  if (s->role == ROLE_SEND) {
    const char *w = log_find(NCCL_LOG_WARN, "completed with");
    CHECK(w && strstr(w, "port 1 went down during the transfer") &&
            !strstr(w, "first RDMA write after RTR"),
          "the port is named without its event: %s", w ? w : "none");
    const char *p = log_find(NCCL_LOG_WARN, "port error");
    CHECK(p && strstr(p, "port 1") && log_count(NCCL_LOG_WARN, "port 1: port error") == 1,
          "the port's state is said once, without its event: %s", p ? p : "none");
  }
  ctl_sync(s);
  if (s->role == ROLE_SEND) {
    unsetenv("SOFTVERBS_PORT_DOWN");
    netload_close_send(&s->nl, comm);
  } else netload_close_recv(&s->nl, comm);
  side_close(s);
}

static void *port_down_later(void *arg) {
  (void)arg;
  usleep(300000);
  events_set("down:*");
  return NULL;
}

/* A completion error while the port still answers ACTIVE, its PORT_ERR
 * event 300 ms later (the order of a netdev taken down mid-transfer on
 * rxe): the failure, judged once the event arrives, names the port, not
 * only the completion's status written before it was known. */
void case_ib_port_event_after_error(struct side *s) {
  events_set("");
  setenv("SOFTVERBS_PORT_EVENTS", events_path(), 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_typed(s, comm, NCCL_PTR_HOST, 65536) == 0, "a transfer while the port is up");
  ctl_sync(s);
  pthread_t t;
  if (s->role == ROLE_SEND) {
    setenv("SOFTVERBS_WC_ERROR", "RETRY_EXC_ERR:0", 1);
    CHECK(pthread_create(&t, NULL, port_down_later, NULL) == 0, "a thread");
  }
  int r = 0;
  for (int i = 0; i < 3 && !r; i++) r = xfer_typed(s, comm, NCCL_PTR_HOST, 65536);
  CHECK(r == ncclRemoteError, "the %s side ended with %d, expected ncclRemoteError",
        s->role == ROLE_SEND ? "sending" : "receiving", r);
  if (s->role == ROLE_SEND) {
    pthread_join(t, NULL);
    const char *w = log_find(NCCL_LOG_WARN, "RETRY_EXC_ERR");
    CHECK(w && strstr(w, "port 1 went down during the transfer"),
          "the port is named though its event came after the error: %s", w ? w : "none");
    /* the port's return counts what failed while it was down, not only its
     * time: said for the comm's port ("down:*" takes every port down) */
    char want[64] = "port active";
    const char *dev = w ? strstr(w, "mlx5_") : NULL;
    if (dev)
      snprintf(want, sizeof(want), "device %.*s port 1: port active", (int)strcspn(dev, " "), dev);
    events_set("");
    long long end = ms_now() + 5000;
    while (!log_find(NCCL_LOG_WARN, want) && ms_now() < end) usleep(10000);
    const char *up = log_find(NCCL_LOG_WARN, want);
    CHECK(up && strstr(up, "1 connection of this process on it failed while it was down") &&
            !strstr(up, "survived"),
          "the port's return says a connection failed while it was down: %s", up ? up : "none");
  }
  ctl_sync(s);
  if (s->role == ROLE_SEND) {
    unsetenv("SOFTVERBS_WC_ERROR");
    netload_close_send(&s->nl, comm);
  } else netload_close_recv(&s->nl, comm);
  side_close(s);
  events_set("");
  unlink(events_path());
}

/* A path-MTU black hole: a hop drops packets above 2,048 bytes. A short
 * message and the clear-to-sends pass, a 64 KiB message (4,096-byte
 * packets) never arrives: the sender leads with the path MTU, its size
 * and the check, and the receiver hears it. */
void case_ib_mtu_black_hole(struct side *s) {
  /* 67 ms a try (3 tries): a short write's acknowledgement late by a busy
   * CPU (a sanitizer build, a loaded CI machine) is not taken for a loss */
  setenv("NCCL_IB_TIMEOUT", "14", 1);
  setenv("NCCL_IB_RETRY_CNT", "2", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_typed(s, comm, NCCL_PTR_HOST, 1000) == 0, "a short message passes");
  ctl_sync(s);
  if (s->role == ROLE_SEND) setenv("SOFTVERBS_DROP_ABOVE", "2048", 1);
  int r = xfer_typed(s, comm, NCCL_PTR_HOST, 65536);
  CHECK(r == ncclRemoteError, "the %s side ended with %d, expected ncclRemoteError",
        s->role == ROLE_SEND ? "sending" : "receiving", r);
  const char *w = log_find(NCCL_LOG_WARN, "path-MTU black hole");
  CHECK(w && (s->role == ROLE_RECV || warn_leads_with(w, "path-MTU black hole suspected", 200)),
        "the %s side names the path MTU first: %s", s->role == ROLE_SEND ? "sending" : "receiving",
        w ? w : "none");
  if (s->role == ROLE_SEND)
    CHECK(w && strstr(w, "up to 1000 bytes") && strstr(w, "65536 bytes") &&
            strstr(w, "path MTU (4096 bytes") && strstr(w, "ping -M do -s 4128"),
          "the sizes, the path MTU and the check: %s", w ? w : "none");
  ctl_sync(s);
  if (s->role == ROLE_SEND) {
    unsetenv("SOFTVERBS_DROP_ABOVE");
    netload_close_send(&s->nl, comm);
  } else netload_close_recv(&s->nl, comm);
  side_close(s);
}
