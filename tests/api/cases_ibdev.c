/* SPDX-License-Identifier: Apache-2.0 */
/* What the RDMA device and its host decide (over softverbs, which models
 * them): GPUDirect RDMA through dma-buf alone, fatal device events, fork
 * safety. */
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cases.h"

static void close_comm(struct side *s, void *comm) {
  if (!comm) return;
  if (s->role == ROLE_SEND) netload_close_send(&s->nl, comm);
  else netload_close_recv(&s->nl, comm);
}

/* regMrDmaBuf of the table in use (v6 and later). */
static ncclResult_t reg_dmabuf(struct side *s, void *comm, void *data, size_t size, int fd,
                               void **mh) {
  const struct netload *nl = &s->nl;
  switch (nl->version) {
  case 6: return nl->v6->regMrDmaBuf(comm, data, size, NCCL_PTR_CUDA, 0, fd, mh);
  case 7: return nl->v7->regMrDmaBuf(comm, data, size, NCCL_PTR_CUDA, 0, fd, mh);
  case 8: return nl->v8->regMrDmaBuf(comm, data, size, NCCL_PTR_CUDA, 0, fd, mh);
  case 9: return nl->v9->regMrDmaBuf(comm, data, size, NCCL_PTR_CUDA, 0, fd, mh);
  case 10: return nl->v10->regMrDmaBuf(comm, data, size, NCCL_PTR_CUDA, 0, fd, mh);
  case 11: return nl->v11->regMrDmaBuf(comm, data, size, NCCL_PTR_CUDA, 0, fd, mh);
  case 12: return nl->v12->regMrDmaBuf(comm, data, size, NCCL_PTR_CUDA, 0, fd, mh);
  default: return ncclInvalidUsage;
  }
}

/* A GPU host whose NICs reach GPU memory through dma-buf only (no
 * nvidia_peermem): a receive into GPU memory is followed by a flush read,
 * as NCCL does, unless NCCL_GDR_FLUSH_DISABLE=1. */
static void dmabuf_receive(struct side *s, bool is_flush_expected) {
  if (use_fixture(s, ROLE_RECV, "dgx-h100") || use_fixture(s, ROLE_SEND, "dgx-h100")) return;
  setenv("SOFTVERBS_DMABUF", "1", 1);
  void *comm = NULL;
  if (side_open(s)) return;
  if (s->nl.version < 6) { /* v5 has no dma-buf registration */
    side_close(s);
    return;
  }
  struct netload_props p;
  CHECK(!netload_props(&s->nl, 0, &p) && p.ptr_support == (NCCL_PTR_HOST | NCCL_PTR_DMABUF),
        "dma-buf only: ptrSupport 0x%x", p.ptr_support);
  CHECK(!log_find(NCCL_LOG_WARN, "GPUDirect RDMA is off"), "dma-buf is GPUDirect RDMA: %s",
        log_find(NCCL_LOG_WARN, "GPUDirect RDMA is off"));
  if (pair_open(s, &comm)) return;
  enum { SIZE = 65536, MSG = 50000 };
  int fd = memfd_create("gpu-buffer", 0);
  CHECK(fd >= 0 && ftruncate(fd, SIZE) == 0, "memfd");
  uint8_t *buf = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  void *mh = NULL, *req = NULL;
  CHECK(buf != MAP_FAILED && reg_dmabuf(s, comm, buf, SIZE, fd, &mh) == ncclSuccess && mh,
        "regMrDmaBuf of GPU memory");
  if (s->role == ROLE_SEND) {
    fill_pattern(buf, MSG, 9);
    long long end = ms_now() + 20000;
    int r;
    do r = netload_isend(&s->nl, comm, buf, MSG, 3, mh, &req);
    while (!r && !req && ms_now() < end);
    CHECK(!r && req && wait_req(s, req, NULL, 20000) == 0, "send into GPU memory");
  } else {
    CHECK(log_find(NCCL_LOG_INFO, "flush queue pair") != NULL || !is_flush_expected,
          "the receive connection has no flush queue pair");
    size_t cap = SIZE;
    int tag = 3, got = 0;
    void *data = buf;
    CHECK(netload_irecv(&s->nl, comm, 1, &data, &cap, &tag, &mh, &req) == 0 && req, "irecv");
    CHECK(req && wait_req(s, req, &got, 20000) == 0 && got == MSG, "receive: %d bytes", got);
    CHECK(check_pattern(buf, MSG, 9) == MSG, "received data");
    req = NULL;
    CHECK(netload_iflush(&s->nl, comm, 1, &data, &got, &mh, &req) == 0, "iflush");
    if (is_flush_expected) {
      CHECK(req != NULL, "no flush read after a receive into GPU memory reached through dma-buf");
      if (req) CHECK(wait_req(s, req, NULL, 10000) == 0, "the flush read did not complete");
    } else {
      CHECK(req == NULL, "NCCL_GDR_FLUSH_DISABLE=1, yet a flush was posted");
    }
  }
  ctl_sync(s);
  netload_dereg_mr(&s->nl, comm, mh);
  close_comm(s, comm);
  munmap(buf, SIZE);
  close(fd);
  side_close(s);
}

void case_ib_dmabuf_flush(struct side *s) { dmabuf_receive(s, true); }

/* The mappings of this process's memfd "name" (softverbs maps a dma-buf
 * once per registration, as a NIC pins it once). */
static int maps_of(const char *name) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512], want[96];
  snprintf(want, sizeof(want), "memfd:%s ", name);
  int n = 0;
  while (f && fgets(line, sizeof(line), f)) n += strstr(line, want) != NULL;
  if (f) fclose(f);
  return n;
}

/* NCCL registers a GPU buffer once per connection: dma-buf registrations of
 * one buffer are cached like host ones (NCCL 2.30's reg.cc), so it is
 * pinned once; each handle deregisters on its own. */
void case_ib_dmabuf_cache(struct side *s) {
  if (use_fixture(s, ROLE_RECV, "dgx-h100") || use_fixture(s, ROLE_SEND, "dgx-h100")) return;
  setenv("SOFTVERBS_DMABUF", "1", 1);
  void *comm = NULL;
  if (side_open(s)) return;
  if (s->nl.version < 6) { /* v5 has no dma-buf registration */
    side_close(s);
    return;
  }
  if (pair_open(s, &comm)) return;
  enum { SIZE = 1 << 20 };
  const char *name = s->role == ROLE_SEND ? "gpu-send-buffer" : "gpu-recv-buffer";
  int fd = memfd_create(name, 0);
  CHECK(fd >= 0 && ftruncate(fd, SIZE) == 0, "memfd");
  uint8_t *buf = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  void *mhs[4] = {NULL};
  for (int i = 0; i < 4; i++)
    CHECK(reg_dmabuf(s, comm, buf, SIZE, fd, &mhs[i]) == ncclSuccess && mhs[i],
          "regMrDmaBuf %d of one buffer", i);
  int n = maps_of(name);
  CHECK(n == 2, "4 registrations of one GPU buffer pinned it %d times, expected once", n - 1);
  for (int i = 0; i < 4; i++)
    CHECK(!mhs[i] || netload_dereg_mr(&s->nl, comm, mhs[i]) == ncclSuccess, "deregMr %d", i);
  ctl_sync(s);
  close_comm(s, comm);
  munmap(buf, SIZE);
  close(fd);
  side_close(s);
}

void case_ib_dmabuf_flush_off(struct side *s) {
  setenv("NCCL_GDR_FLUSH_DISABLE", "1", 1);
  dmabuf_receive(s, false);
}

/* softverbs' port and device events: the words of this side's event file
 * (SOFTVERBS_PORT_EVENTS), rewritten whole. */
const char *events_path(void) {
  static char path[128];
  if (!path[0]) snprintf(path, sizeof(path), "/tmp/diag-api-portev-%d", (int)getpid());
  return path;
}

void events_set(const char *words) {
  char tmp[160];
  snprintf(tmp, sizeof(tmp), "%s.tmp", events_path());
  FILE *f = fopen(tmp, "w");
  if (f) fputs(words, f), fclose(f);
  rename(tmp, events_path());
}

/* A fatal device event on the receiver's NIC (DEVICE_FATAL, as after a
 * firmware or PCIe failure): the receiver's next call fails with a WARN
 * naming the device and port; the sender hears why on its next calls. */
void case_ib_device_fatal(struct side *s) {
  events_set("");
  setenv("SOFTVERBS_PORT_EVENTS", events_path(), 1);
  void *comm = NULL;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 70000, 70000, 4) == 0, "transfer before the event");
  ctl_sync(s);
  if (s->role == ROLE_RECV) {
    struct netload_props p;
    netload_props(&s->nl, s->dev, &p);
    char words[96];
    snprintf(words, sizeof(words), "fatal:%s", p.name); /* the device this connection uses */
    events_set(words);
    long long end = ms_now() + 5000;
    while (!log_find(NCCL_LOG_WARN, "fatal device error") && ms_now() < end) usleep(10000);
    const char *w = log_find(NCCL_LOG_WARN, "fatal device error");
    CHECK(w && strstr(w, "device mlx5_") && strstr(w, " port 1") && strstr(w, "dmesg"),
          "the event is named with its device and port when it arrives: %s", w ? w : "none");
  }
  ctl_sync(s);
  long long t0 = ms_now();
  int r = xfer_one(s, comm, 70000, 70000, 5);
  long long took = ms_now() - t0;
  if (s->role == ROLE_RECV) {
    CHECK(r == ncclSystemError, "the receiver's next call: %d, expected ncclSystemError", r);
    const char *w = log_find(NCCL_LOG_WARN, "reported a fatal error");
    CHECK(w && strstr(w, "receive connection with") && strstr(w, "device mlx5_") &&
            strstr(w, " port 1 on ") && strstr(w, "restart the job"),
          "the connection's failure names the device, port, host and fix: %s", w ? w : "none");
  } else {
    CHECK(r == ncclRemoteError || r == ncclSystemError, "the sender's calls: %d", r);
    const char *w = log_find(NCCL_LOG_WARN, "reported a fatal error");
    CHECK(w && strstr(w, "device mlx5_") && strstr(w, "receiving side"),
          "the sender hears the receiver's device failure: %s", w ? w : "none");
  }
  CHECK(took < 15000, "the failure took %lld ms to surface", took);
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
  unlink(events_path());
}

/* On a kernel without copy-on-fork for pinned pages, init makes registered
 * memory fork-safe with ibv_fork_init, as NCCL does: the library then says
 * fork protection is on. */
void case_ib_fork_init(struct side *s) {
  setenv("SOFTVERBS_FORK", "needed", 1);
  if (side_open(s)) return;
  const char *lib = getenv("NCCL_DIAG_IBVERBS_LIB");
  void *dl = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
  enum ibv_fork_status (*status)(void) =
    dl ? (enum ibv_fork_status(*)(void))dlsym(dl, "ibv_is_fork_initialized") : NULL;
  CHECK(status, "the verbs library the plugin loaded (%s) is not in the process", lib);
  if (status)
    CHECK(status() == IBV_FORK_ENABLED, "fork protection is %d after init, expected ENABLED (%d)",
          (int)status(), (int)IBV_FORK_ENABLED);
  CHECK(log_find(NCCL_LOG_INFO, "fork protection on"), "init says fork protection is on");
  if (dl) dlclose(dl);
  side_close(s);
}

/* Where the kernel keeps registered memory safe across fork (Linux 5.13+),
 * nothing is called or said. */
void case_ib_fork_unneeded(struct side *s) {
  if (side_open(s)) return;
  CHECK(!log_find(NCCL_LOG_INFO, "fork protection"), "nothing to say: %s",
        log_find(NCCL_LOG_INFO, "fork protection"));
  side_close(s);
}

/* PCIe relaxed ordering, as NCCL asks for it on its buffers' registrations
 * (NCCL_IB_PCI_RELAXED_ORDERING, default 2): on the receiver a kernel that
 * refuses the flag gets the registration without it, said once; the
 * sender has it off (0), so nothing is refused there. */
void case_ib_relaxed_ordering(struct side *s) {
  setenv("SOFTVERBS_NO_RELAXED_ORDERING", "1", 1);
  if (s->role == ROLE_SEND) setenv("NCCL_IB_PCI_RELAXED_ORDERING", "0", 1);
  void *comm = NULL;
  if (side_open(s) || pair_open(s, &comm)) return;
  for (unsigned i = 0; i < 3; i++)
    CHECK(xfer_one(s, comm, 100000 + i, 200000, i) == 0, "transfer %u", i);
  if (s->role == ROLE_RECV) {
    const char *l = log_find(NCCL_LOG_INFO, "relaxed ordering");
    CHECK(l && strstr(l, "refuses PCIe relaxed ordering") && strstr(l, "Invalid argument") &&
            strstr(l, "NCCL_IB_PCI_RELAXED_ORDERING=0"),
          "the refusal is named with its errno and the knob: %s", l ? l : "none");
    CHECK(log_count(NCCL_LOG_INFO, "relaxed ordering") == 1, "said once, not per registration");
  } else {
    CHECK(!log_find(NCCL_LOG_INFO, "relaxed ordering"),
          "NCCL_IB_PCI_RELAXED_ORDERING=0 asks for nothing: %s",
          log_find(NCCL_LOG_INFO, "relaxed ordering"));
  }
  CHECK(!log_find(NCCL_LOG_WARN, "registration"), "no registration failed: %s",
        log_find(NCCL_LOG_WARN, "registration"));
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* ECE on by default (NCCL_IB_ECE_ENABLE=1) over devices without it
 * (softverbs answers EOPNOTSUPP, as libibverbs without a provider that
 * has it): the connection is RDMA and nothing is said. */
void case_ib_ece_unsupported(struct side *s) {
  void *comm = NULL;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 30000, 30000, 6) == 0, "transfer");
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 1 queue pair"), "the connection is RDMA");
  CHECK(!log_find(NCCL_LOG_INFO, "connection establishment") &&
          !log_find(NCCL_LOG_WARN, "connection establishment") && !log_find(NCCL_LOG_WARN, "ece"),
        "nothing said about ECE: %s", log_find(NCCL_LOG_INFO, "connection establishment"));
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* Both NICs offer ECE (the receiver options 0x3, the sender 0x5), as
 * NCCL's IB transport negotiates it: the acceptor's queue pairs are given
 * the connector's offer and settle on what both support (0x1), which the
 * acceptor returns; the connector's queue pairs are given that settled
 * set, not the acceptor's whole offer. With only one side offering it,
 * nothing is set. */
static void ece_pair(struct side *s, const char *recv_opts, const char *send_opts,
                     const char *settled) {
  const char *mine = s->role == ROLE_RECV ? recv_opts : send_opts;
  const char *theirs = s->role == ROLE_RECV ? send_opts : recv_opts;
  if (mine) setenv("SOFTVERBS_ECE", mine, 1);
  void *comm = NULL;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 30000, 30000, 7) == 0, "transfer");
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 1 queue pair"), "the connection is RDMA");
  char want[64];
  const char *l = log_find(NCCL_LOG_INFO, "enhanced connection establishment with the");
  if (mine && theirs && s->role == ROLE_RECV) {
    snprintf(want, sizeof(want), "(vendor 0x2c9, options %s)", theirs);
    CHECK(l && strstr(l, "with the peer's options") && strstr(l, want) && strstr(l, " qp 0x"),
          "acceptor: the connector's offer %s given: %s", want, l ? l : "none");
    snprintf(want, sizeof(want), "settled on options %s", settled);
    const char *t = log_find(NCCL_LOG_INFO, "settled on options");
    CHECK(t && strstr(t, want), "acceptor: %s returned: %s", want, t ? t : "none");
  } else if (mine && theirs) {
    snprintf(want, sizeof(want), "(vendor 0x2c9, options %s)", settled);
    CHECK(l && strstr(l, "settled on") && strstr(l, want) && strstr(l, " qp 0x"),
          "connector: the acceptor's settled options %s given, not its offer %s: %s", want, theirs,
          l ? l : "none");
  } else {
    CHECK(!l, "one side without ECE: nothing set: %s", l);
  }
  CHECK(!log_find(NCCL_LOG_INFO, "are refused"), "%s", log_find(NCCL_LOG_INFO, "are refused"));
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

void case_ib_ece_both(struct side *s) { ece_pair(s, "0x3", "0x5", "0x1"); }
void case_ib_ece_disjoint(struct side *s) { ece_pair(s, "0x2", "0x5", "0x0"); }
void case_ib_ece_one(struct side *s) { ece_pair(s, "0x3", NULL, NULL); }

/* InfiniBand with the subnet manager's MTU at 2048 on the receiver's port
 * (sysfs does not show it; verbs do): both sides run RTR at the smaller
 * of the two ports' active MTUs, and the difference is named. */
void case_ib_active_mtu(struct side *s) {
  if (use_fixture(s, ROLE_RECV, "ib-hdr") || use_fixture(s, ROLE_SEND, "ib-hdr-b")) return;
  if (s->role == ROLE_RECV) setenv("SOFTVERBS_ACTIVE_MTU", "*:2048", 1);
  void *comm = NULL;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 300000, 300000, 8) == 0, "transfer");
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 1 queue pair"), "the connection is RDMA");
  const char *r = log_find(NCCL_LOG_INFO, "INIT -> RTR");
  CHECK(r && strstr(r, "path_mtu 2048") && strstr(r, "dlid "),
        "RTR at the smaller active MTU, by LID (one subnet, no GRH): %s", r ? r : "none");
  if (s->role == ROLE_RECV) {
    const char *l = log_find(NCCL_LOG_INFO, "active MTU");
    CHECK(l && strstr(l, "active MTU 2048"), "the port's MTU is read from verbs: %s",
          l ? l : "none");
  }
  const char *w = log_find(NCCL_LOG_WARN, "MTU");
  CHECK(w && strstr(w, "2048") && strstr(w, "4096") && strstr(w, "uses 2048"),
        "the two MTUs named: %s", w ? w : "none");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* NCCL_IB_SL and NCCL_IB_TC as NCCL applies them: the connecting side's
 * values set both sides' queue pairs (its metadata carries them, the
 * receiver adopts them), so a value set on the sending node alone still
 * takes effect on the path, in both directions. */
void case_ib_sl_tc(struct side *s) {
  if (s->role == ROLE_SEND) setenv("NCCL_IB_SL", "3", 1), setenv("NCCL_IB_TC", "106", 1);
  void *comm = NULL;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 30000, 30000, 9) == 0, "transfer");
  const char *r = log_find(NCCL_LOG_INFO, "INIT -> RTR");
  CHECK(r && strstr(r, "traffic_class 106") && strstr(r, "sl 3"),
        "the sender's SL and traffic class on this side's queue pair: %s", r ? r : "none");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* NCCL_IB_FIFO_TC on the receiving side: its queue pairs (the
 * clear-to-send writes) take that class, the sender's keep NCCL_IB_TC. */
void case_ib_fifo_tc(struct side *s) {
  setenv("NCCL_IB_FIFO_TC", "96", 1);
  setenv("NCCL_IB_TC", "106", 1);
  void *comm = NULL;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 30000, 30000, 14) == 0, "transfer");
  const char *r = log_find(NCCL_LOG_INFO, "INIT -> RTR");
  const char *want = s->role == ROLE_RECV ? "traffic_class 96" : "traffic_class 106";
  CHECK(r && strstr(r, want), "%s on the %s side: %s", want,
        s->role == ROLE_RECV ? "receiving" : "sending", r ? r : "none");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* An RTR that times out the first three times (a neighbour slow to
 * answer), with NCCL's retry budget: named at the first failure, then the
 * connection comes up over RDMA. */
void case_ib_rtr_retry_recovers(struct side *s) {
  if (s->role == ROLE_RECV) setenv("SOFTVERBS_FAIL_MODIFY", "RTR:ETIMEDOUT:*:3", 1);
  void *comm = NULL;
  if (side_open(s)) return;
  long long t0 = ms_now();
  if (pair_open(s, &comm)) return;
  long long took = ms_now() - t0;
  CHECK(log_find(NCCL_LOG_INFO, "RDMA, 1 queue pair"), "the connection is RDMA after the retries");
  if (s->role == ROLE_RECV) {
    const char *w = log_find(NCCL_LOG_WARN, "Retrying for up to");
    CHECK(w && strstr(w, "RTR of qp 0x") && strstr(w, "ETIMEDOUT") &&
            strstr(w, "NCCL_IB_MQP_RETRY_CNT=34") && strstr(w, "NCCL_IB_MQP_RETRY_CNT=0"),
          "the first failure named with its diagnosis and the budget: %s", w ? w : "none");
    const char *i = log_find(NCCL_LOG_INFO, "RTR succeeded after 3 retries");
    CHECK(i, "the recovery is said");
    CHECK(took >= 500 && took < 10000, "three retries wait 100+200+300 ms: %lld ms", took);
  }
  CHECK(!log_find(NCCL_LOG_WARN, "RDMA path from") || log_find(NCCL_LOG_WARN, "Retrying"),
        "no fallback: %s", log_find(NCCL_LOG_WARN, "carries on over TCP"));
  CHECK(xfer_one(s, comm, 100000, 100000, 10) == 0, "transfer");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* An RTR that always times out, with a budget of 5 retries (1.5 s of
 * waits): the cause is named within a second, the fall back to TCP comes
 * only when the budget is spent, on both sides. */
void case_ib_rtr_retry_spent(struct side *s) {
  if (s->role == ROLE_RECV) setenv("SOFTVERBS_FAIL_MODIFY", "RTR:ETIMEDOUT", 1);
  setenv("NCCL_IB_MQP_RETRY_CNT", "5", 1);
  void *comm = NULL;
  if (side_open(s)) return;
  if (s->role == ROLE_SEND) {
    long long t0 = ms_now();
    if (pair_send(s, &comm)) return;
    long long took = ms_now() - t0;
    const char *w = log_find(NCCL_LOG_WARN, "RDMA path from");
    CHECK(w && strstr(w, "reported by the peer") && strstr(w, "after 5 retries") &&
            strstr(w, "over TCP"),
          "the sender hears the verdict after the budget: %s", w ? w : "none");
    CHECK(took >= 1400, "the fall back waited for the budget: %lld ms", took);
  } else {
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    void *lc = NULL;
    CHECK(netload_listen(&s->nl, s->dev, handle, &lc) == 0 && lc, "listen");
    ctl_send_int(s, 0);
    ctl_send(s, handle, sizeof(handle));
    long long t0 = ms_now(), named = -1, end = t0 + 30000;
    int r = 0;
    while (!comm && !r && ms_now() < end) {
      r = netload_accept(&s->nl, lc, &comm);
      if (named < 0 && log_find(NCCL_LOG_WARN, "Retrying for up to")) named = ms_now() - t0;
      if (!comm) usleep(1000);
    }
    long long took = ms_now() - t0;
    CHECK(!r && comm, "accept: %d", r);
    CHECK(named >= 0 && named < 1000, "the cause is named %lld ms after accept began", named);
    CHECK(took >= 1400, "the fall back waited for the budget: %lld ms", took);
    const char *w = log_find(NCCL_LOG_WARN, "carries on over TCP");
    CHECK(w && strstr(w, "ETIMEDOUT") && strstr(w, "after 5 retries over"),
          "the verdict names the cause and the retries: %s", w ? w : "none");
    netload_close_listen(&s->nl, lc);
  }
  if (comm) CHECK(xfer_one(s, comm, 100000, 100000, 11) == 0, "transfer over TCP");
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
}

/* A port that goes down and comes back (a link flap) is said with its
 * device and port, and connections carry on, as in NCCL: PORT_ERR is not
 * fatal (a link back within the QP timeout loses nothing). With
 * NCCL_IB_RETURN_ASYNC_EVENTS=0 a fatal device event is only logged. */
void case_ib_port_flap(struct side *s) {
  events_set("");
  setenv("SOFTVERBS_PORT_EVENTS", events_path(), 1);
  if (s->role == ROLE_RECV) setenv("NCCL_IB_RETURN_ASYNC_EVENTS", "0", 1);
  void *comm = NULL;
  if (side_open(s) || pair_open(s, &comm)) return;
  CHECK(xfer_one(s, comm, 70000, 70000, 12) == 0, "transfer before the events");
  if (s->role == ROLE_RECV) {
    events_set("down:*");
    long long end = ms_now() + 5000;
    while (!log_find(NCCL_LOG_WARN, "port error") && ms_now() < end) usleep(10000);
    events_set("");
    while (!log_find(NCCL_LOG_WARN, "port active") && ms_now() < end) usleep(10000);
    events_set("fatal:*");
    while (!log_find(NCCL_LOG_WARN, "fatal device error") && ms_now() < end) usleep(10000);
    const char *w = log_find(NCCL_LOG_WARN, "port error");
    CHECK(w && strstr(w, "device mlx5_") && strstr(w, "port 1") && strstr(w, "link went down"),
          "the port error names the device and port: %s", w ? w : "none");
    const char *up = log_find(NCCL_LOG_WARN, "port active");
    CHECK(up && strstr(up, "device mlx5_") &&
            strstr(up, "s down, within its queue pairs' "
                       "deadline of 34.4 s (NCCL_IB_TIMEOUT=20, "
                       "NCCL_IB_RETRY_CNT=7)") &&
            strstr(up, "no connection of this process on it failed: its connections survived"),
          "the port's return is said with how long it was down against the QPs' deadline: %s",
          up ? up : "none");
    CHECK(log_find(NCCL_LOG_WARN, "fatal device error"), "the fatal event is logged");
  }
  ctl_sync(s);
  CHECK(xfer_one(s, comm, 70000, 70000, 13) == 0, "the connection carries on");
  CHECK(!log_find(NCCL_LOG_WARN, "reported a fatal error"), "no connection failed: %s",
        log_find(NCCL_LOG_WARN, "reported a fatal error"));
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
  unlink(events_path());
}

/* A flap longer than the QPs' deadline: with NCCL_IB_TIMEOUT=1 and
 * NCCL_IB_RETRY_CNT=0 (about 8 us) any flap is, and the port's return says
 * so with the setting that would have ridden it out. */
void case_ib_port_flap_long(struct side *s) {
  events_set("");
  setenv("SOFTVERBS_PORT_EVENTS", events_path(), 1);
  if (s->role == ROLE_RECV) setenv("NCCL_IB_TIMEOUT", "1", 1), setenv("NCCL_IB_RETRY_CNT", "0", 1);
  void *comm = NULL;
  if (side_open(s) || pair_open(s, &comm)) return;
  ctl_sync(s); /* no transfer: an 8 us deadline is too short even for a live link */
  if (s->role == ROLE_RECV) {
    events_set("down:*");
    long long end = ms_now() + 5000;
    while (!log_find(NCCL_LOG_WARN, "port error") && ms_now() < end) usleep(10000);
    usleep(200000);
    events_set("");
    while (!log_find(NCCL_LOG_WARN, "port active") && ms_now() < end) usleep(10000);
    const char *up = log_find(NCCL_LOG_WARN, "port active");
    CHECK(up &&
            strstr(up, "longer than its queue pairs' deadline of 0.0 s (NCCL_IB_TIMEOUT=1, "
                       "NCCL_IB_RETRY_CNT=0)") &&
            strstr(up, "no connection of this process on it failed while it was down (a "
                       "connection that sent into the dead link") &&
            strstr(up, "retry-exceeded") && strstr(up, "set NCCL_IB_TIMEOUT=1"),
          "a flap past the deadline is said with the fix: %s", up ? up : "none");
  }
  ctl_sync(s);
  close_comm(s, comm);
  side_close(s);
  unlink(events_path());
}
