/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the API's files (api.c: setup and close; api_data.c:
 * registrations, transfers and test): the objects behind the ids NCCL
 * hands back (registry.h), resolved with a WARN that names the call, the
 * id and what it is when it is not what the call takes. */
#ifndef DIAG_PLUGIN_API_IDS_H
#define DIAG_PLUGIN_API_IDS_H

#include <stdbool.h>
#include <stddef.h>

#include "plugin/registry.h"
#include "transport/transport.h"

/* The comm behind id when its kind is in kinds (RK_BIT mask), else NULL
 * after a WARN naming fn. */
struct transport_comm *api_comm(const char *fn, const void *id, unsigned kinds);
/* api_comm for close: the id is retired and the comm is the caller's to
 * close (once, whoever else tries). */
struct transport_comm *api_comm_take(const char *fn, const void *id, unsigned kinds);
/* The listen comm behind id, else NULL after a WARN; _take retires it. */
void *api_listen(const char *fn, const void *id);
void *api_listen_take(const char *fn, const void *id);
/* An id for a new comm or listen comm: 0, or ENOSPC after a WARN (the
 * caller closes the object). */
int api_comm_id(enum registry_kind kind, void *obj, const char *desc, void **id);

/* The registration behind mh for a transfer of [data, data + size) on
 * comm c (id cid): true with *out filled; NULL mh is no registration (only
 * for 0 bytes). Else false after a WARN naming fn and the buffer. */
bool api_mr_for(const char *fn, const struct transport_comm *c, const void *cid, const void *mh,
                const void *data, size_t size, struct registry_mr *out);

/* The WARN for a memory handle a lookup or take missed (found: what the
 * lookup read, for RM_FOREIGN). */
void api_mr_miss(const char *fn, const struct transport_comm *c, const void *mh,
                 enum registry_miss miss, const struct registry_mr *found);

#endif
