/* SPDX-License-Identifier: Apache-2.0 */
/* ABI shape, init, properties, knobs, misuse: what NCCL relies on before
 * any data moves. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"

/* Every slot the spec says must be NULL is NULL, and init never fails.
 * v5 and v6 have no device-offload slots at all; v5 has no regMrDmaBuf. */
static void check_struct_slots(struct side *s) {
  struct netload *nl = &s->nl;
  CHECK(!strcmp(netload_name(nl), "diag"), "network name is \"%s\", NCCL_NET=diag needs \"diag\"",
        netload_name(nl));
  switch (nl->version) {
  case 5: CHECK(nl->v5->regMr && nl->v5->deregMr && nl->v5->iflush, "v5 slots missing"); break;
  case 6: CHECK(nl->v6->regMrDmaBuf && nl->v6->iflush, "v6 regMrDmaBuf/iflush missing"); break;
  case 7:
    CHECK(!nl->v7->getDeviceMr && !nl->v7->irecvConsumed, "v7 getDeviceMr/irecvConsumed not NULL");
    break;
  case 8:
    CHECK(!nl->v8->getDeviceMr && !nl->v8->irecvConsumed, "v8 getDeviceMr/irecvConsumed not NULL");
    break;
  case 9:
    CHECK(!nl->v9->getDeviceMr && !nl->v9->irecvConsumed && nl->v9->makeVDevice,
          "v9 getDeviceMr/irecvConsumed must be NULL, makeVDevice set");
    break;
  case 10:
    CHECK(!nl->v10->getDeviceMr && !nl->v10->irecvConsumed && nl->v10->makeVDevice,
          "v10 getDeviceMr/irecvConsumed must be NULL, makeVDevice set");
    break;
  case 11:
    CHECK(!nl->v11->getDeviceMr && !nl->v11->irecvConsumed && nl->v11->makeVDevice &&
            !nl->v11->setNetAttr && nl->v11->finalize,
          "v11 slots: getDeviceMr/irecvConsumed/setNetAttr must be NULL, makeVDevice and "
          "finalize set");
    break;
  default:
    CHECK(!nl->v12->getDeviceMr && !nl->v12->irecvConsumed && nl->v12->makeVDevice &&
            !nl->v12->setNetAttr && nl->v12->finalize,
          "v12 slots: getDeviceMr/irecvConsumed/setNetAttr must be NULL, makeVDevice and "
          "finalize set");
  }
}

/* The size limits each table reports: v5-v8 have no fields, so NCCL's
 * assumption; v9 and later say what the plugin takes (1 GiB per message).
 * v12's rail and plane ids are "unknown" (NCCL_NET_ID_UNDEF), and v5 cannot
 * advertise dma-buf (it has no slot for it). */
static void check_props_per_table(struct side *s, const struct netload_props *p) {
  int v = s->nl.version;
  if (v <= 8)
    CHECK(p->limits_assumed && p->max_p2p_bytes == MAX_NET_SIZE &&
            p->max_coll_bytes == MAX_COLLNET_SIZE,
          "v%d: limits %zu/%zu, NCCL's %llu/%llu expected", v, p->max_p2p_bytes, p->max_coll_bytes,
          MAX_NET_SIZE, MAX_COLLNET_SIZE);
  else
    CHECK(!p->limits_assumed && p->max_p2p_bytes == MAX_NET_SIZE &&
            p->max_coll_bytes == MAX_NET_SIZE,
          "v%d: maxP2pBytes %zu maxCollBytes %zu, 1 GiB each expected", v, p->max_p2p_bytes,
          p->max_coll_bytes);
  CHECK(p->rail_id == NCCL_NET_ID_UNDEF && p->plane_id == NCCL_NET_ID_UNDEF,
        "v%d: railId %d planeId %d, NCCL_NET_ID_UNDEF expected", v, p->rail_id, p->plane_id);
  if (v == 5) CHECK(!(p->ptr_support & NCCL_PTR_DMABUF), "v5 advertises dma-buf");
  char want[64];
  snprintf(want, sizeof(want), "bound through ncclNetPlugin_v%d)", v);
  CHECK(log_find(NCCL_LOG_INFO, want), "no INFO line says \"%s\"", want);
}

void case_init_props(struct side *s) {
  if (side_open(s)) return;
  check_struct_slots(s);
  int ndev = -1;
  CHECK(netload_devices(&s->nl, &ndev) == 0 && ndev >= 1, "devices: %d", ndev);
  char names[64][64];
  for (int d = 0; d < ndev && d < 64; d++) {
    struct netload_props p;
    int r = netload_props(&s->nl, d, &p);
    CHECK(r == 0, "getProperties(%d) returned %d", d, r);
    CHECK(p.name[0], "device %d has no name", d);
    snprintf(names[d], sizeof(names[d]), "%s", p.name);
    for (int e = 0; e < d; e++)
      CHECK(strcmp(names[e], p.name), "devices %d and %d share the name %s", e, d, p.name);
    if (p.has_pci) {
      char sub[PATH_MAX + 16], real[PATH_MAX];
      snprintf(sub, sizeof(sub), "%s/subsystem", p.pci_path);
      CHECK(realpath(p.pci_path, real) && !strcmp(real, p.pci_path),
            "pciPath %s is not a real path", p.pci_path);
      CHECK(access(sub, F_OK) == 0, "pciPath %s has no subsystem link", p.pci_path);
    }
    CHECK(p.ptr_support & NCCL_PTR_HOST, "device %s does not support host memory", p.name);
    CHECK(p.speed > 0, "device %s speed %d", p.name, p.speed);
    CHECK(p.max_recvs >= 1 && p.max_recvs <= 8, "device %s maxRecvs %d", p.name, p.max_recvs);
    CHECK(p.max_comms > 0, "device %s maxComms %d", p.name, p.max_comms);
    CHECK(p.device_type == 0 && p.device_version == 0, "device %s is not a host device", p.name);
    CHECK(p.max_p2p_bytes >= 1 && p.max_p2p_bytes <= (1ULL << 40), "maxP2pBytes %zu",
          p.max_p2p_bytes);
    CHECK(p.vdevs == 1, "vProps.ndevs %d", p.vdevs);
    check_props_per_table(s, &p);
  }
  CHECK(log_count(NCCL_LOG_WARN, "") == 0, "a healthy init logged a WARN: %s",
        log_find(NCCL_LOG_WARN, ""));
  CHECK(netload_props(&s->nl, ndev, &(struct netload_props){0}) != 0,
        "getProperties(%d) of a missing device succeeded", ndev);
  CHECK(log_find(NCCL_LOG_WARN, "does not exist"), "no WARN for a missing device");
  CHECK(log_find(NCCL_LOG_INFO, "socket interfaces: using"),
        "no INFO line says which interface was chosen");
  side_close(s);
}

/* v11 and v12: init is per communicator and returns a context; finalize
 * takes NULL. */
void case_v11_context(struct side *s) {
  if (side_open(s)) return;
  if (s->nl.version < 11) {
    side_close(s);
    return;
  }
  void *a = s->nl.ctx, *b = NULL;
  ncclNetCommConfig_t cfg = {5};
  int v12 = s->nl.version == 12;
  CHECK((v12 ? s->nl.v12->init(&b, 42, &cfg, NULL, NULL)
             : s->nl.v11->init(&b, 42, &cfg, NULL, NULL)) == 0,
        "second init failed");
  CHECK(a && b && a != b, "contexts %p and %p are not distinct", a, b);
  CHECK((v12 ? s->nl.v12->finalize(NULL) : s->nl.v11->finalize(NULL)) == 0,
        "finalize(NULL) failed");
  CHECK((v12 ? s->nl.v12->finalize(b) : s->nl.v11->finalize(b)) == 0,
        "finalize of the second context failed");
  side_close(s);
}

/* A bad knob value is quoted with what is accepted; init still succeeds. */
void case_bad_knobs(struct side *s) {
  setenv("NCCL_IB_TIMEOUT", "abc", 1);
  setenv("NCCL_DIAG_FALLBACK", "maybe", 1);
  setenv("NCCL_NSOCKS_PERTHREAD", "100", 1);
  if (side_open(s)) return;
  const char *w = log_find(NCCL_LOG_WARN, "NCCL_IB_TIMEOUT=\"abc\"");
  CHECK(w && strstr(w, "1..31"), "no WARN quoting NCCL_IB_TIMEOUT=abc with its range: %s",
        w ? w : "none");
  w = log_find(NCCL_LOG_WARN, "NCCL_DIAG_FALLBACK=\"maybe\"");
  CHECK(w && strstr(w, "auto") && strstr(w, "off"), "no WARN listing auto/off: %s", w ? w : "none");
  w = log_find(NCCL_LOG_WARN, "NCCL_NSOCKS_PERTHREAD=\"100\"");
  CHECK(w && strstr(w, "-2..64"), "no WARN on NCCL_NSOCKS_PERTHREAD=100: %s", w ? w : "none");
  int ndev = 0;
  CHECK(netload_devices(&s->nl, &ndev) == 0 && ndev >= 1, "devices %d after bad knobs", ndev);
  side_close(s);
}

/* Field story 4: an interface name that does not exist here. */
void case_no_device(struct side *s) {
  setenv("NCCL_SOCKET_IFNAME", "=doesnotexist0", 1);
  if (side_open(s)) return;
  int ndev = -1;
  CHECK(netload_devices(&s->nl, &ndev) == 0 && ndev == 0, "devices %d, expected 0", ndev);
  CHECK(log_count(NCCL_LOG_WARN, "") == 1, "%d WARNs, expected exactly one",
        log_count(NCCL_LOG_WARN, ""));
  const char *w = log_find(NCCL_LOG_WARN, "NCCL_SOCKET_IFNAME==doesnotexist0");
  CHECK(w && strstr(w, "lo (127.0.0.1/8") && strstr(w, "Set NCCL_SOCKET_IFNAME"),
        "the WARN must list the interfaces that exist and the fix: %s", w ? w : "none");
  side_close(s);
}

/* The handle stays inside its 128 bytes and is unique per listen. */
void case_handle_bounds(struct side *s) {
  if (side_open(s)) return;
  unsigned char h1[NCCL_NET_HANDLE_MAXSIZE + 8], h2[NCCL_NET_HANDLE_MAXSIZE + 8];
  memset(h1, 0x5a, sizeof(h1));
  memset(h2, 0x5a, sizeof(h2));
  void *l1 = NULL, *l2 = NULL;
  CHECK(netload_listen(&s->nl, 0, h1, &l1) == 0 && l1, "listen failed");
  CHECK(netload_listen(&s->nl, 0, h2, &l2) == 0 && l2, "second listen failed");
  for (int i = NCCL_NET_HANDLE_MAXSIZE; i < NCCL_NET_HANDLE_MAXSIZE + 8; i++)
    CHECK(h1[i] == 0x5a, "listen wrote byte %d, past the 128-byte handle", i);
  CHECK(memcmp(h1, h2, NCCL_NET_HANDLE_MAXSIZE), "two listens produced the same handle");
  netload_close_listen(&s->nl, l1);
  netload_close_listen(&s->nl, l2);
  side_close(s);
}

/* NCCL may dlclose the plugin after the last comm and load it again. */
void case_reload(struct side *s) {
  for (int round = 0; round < 2; round++) {
    if (side_open(s)) return;
    void *sc, *rc;
    CHECK(netload_connect_pair(&s->nl, 0, &sc, &rc, 20000) == 0,
          "round %d: loopback connect failed", round);
    if (sc && rc) {
      void *mh1, *mh2, *req1, *req2;
      char out[64] = "reload", in[64] = {0};
      size_t cap = sizeof(in);
      int tag = 0, done1 = 0, done2 = 0, sz;
      netload_reg_mr(&s->nl, sc, out, sizeof(out), NCCL_PTR_HOST, &mh1);
      netload_reg_mr(&s->nl, rc, in, sizeof(in), NCCL_PTR_HOST, &mh2);
      void *inp = in;
      CHECK(netload_irecv(&s->nl, rc, 1, &inp, &cap, &tag, &mh2, &req2) == 0 && req2, "irecv");
      /* RDMA sends wait (NULL) until the receiver's clear-to-send is there. */
      req1 = NULL;
      for (long long end = ms_now() + 10000; !req1 && ms_now() < end;)
        if (netload_isend(&s->nl, sc, out, sizeof(out), 0, mh1, &req1)) break;
      CHECK(req1, "isend");
      long long end = ms_now() + 10000;
      while ((!done1 || !done2) && ms_now() < end) {
        if (!done1) netload_test(&s->nl, req1, &done1, &sz);
        if (!done2) netload_test(&s->nl, req2, &done2, &sz);
      }
      CHECK(done1 && done2 && !strcmp(in, "reload"), "round %d: message not delivered", round);
      netload_dereg_mr(&s->nl, sc, mh1);
      netload_dereg_mr(&s->nl, rc, mh2);
      netload_close_send(&s->nl, sc);
      netload_close_recv(&s->nl, rc);
    }
    side_close(s);
    netload_close(&s->nl);
  }
}
