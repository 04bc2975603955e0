/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA transport (over softverbs): QP transition logging, grouped
 * receives, several queue pairs, flush, and field story 5. */
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

static int file_has(const char *path, const char *a, const char *b) {
  FILE *f = fopen(path, "r");
  char line[8192];
  int found = 0;
  while (f && !found && fgets(line, sizeof(line), f)) found = strstr(line, a) && strstr(line, b);
  if (f) fclose(f);
  return found;
}

void case_ib_qp_log(struct side *s) {
  char path[128];
  snprintf(path, sizeof(path), "/tmp/diag-api-events-%d.jsonl", (int)getpid());
  setenv("NCCL_DIAG_LOG_FILE", path, 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 300000, 300000, 2) == 0, "transfer over RDMA");
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 1 queue pair"), "the connection is not RDMA");
  static const char *const steps[][2] = {
    {"RESET -> INIT", "pkey_index"}, {"INIT -> RTR", "dest_qp"}, {"RTR -> RTS", "retry_cnt"}};
  for (int i = 0; i < 3; i++) {
    const char *l = log_find(NCCL_LOG_INFO, steps[i][0]);
    CHECK(l && strstr(l, steps[i][1]) && strstr(l, " us: ok") && strstr(l, " qp 0x") &&
            strstr(l, " port 1"),
          "no %s line with device, port, qp, attributes, time and result: %s", steps[i][0],
          l ? l : "none");
  }
  side_close(s); /* writes the census */
  CHECK(file_has(path, "\"event\":\"qp_transition\"", "\"from\":\"INIT\",\"to\":\"RTR\""),
        "no INIT->RTR event in %s", path);
  CHECK(file_has(path, "\"to\":\"RTS\"", "\"us\":"), "no RTS event with a duration in %s", path);
  CHECK(file_has(path, "\"event\":\"handshake\"", "\"peer_host\""), "no handshake event in %s",
        path);
  if (s->nl.version == 11) /* finalize of the last communicator closes the census */
    CHECK(file_has(path, "\"event\":\"census\"", "\"comms_ib\":1"), "no census in %s", path);
  ctl_sync(s);
  close_comm(s, comm);
  unlink(path);
}

/* One irecv of n buffers; the sends arrive in another tag order and each
 * lands in the buffer posted with its tag. */
static void grouped(struct side *s, void *comm, int n, unsigned seed) {
  enum { CAP = 200000 };
  uint8_t *buf = malloc((size_t)n * CAP);
  void *mh, *data[8], *mhs[8], *req[8] = {0};
  size_t caps[8];
  int tags[8], sizes[8];
  netload_reg_mr(&s->nl, comm, buf, (size_t)n * CAP, NCCL_PTR_HOST, &mh);
  for (int i = 0; i < n; i++) {
    data[i] = buf + (size_t)i * CAP, mhs[i] = mh, caps[i] = CAP, tags[i] = 100 + i;
    sizes[i] = (int)((i * 37003 + seed * 11) % CAP) * (i % 3 != 1); /* some are empty */
  }
  if (s->role == ROLE_RECV) {
    int r = netload_irecv(&s->nl, comm, n, data, caps, tags, mhs, &req[0]);
    CHECK(r == 0 && req[0], "irecv of %d buffers: %d", n, r);
    int got[8] = {0};
    CHECK(wait_req_sizes(s, req[0], got, n, 20000) == 0, "grouped receive not done");
    for (int i = 0; i < n; i++) {
      CHECK(got[i] == sizes[i], "buffer %d (tag %d): %d bytes, expected %d", i, tags[i], got[i],
            sizes[i]);
      CHECK(check_pattern(data[i], (size_t)sizes[i], seed + (unsigned)tags[i]) == (size_t)sizes[i],
            "buffer %d holds the wrong data", i);
    }
  } else {
    for (int k = 0; k < n; k++) {
      int i = n - 1 - k; /* the reverse of the receiver's order */
      fill_pattern(data[i], (size_t)sizes[i], seed + (unsigned)tags[i]);
      long long end = ms_now() + 20000;
      int r;
      do r = netload_isend(&s->nl, comm, data[i], (size_t)sizes[i], tags[i], mh, &req[k]);
      while (!r && !req[k] && ms_now() < end);
      CHECK(r == 0 && req[k], "isend tag %d: %d", tags[i], r);
    }
    for (int k = 0; k < n; k++)
      if (req[k]) CHECK(wait_req(s, req[k], NULL, 20000) == 0, "send %d not done", k);
  }
  netload_dereg_mr(&s->nl, comm, mh);
  free(buf);
}

void case_ib_grouped(struct side *s) {
  void *comm;
  if (side_open(s)) return;
  struct netload_props p;
  netload_props(&s->nl, 0, &p);
  CHECK(p.max_recvs == 8, "an RDMA device reports maxRecvs %d, expected 8", p.max_recvs);
  if (pair_open(s, &comm)) return;
  for (unsigned k = 0; k < 6; k++) grouped(s, comm, (int)(2 + k % 7), k);
  grouped(s, comm, 8, 99);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

void case_ib_qps(struct side *s) {
  setenv("NCCL_IB_QPS_PER_CONNECTION", "4", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 4 queue pairs"), "not 4 queue pairs");
  for (unsigned i = 0; i < 12; i++)
    CHECK(xfer_one(s, comm, (size_t)i * 90001, 1 << 20, i) == 0, "transfer %u", i);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* Above the 32 queue pairs a connection carries here (NCCL's IB transport
 * takes 128): one WARN naming the setting and the limit, then 32. */
void case_ib_qps_over(struct side *s) {
  setenv("NCCL_IB_QPS_PER_CONNECTION", "40", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  if (s->role == ROLE_SEND) {
    CHECK(log_count(NCCL_LOG_WARN, "NCCL_IB_QPS_PER_CONNECTION=40") == 1,
          "%d WARNs name NCCL_IB_QPS_PER_CONNECTION=40, expected one",
          log_count(NCCL_LOG_WARN, "NCCL_IB_QPS_PER_CONNECTION=40"));
    const char *w = log_find(NCCL_LOG_WARN, "NCCL_IB_QPS_PER_CONNECTION=40");
    CHECK(w && strstr(w, "at most 32") && strstr(w, "32 or less"), "the WARN: %s", w ? w : "none");
  }
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 32 queue pairs"), "not 32 queue pairs");
  for (unsigned i = 0; i < 4; i++)
    CHECK(xfer_one(s, comm, (size_t)i * 90001, 1 << 20, i) == 0, "transfer %u", i);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

void case_ib_flush(struct side *s) {
  setenv("NCCL_DIAG_FORCE_FLUSH", "1", 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  if (s->role == ROLE_RECV) {
    CHECK(log_find(NCCL_LOG_INFO, "flush queue pair"), "no flush queue pair");
    uint8_t *buf = malloc(4096);
    void *mh, *req = NULL;
    netload_reg_mr(&s->nl, comm, buf, 4096, NCCL_PTR_HOST, &mh);
    int sz = 4096;
    CHECK(netload_iflush(&s->nl, comm, 1, (void **)&buf, &sz, &mh, &req) == 0 && req,
          "iflush gave no request");
    if (req) CHECK(wait_req(s, req, NULL, 10000) == 0, "the flush read did not complete");
    sz = 0;
    req = (void *)1;
    CHECK(netload_iflush(&s->nl, comm, 1, (void **)&buf, &sz, &mh, &req) == 0 && !req,
          "an empty receive needs no flush: request %p", req);
    netload_dereg_mr(&s->nl, comm, mh);
    free(buf);
  }
  CHECK(xfer_one(s, comm, 5000, 5000, 1) == 0, "transfer after flushes");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* Field story 5 on two hosts: one side uses an RDMA-plane port, the other
 * the storage-plane mlx5_bond_0. */
static void story5_env(struct side *s, const char *fallback) {
  if (is_root()) private_uts(s->role == ROLE_RECV ? "host-a" : "host-b");
  setenv("NCCL_IB_HCA", s->role == ROLE_RECV ? "=mlx5_bond_0" : "=mlx5_4", 1);
  setenv("NCCL_DIAG_FALLBACK", fallback, 1);
  setenv("NCCL_IB_MQP_RETRY_CNT", "1", 1); /* RTR never succeeds here: one retry, not a minute */
}

/* The kernel would reach a GID on another subnet of the same L2 segment, so
 * the pair is named as a risk before RTR; RTR then times out (the planes
 * are separate segments) and the failure leads with its cause (host-a's
 * layout sets mlx5_bond_0 apart) and the fix, then both GIDs and both
 * subnets. */
static void story5_diagnosis(void) {
  const char *risk = log_find(NCCL_LOG_WARN, "may fail unless the fabric routes or bridges");
  CHECK(risk && strstr(risk, "::ffff:10.1.4.") && strstr(risk, "::ffff:10.0.0."),
        "the subnet risk must be named before RTR, with both GIDs: %s", risk ? risk : "none");
  const char *w = log_find(NCCL_LOG_WARN, "RDMA path from");
  CHECK(w, "no diagnosis of the RDMA path");
  if (!w) return;
  CHECK(strstr(w, "::ffff:10.1.4.") && strstr(w, "::ffff:10.0.0."), "both GIDs must be named: %s",
        w);
  CHECK(strstr(w, "10.1.4.0/24") && strstr(w, "10.0.0.0/24"), "both subnets must be named: %s", w);
  CHECK(warn_leads_with(w, "mlx5_bond_0 on host-a is set apart by its host's layout", 200) &&
          strstr(w, "ETIMEDOUT"),
        "the device of another plane first (host-a's layout says so), and RTR's answer: %s", w);
  CHECK(strstr(w, "NCCL_IB_HCA=^mlx5_bond_0") && !strstr(w, "Likely causes"),
        "the fix, without the generic causes: %s", w);
}

void case_story5_fallback(struct side *s) {
  story5_env(s, "auto");
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  story5_diagnosis();
  CHECK(log_find(NCCL_LOG_WARN, "carries on over TCP"), "the fallback is not said");
  CHECK(log_find(NCCL_LOG_INFO, "connection with") && log_find(NCCL_LOG_INFO, ": TCP,"),
        "the connection is not TCP");
  for (unsigned i = 0; i < 4; i++)
    CHECK(xfer_one(s, comm, (size_t)1 << (12 + 3 * i), 1 << 22, i) == 0, "transfer %u over TCP", i);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

void case_story5_off(struct side *s) {
  story5_env(s, "off");
  if (side_open(s)) return;
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *comm = NULL, *lc = NULL;
  int r = 0;
  long long end = ms_now() + 30000;
  if (s->role == ROLE_RECV) {
    netload_listen(&s->nl, s->dev, handle, &lc);
    ctl_send(s, handle, sizeof(handle));
    while (!comm && !r && ms_now() < end) r = netload_accept(&s->nl, lc, &comm);
    netload_close_listen(&s->nl, lc);
  } else {
    ctl_recv(s, handle, sizeof(handle));
    while (!comm && !r && ms_now() < end) r = netload_connect(&s->nl, s->dev, handle, &comm);
  }
  CHECK(r == ncclSystemError && !comm, "with fallback off the connection must fail: %d, %p", r,
        comm);
  CHECK(ms_now() < end, "the failure took too long");
  story5_diagnosis();
  CHECK(log_find(NCCL_LOG_WARN, "NCCL_DIAG_FALLBACK=off"), "the policy is not named");
  ctl_sync(s);
  side_close(s);
}

/* The sender's side reads another fixture host (same namespace, softverbs
 * over loopback): the pair then differs in what that host has. */
static int use_host(struct side *s, int role, const char *host) {
  const char *root = getenv("NCCL_DIAG_SYSFS_ROOT");
  const char *at = root ? strstr(root, "/roce-story5/") : NULL;
  if (!at) {
    CHECK(0, "NCCL_DIAG_SYSFS_ROOT is not the roce-story5 fixture: %s", root ? root : "unset");
    return -1;
  }
  if (s->role != role) return 0;
  char base[4096], p[4200];
  snprintf(base, sizeof(base), "%.*s/%s", (int)(at - root), root, host);
  snprintf(p, sizeof(p), "%s/sysfs", base);
  setenv("NCCL_DIAG_SYSFS_ROOT", p, 1);
  snprintf(p, sizeof(p), "%s/topo.xml", base);
  setenv("HWLOC_XMLFILE", p, 1);
  return 0;
}

/* RoCE against InfiniBand: named before any QP leaves INIT, then TCP. */
void case_ib_ll_mismatch(struct side *s) {
  if (use_host(s, ROLE_SEND, "ib-hdr")) return;
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *w = log_find(NCCL_LOG_WARN, "RDMA path from");
  CHECK(w && strstr(w, "InfiniBand") && strstr(w, "RoCE") && strstr(w, "NCCL_IB_HCA"),
        "the link-layer mismatch must be named with both values and the fix: %s", w ? w : "none");
  CHECK(!log_find(NCCL_LOG_INFO, "INIT -> RTR"), "RTR was attempted for an IB/RoCE pair");
  CHECK(xfer_one(s, comm, 1 << 20, 1 << 20, 3) == 0, "transfer over the TCP fallback");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* Different MTUs: both values named, the path uses the smaller on both sides. */
void case_ib_mtu_mismatch(struct side *s) {
  if (use_host(s, ROLE_SEND, "container-partial-gids")) return;
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  const char *w = log_find(NCCL_LOG_WARN, "MTU");
  CHECK(w && strstr(w, "4096") && strstr(w, "1024") && strstr(w, "uses 1024"),
        "the MTU mismatch must be named with both values: %s", w ? w : "none");
  const char *r = log_find(NCCL_LOG_INFO, "INIT -> RTR");
  CHECK(r && strstr(r, "path_mtu 1024"), "RTR must use the smaller MTU: %s", r ? r : "none");
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 1 queue pair"), "the connection must stay RDMA");
  CHECK(xfer_one(s, comm, 3 << 20, 3 << 20, 4) == 0, "transfer at the smaller MTU");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* A completion error, injected by softverbs on the sender's n-th send:
 * the sender names the status and its likely cause, the receiver hears it. */
static void wc_error(struct side *s, const char *inject, const char *status, const char *cause,
                     int first_after_rtr) {
  if (s->role == ROLE_SEND) setenv("SOFTVERBS_WC_ERROR", inject, 1);
  void *comm;
  if (side_open(s) || pair_open(s, &comm)) return;
  int r = 0;
  for (unsigned i = 0; i < 4 && !r; i++) r = xfer_one(s, comm, 200000, 200000, i);
  CHECK(r == ncclRemoteError, "the %s side ended with %d, expected ncclRemoteError",
        s->role == ROLE_SEND ? "sending" : "receiving", r);
  const char *w = log_find(NCCL_LOG_WARN, status);
  CHECK(w && strstr(w, cause), "the WARN must name %s and its cause (%s): %s", status, cause,
        w ? w : "none");
  if (s->role == ROLE_RECV)
    CHECK(w && strstr(w, "sending side ended the connection"), "the receiver must hear the reason");
  /* Both ends are one NIC of this host: that is the cause, said first on
   * both sides; the commands that confirm the path go to the INFO line. */
  if (first_after_rtr) {
    CHECK(w && strstr(w, "first RDMA write after RTR") && warn_leads_with(w, "same host", 200),
          "a first-write failure on one NIC of one host says so first: %s", w ? w : "none");
    CHECK(w && strstr(w, "NCCL_NET_DISABLE_INTRA=1") && !strstr(w, "ib_write_bw"),
          "the fix in the WARN, the commands that confirm the path elsewhere: %s", w ? w : "none");
  }
  if (s->role == ROLE_SEND && first_after_rtr) {
    const char *i = log_find(NCCL_LOG_INFO, "the path: local GID");
    CHECK(i && strstr(i, "ib_write_bw -d"), "how to confirm the path, in the INFO line: %s",
          i ? i : "none");
  }
  if (s->role == ROLE_SEND && !first_after_rtr)
    CHECK(w && !strstr(w, "first RDMA write after RTR"), "not the first write: %s", w ? w : "none");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

void case_ib_retry_exc(struct side *s) {
  wc_error(s, "RETRY_EXC_ERR:0", "IBV_WC_RETRY_EXC_ERR", "never acknowledged", 1);
}

void case_ib_rem_access(struct side *s) {
  wc_error(s, "REM_ACCESS_ERR:2", "IBV_WC_REM_ACCESS_ERR", "rkey", 0);
}
