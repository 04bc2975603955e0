/* SPDX-License-Identifier: Apache-2.0 */
/* The ids NCCL holds for this plugin's objects: listen, send and receive
 * comms, memory registrations and requests. NCCL gets an opaque 64-bit id,
 * never a pointer, and every call resolves it in a process-wide table:
 *
 *   bits 63..56  0xd1, a mark no user-space pointer carries (the id is a
 *                non-canonical address: dereferenced by mistake it faults)
 *   bits 55..53  the kind
 *   bits 52..29  the slot (comm or registration index; a request's comm)
 *   bits 28..0   comms and registrations: the slot's generation;
 *                requests: the request slot (8 bits) and its generation
 *
 * A slot's generation counts up on every use and every release (odd while
 * live), so an id from before a close, a deregister or a completed test()
 * no longer matches and is refused by name; an id of the wrong kind, or
 * bytes that are not an id at all, are refused without being dereferenced.
 * Tables grow in chunks that are never freed, so a lookup is a few loads
 * with no lock: test() and isend stay on their fast path. Comms and
 * registrations are added and removed under one lock (setup, regMr and
 * deregMr may run on NCCL's service thread while its progress thread
 * drives the same comm); a comm's requests are added and released by the
 * thread that drives the comm, as NCCL's contract says. */
#ifndef DIAG_PLUGIN_REGISTRY_H
#define DIAG_PLUGIN_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum registry_kind { RK_LISTEN = 1, RK_SEND = 2, RK_RECV = 3, RK_MR = 4, RK_REQ = 5 };
#define RK_BIT(k) (1u << (k))
#define RK_COMMS (RK_BIT(RK_SEND) | RK_BIT(RK_RECV))

/* Requests a comm can have in flight: an RDMA sender takes up to 32 x the
 * receiver's 8 grouped receives. */
#define REGISTRY_REQS_PER_COMM 256

/* What a lookup found when it found no live object. */
enum registry_miss {
  RM_NONE,      /* found */
  RM_NOT_OURS,  /* not an id of this plugin (NULL, a pointer, garbage) */
  RM_KIND,      /* an id of another kind (a send comm where a receive comm belongs) */
  RM_STALE,     /* it was live once: closed, deregistered, or completed */
  RM_FOREIGN,   /* a registration of another comm */
  RM_EXHAUSTED, /* adding: the table is full or out of memory */
};

/* ---- comms (listen, send, receive) ---- */
enum registry_miss registry_comm_add(enum registry_kind kind, void *obj, void **id);
/* The object behind a live comm id whose kind is in kinds (RK_BIT mask).
 * *kind is the id's kind whenever it is one of ours (RM_KIND included). */
void *registry_comm_get(const void *id, unsigned kinds, enum registry_kind *kind,
                        enum registry_miss *miss);
/* Looks it up as registry_comm_get does and retires the id and every
 * request id of the comm: the object is returned to one caller only, even
 * when two threads close the comm at the same moment. */
void *registry_comm_take(const void *id, unsigned kinds, enum registry_kind *kind,
                         enum registry_miss *miss);

/* ---- registrations, each owned by one comm ---- */
struct registry_mr {
  void *mh;       /* the transport's handle; NULL for an empty registration */
  uintptr_t base; /* the caller's range */
  size_t len;
  const void *comm; /* the comm id it belongs to */
};
enum registry_miss registry_mr_add(const void *comm, const struct registry_mr *mr, void **id);
/* A live registration of comm (RM_FOREIGN: of another comm, whose id is
 * in out->comm). */
enum registry_miss registry_mr_get(const void *comm, const void *id, struct registry_mr *out);
/* Looks it up as registry_mr_get does and retires it when it is comm's, at
 * most once even when two threads deregister it at the same moment. */
enum registry_miss registry_mr_take(const void *comm, const void *id, struct registry_mr *out);

/* ---- requests, by the thread that drives their comm ---- */
enum registry_miss registry_req_add(const void *comm, void *req, void **id);
/* Where a live request id was found: what retiring it needs, so a test()
 * looks the id up once. */
struct registry_req_ref {
  void *entry; /* the comm's entry */
  void *slot;
  uint32_t index, seq;
};
/* The transport's request behind a live request id. */
void *registry_req_get(const void *id, struct registry_req_ref *ref, enum registry_miss *miss);
/* The request completed: its id, found by registry_req_get, is retired. */
void registry_req_done(const struct registry_req_ref *ref);

#endif
