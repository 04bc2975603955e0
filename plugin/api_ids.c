/* SPDX-License-Identifier: Apache-2.0 */
/* See api_ids.h. An id that is not what a call takes is refused with a
 * WARN that says what it is instead (not ours, another kind, closed,
 * deregistered, another connection's), and nothing behind it is touched. */
#include "plugin/api_ids.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "common/log.h"

static const char *kind_name(unsigned kind) {
  switch (kind) {
  case RK_LISTEN: return "listen comm";
  case RK_SEND: return "send comm";
  case RK_RECV: return "receive comm";
  case RK_MR: return "registration";
  case RK_REQ: return "request";
  }
  return "object";
}

static const char *wanted(unsigned kinds) {
  if (kinds == RK_COMMS) return "send or receive comm";
  if (kinds == RK_BIT(RK_LISTEN)) return "listen comm";
  return kinds == RK_BIT(RK_SEND) ? "send comm" : "receive comm";
}

static void warn_comm_miss(const char *fn, const void *id, unsigned kinds, enum registry_kind kind,
                           enum registry_miss miss) {
  if (miss == RM_KIND)
    WARN("%s: %p is a %s of this plugin, not a %s", fn, id, kind_name(kind), wanted(kinds));
  else if (miss == RM_STALE)
    WARN("%s: %p is not a live %s: it was already closed", fn, id, wanted(kinds));
  else
    WARN("%s: %p is not a %s of this plugin (a wild or corrupted pointer, or another plugin's "
         "object); refused without touching it",
         fn, id, wanted(kinds));
}

struct transport_comm *api_comm(const char *fn, const void *id, unsigned kinds) {
  enum registry_kind kind;
  enum registry_miss miss;
  struct transport_comm *c = registry_comm_get(id, kinds, &kind, &miss);
  if (!c) warn_comm_miss(fn, id, kinds, kind, miss);
  return c;
}

struct transport_comm *api_comm_take(const char *fn, const void *id, unsigned kinds) {
  enum registry_kind kind;
  enum registry_miss miss;
  struct transport_comm *c = registry_comm_take(id, kinds, &kind, &miss);
  if (!c) warn_comm_miss(fn, id, kinds, kind, miss);
  return c;
}

void *api_listen(const char *fn, const void *id) { return api_comm(fn, id, RK_BIT(RK_LISTEN)); }

void *api_listen_take(const char *fn, const void *id) {
  return api_comm_take(fn, id, RK_BIT(RK_LISTEN));
}

int api_comm_id(enum registry_kind kind, void *obj, const char *desc, void **id) {
  if (registry_comm_add(kind, obj, id) == RM_NONE) return 0;
  WARN("%s %s: out of memory for its id, or more than a million comms open in this process; "
       "closed it",
       kind_name(kind), desc);
  return ENOSPC;
}

/* "the connection with host-c (10.0.0.9<41000>, eth0)", or words for an
 * owner that is gone. */
static void owner_desc(const void *owner, char *buf, size_t cap) {
  enum registry_kind kind;
  enum registry_miss miss;
  const struct transport_comm *o = registry_comm_get(owner, RK_COMMS, &kind, &miss);
  if (o)
    snprintf(buf, cap, "the %s connection with %s", kind == RK_SEND ? "send" : "receive",
             o->peer.desc);
  else snprintf(buf, cap, "a connection that is closed now");
}

static bool covers(const struct registry_mr *mr, const void *data, size_t size) {
  uintptr_t p = (uintptr_t)data;
  return !size || (p >= mr->base && size <= mr->len && p - mr->base <= mr->len - size);
}

void api_mr_miss(const char *fn, const struct transport_comm *c, const void *mh,
                 enum registry_miss miss, const struct registry_mr *found) {
  char owner[256];
  switch (miss) {
  case RM_FOREIGN:
    owner_desc(found->comm, owner, sizeof(owner));
    WARN("%s with %s: memory handle %p is a registration of %s, not of this one: use the "
         "registration made on the comm that moves the buffer",
         fn, c->peer.desc, mh, owner);
    return;
  case RM_STALE:
    WARN("%s with %s: memory handle %p is not a live registration: it was deregistered already", fn,
         c->peer.desc, mh);
    return;
  case RM_KIND:
    WARN("%s with %s: memory handle %p is another kind of id of this plugin, not a registration",
         fn, c->peer.desc, mh);
    return;
  default:
    WARN("%s with %s: memory handle %p is not a registration of this plugin (a wild or corrupted "
         "pointer); refused without touching it",
         fn, c->peer.desc, mh);
  }
}

bool api_mr_for(const char *fn, const struct transport_comm *c, const void *cid, const void *mh,
                const void *data, size_t size, struct registry_mr *out) {
  if (!mh) {
    *out = (struct registry_mr){NULL, 0, 0, cid};
    if (!size) return true;
    WARN("%s of %zu bytes with %s: buffer %p comes with no registration (memory handle NULL): "
         "register it with regMr on this comm first",
         fn, size, c->peer.desc, data);
    return false;
  }
  enum registry_miss miss = registry_mr_get(cid, mh, out);
  if (miss) {
    api_mr_miss(fn, c, mh, miss, out);
    return false;
  }
  if (covers(out, data, size)) return true;
  WARN("%s of %zu bytes with %s: buffer %p lies outside its registration (%p, %zu bytes)", fn, size,
       c->peer.desc, data, (void *)out->base, out->len);
  return false;
}
