/* SPDX-License-Identifier: Apache-2.0 */
/* P_Keys. NCCL_IB_PKEY is an index into each port's P_Key table, not a key.
 * A key is 16 bits: bit 15 says full membership, the low 15 bits name the
 * partition; 0x0000 and 0x8000 (partition 0) hold no key. Two ports talk
 * only inside one partition, and only when at least one of them is a full
 * member: limited members never reach each other. */
#ifndef DIAG_TOPO_PKEY_H
#define DIAG_TOPO_PKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "topo/topo.h"

static inline int pkey_partition(int v) { return v & 0x7fff; }
static inline bool pkey_is_full(int v) { return (v & 0x8000) != 0; }
static inline bool pkey_is_key(int v) { return v > 0 && pkey_partition(v) != 0; }

/* "0x8005 (full member of partition 0x0005)", "0x0000 (no key)". */
void pkey_describe(int v, char *buf, size_t cap);
/* The key at index: -1 past the table's end, 0 an entry without a key. */
int pkey_at(const struct topo_port *pt, int index);
/* The first index holding a full-member key, preferring partition part
 * (-1: any); -1 when there is none. */
int pkey_full_index(const struct topo_port *pt, int part);
/* "0 0x7fff limited, 1 0x8005 full" (the entries that hold a key). */
void pkey_table_str(const struct topo_port *pt, char *buf, size_t cap);

#endif
