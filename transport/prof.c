/* SPDX-License-Identifier: Apache-2.0 */
/* Network events for NCCL's profiler: see prof.h. NCCL's callback starts
 * an event only for a non-NULL per-request handle (it dereferences it), so
 * a request without one reports nothing. */
#include "transport/prof.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "plugin/abi/net_profiler.h"

#define PROF_MAX_SUBS 8    /* grouped receives of one request (maxRecvs) */
#define PROF_MAX_EVENTS 64 /* work requests one request posts, at most */

struct prof_req {
  int n;
  void *phandles[PROF_MAX_SUBS];
  int nev;
  void *events[PROF_MAX_EVENTS];
  bool is_sock_started;
};

static _Atomic(ncclProfilerCallback_t) prof_fn;
atomic_bool prof_is_on;

static _Thread_local struct {
  int n;
  void *phandles[PROF_MAX_SUBS];
} armed;

void prof_set_callback(ncclProfilerCallback_t fn) {
  if (!fn) return;
  atomic_store(&prof_fn, fn);
  atomic_store(&prof_is_on, true);
}

void prof_arm(int n, void **phandles) {
  armed.n = 0;
  if (!phandles || !atomic_load_explicit(&prof_fn, memory_order_relaxed)) return;
  if (n > PROF_MAX_SUBS) n = PROF_MAX_SUBS;
  for (int i = 0; i < n; i++) {
    armed.phandles[i] = phandles[i];
    if (phandles[i]) armed.n = n;
  }
}

void prof_disarm(void) { armed.n = 0; }

void prof_req_take(struct transport_req *r) {
  if (!armed.n) return;
  struct prof_req *p = calloc(1, sizeof(*p));
  if (!p) return; /* the transfer goes on unprofiled */
  p->n = armed.n;
  memcpy(p->phandles, armed.phandles, sizeof(void *) * (size_t)armed.n);
  r->prof = p;
  armed.n = 0; /* one request per armed call */
}

/* Starts one event; its handle is kept for the stop. */
static void start(struct prof_req *p, int sub, int64_t plugin_id, void *descr) {
  ncclProfilerCallback_t fn = atomic_load_explicit(&prof_fn, memory_order_relaxed);
  if (!fn || sub < 0 || sub >= p->n || !p->phandles[sub] || p->nev == PROF_MAX_EVENTS) return;
  void **eh = &p->events[p->nev++];
  *eh = NULL;
  if (fn(eh, ncclProfilerNetEventStart, p->phandles[sub], plugin_id, descr) != ncclSuccess)
    TRACE(LOG_NET, "the profiler refused a network event start");
}

void prof_qp_start(struct transport_req *r, int sub, int dev, uint64_t wr_id, int opcode,
                   uint32_t qpn, size_t length) {
  if (!r->prof) return;
  ncclProfilerNetIbDescr_v1_t d;
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileQp;
  d.qp.device = dev;
  d.qp.wr_id = wr_id;
  d.qp.opcode = opcode;
  d.qp.qpNum = (int)qpn;
  d.qp.length = length;
  start(r->prof, sub, NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER, &d);
}

void prof_sock_start(struct transport_req *r, int fd, int is_recv, size_t length) {
  if (!r->prof || r->prof->is_sock_started) return;
  r->prof->is_sock_started = true;
  ncclProfilerNetSockDescr_v1_t d;
  memset(&d, 0, sizeof(d));
  d.type = ncclProfileSocket;
  d.sock.fd = fd;
  d.sock.op = is_recv ? 1 : 0;
  d.sock.length = length;
  start(r->prof, 0, NCCL_PROFILER_NET_TYPE_SOCK | NCCL_PROFILER_NET_SOCKET_VER, &d);
}

void prof_req_stop(struct transport_req *r) {
  struct prof_req *p = r->prof;
  if (!p) return;
  r->prof = NULL;
  ncclProfilerCallback_t fn = atomic_load(&prof_fn);
  for (int i = 0; fn && i < p->nev; i++) fn(&p->events[i], ncclProfilerNetEventStop, NULL, 0, NULL);
  free(p);
}
