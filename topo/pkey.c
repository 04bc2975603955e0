/* SPDX-License-Identifier: Apache-2.0 */
/* The P_Key NCCL_IB_PKEY selects on each chosen port, and whether it can
 * talk at all: an index past the table or an empty entry makes every queue
 * pair fail at INIT (EINVAL); a limited member reaches only full members.
 * The key itself goes to the peer in the hello, where the pair is checked
 * (transport/ib/setup/ib_compat.c). */
#include <stdio.h>

#include "topo/internal.h"
#include "topo/pkey.h"

void pkey_describe(int v, char *buf, size_t cap) {
  if (!pkey_is_key(v)) snprintf(buf, cap, "0x%04x (no key)", v & 0xffff);
  else
    snprintf(buf, cap, "0x%04x (%s member of partition 0x%04x)", v,
             pkey_is_full(v) ? "full" : "limited", pkey_partition(v));
}

int pkey_at(const struct topo_port *pt, int index) {
  if (index < 0 || index >= pt->pkey_tbl_len) return -1;
  for (int k = 0; k < pt->npkey; k++)
    if (pt->pkeys[k].index == index) return pt->pkeys[k].value;
  return 0;
}

int pkey_full_index(const struct topo_port *pt, int part) {
  int any = -1;
  for (int k = 0; k < pt->npkey; k++) {
    int v = pt->pkeys[k].value;
    if (!pkey_is_full(v)) continue;
    if (pkey_partition(v) == part) return pt->pkeys[k].index;
    if (any < 0) any = pt->pkeys[k].index;
  }
  return any;
}

void pkey_table_str(const struct topo_port *pt, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = 0;
  for (int k = 0; k < pt->npkey && o < cap; k++)
    o = strbuf_cat(buf, cap, o, "%s%d 0x%04x %s", k ? ", " : "", pt->pkeys[k].index,
                   pt->pkeys[k].value, pkey_is_full(pt->pkeys[k].value) ? "full" : "limited");
  if (!pt->npkey) snprintf(buf, cap, "no key");
}

/* The index to advise instead of the one in use, as words and a setting. */
static void advice(const struct topo_port *pt, int part, char *buf, size_t cap) {
  int k = pkey_full_index(pt, part);
  char d[64];
  if (k < 0) {
    snprintf(buf, cap,
             "no entry of this port's table is a full member: the subnet manager must grant "
             "one (its partition configuration)");
    return;
  }
  pkey_describe(pkey_at(pt, k), d, sizeof(d));
  snprintf(buf, cap, "index %d holds %s: set NCCL_IB_PKEY=%d on every node of the job", k, d, k);
}

static void check_port(const struct topo_host *h, struct topo_choice *c, int p) {
  const struct topo_port *pt = &h->ports[p];
  int idx = c->prefs.pkey_index, v = pkey_at(pt, idx);
  c->pc[p].pkey = pt->pkey_tbl_len ? v : -1;
  if (!pt->pkey_tbl_len || (pkey_is_key(v) && pkey_is_full(v))) return;
  char what[160], fix[256], table[256];
  pkey_table_str(pt, table, sizeof(table));
  advice(pt, pkey_is_key(v) ? pkey_partition(v) : -1, fix, sizeof(fix));
  if (v < 0)
    snprintf(what, sizeof(what), "is past the end of the P_Key table (%d entries)",
             pt->pkey_tbl_len);
  else if (!pkey_is_key(v))
    snprintf(what, sizeof(what), "selects an entry without a key (0x%04x)", v);
  else
    snprintf(what, sizeof(what), "selects 0x%04x, a limited member of partition 0x%04x", v,
             pkey_partition(v));
  const char *effect = pkey_is_key(v) ? "a limited member reaches only full members, so two "
                                        "such nodes cannot talk"
                                      : "creating queue pairs fails with EINVAL";
  char label[80];
  topo_port_label(h, p, label, sizeof(label));
  struct topo_issue *is = topo_issue(c, pkey_is_key(v) ? TOPO_WARNING : TOPO_ERROR,
                                     "%s: NCCL_IB_PKEY=%d %s (this port's keys: %s): %s; %s", label,
                                     idx, what, table, effect, fix);
  topo_issue_warn(c, is, "device %s port %d: NCCL_IB_PKEY=%d %s (this port's keys: %s): %s; %s",
                  h->hcas[pt->hca].name, pt->num, idx, what, table, effect, fix);
  topo_issue_fix(c, is, "%s", fix);
}

void pkey_pass(const struct topo_host *h, struct topo_choice *c) {
  for (int p = 0; p < h->nport; p++)
    if (c->pc[p].verdict == TV_CHOSEN) check_port(h, c, p);
}
