/* SPDX-License-Identifier: Apache-2.0 */
/* A host's facts on the wire: scalars at the top, one group per variable,
 * interface, RDMA port, device, issue and recommendation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/probe/rdv_wire.h"

enum {
  F_RANK = 1,
  F_LOCAL_RANK,
  F_HOST,
  F_PROBE_VERSION,
  F_NCCL_CODE,
  F_NCCL_PATH,
  F_NCCL_ERR,
  F_PLUGIN_VERSION,
  F_PLUGIN_PATH,
  F_PLUGIN_ERR,
  F_ABI_MASK,
  F_ABI_USED,
  F_ENV,  /* group: G_NAME, G_VALUE */
  F_PID1, /* group: G_NAME, G_VALUE */
  F_PID1_OK,
  F_PID1_ERR,
  F_SOCK_IFS,
  F_SOCK_ERR,
  F_AUTO_IF,
  F_SOCK_MTU,
  F_IF, /* group */
  F_RDMA_PRESENT,
  F_RDMA, /* group */
  F_TRANSPORT,
  F_DEV, /* group */
  F_NO_DEV,
  F_ISSUE, /* group */
  F_REC,   /* group */
};

enum {
  G_NAME = 1,
  G_VALUE,
  G_ADDR,
  G_MTU,
  G_UP,
  G_PORT,
  G_LL,
  G_GID_INDEX,
  G_GID,
  G_GID_TYPE,
  G_SUBNET,
  G_NETDEV,
  G_SPEED,
  G_PKEY,
  G_SEV,
  G_STATUS,
  G_QOS_STATE, /* RoCE QoS (facts_qos.c); a probe that predates them sends none */
  G_QOS,
  G_QOS_PRIO,
  G_QOS_LOSSLESS,
  G_QOS_PFC,
  G_QOS_TC,
  G_QOS_FIX_TC,
};

static void enc_env(struct wire_buf *b, uint16_t tag, const struct probe_env *e) {
  for (int i = 0; i < e->n; i++) {
    size_t g = wb_group_begin(b, tag);
    wb_str(b, G_NAME, e->v[i].name);
    wb_str(b, G_VALUE, e->v[i].value);
    wb_group_end(b, g);
  }
}

static void enc_qos(struct wire_buf *b, const struct probe_rdma *r) {
  if (!r->qos_state) return;
  wb_i32(b, G_QOS_STATE, r->qos_state);
  wb_str(b, G_QOS, r->qos);
  wb_i32(b, G_QOS_PRIO, r->qos_prio);
  wb_i32(b, G_QOS_LOSSLESS, r->qos_lossless);
  wb_i32(b, G_QOS_PFC, r->qos_pfc);
  wb_str(b, G_QOS_TC, r->qos_tc);
  wb_i32(b, G_QOS_FIX_TC, r->qos_fix_tc);
}

static void enc_lists(struct wire_buf *b, const struct probe_facts *f) {
  for (int i = 0; i < f->nif; i++) {
    size_t g = wb_group_begin(b, F_IF);
    wb_str(b, G_NAME, f->ifs[i].name);
    wb_str(b, G_ADDR, f->ifs[i].addr);
    wb_i32(b, G_MTU, f->ifs[i].mtu);
    wb_i32(b, G_UP, f->ifs[i].up);
    wb_group_end(b, g);
  }
  for (int i = 0; i < f->nrdma; i++) {
    const struct probe_rdma *r = &f->rdma[i];
    size_t g = wb_group_begin(b, F_RDMA);
    wb_str(b, G_NAME, r->name);
    wb_i32(b, G_PORT, r->port);
    wb_str(b, G_LL, r->ll);
    wb_i32(b, G_GID_INDEX, r->gid_index);
    wb_str(b, G_GID, r->gid);
    wb_str(b, G_GID_TYPE, r->gid_type);
    wb_str(b, G_SUBNET, r->subnet);
    wb_str(b, G_NETDEV, r->netdev);
    wb_i32(b, G_MTU, r->mtu);
    wb_i32(b, G_SPEED, r->speed_mbps);
    wb_i32(b, G_PKEY, r->pkey);
    enc_qos(b, r);
    wb_group_end(b, g);
  }
  for (int i = 0; i < f->ndev; i++) {
    size_t g = wb_group_begin(b, F_DEV);
    wb_str(b, G_NAME, f->devs[i].name);
    wb_i32(b, G_SPEED, f->devs[i].speed);
    wb_group_end(b, g);
  }
  for (int i = 0; i < f->nissue; i++) {
    size_t g = wb_group_begin(b, F_ISSUE);
    wb_i32(b, G_SEV, f->issues[i].sev);
    wb_str(b, G_VALUE, f->issues[i].text);
    wb_group_end(b, g);
  }
  for (int i = 0; i < f->nrec; i++) {
    size_t g = wb_group_begin(b, F_REC);
    wb_str(b, G_NAME, f->recs[i].name);
    wb_str(b, G_VALUE, f->recs[i].value);
    wb_str(b, G_STATUS, f->recs[i].status);
    wb_group_end(b, g);
  }
}

int wire_enc_facts(struct wire_buf *b, const struct probe_facts *f) {
  wb_begin(b, W_FACTS);
  wb_i32(b, F_RANK, f->rank);
  wb_i32(b, F_LOCAL_RANK, f->local_rank);
  wb_str(b, F_HOST, f->host);
  wb_str(b, F_PROBE_VERSION, f->probe_version);
  wb_i32(b, F_NCCL_CODE, f->nccl_code);
  wb_str(b, F_NCCL_PATH, f->nccl_path);
  wb_str(b, F_NCCL_ERR, f->nccl_err);
  wb_str(b, F_PLUGIN_VERSION, f->plugin_version);
  wb_str(b, F_PLUGIN_PATH, f->plugin_path);
  wb_str(b, F_PLUGIN_ERR, f->plugin_err);
  wb_i32(b, F_ABI_MASK, f->abi_mask);
  wb_i32(b, F_ABI_USED, f->abi_used);
  enc_env(b, F_ENV, &f->env);
  enc_env(b, F_PID1, &f->pid1);
  wb_i32(b, F_PID1_OK, f->pid1_ok);
  wb_str(b, F_PID1_ERR, f->pid1_err);
  wb_str(b, F_SOCK_IFS, f->sock_ifs);
  wb_str(b, F_SOCK_ERR, f->sock_err);
  wb_str(b, F_AUTO_IF, f->auto_if);
  wb_i32(b, F_SOCK_MTU, f->sock_mtu);
  wb_i32(b, F_RDMA_PRESENT, f->rdma_present);
  wb_str(b, F_TRANSPORT, f->transport);
  wb_str(b, F_NO_DEV, f->no_dev);
  enc_lists(b, f);
  return wb_finish(b) ? 0 : EMSGSIZE;
}

/* ------------------------------------------------------------- decoding */

static int dec_var(struct wire_rd *g, struct probe_env *e) {
  char *name = NULL, *value = NULL;
  struct wire_rd v;
  uint16_t tag;
  enum wire_field r;
  int err = 0;
  while (!err && (r = wire_next(g, &tag, &v)) == WIRE_FIELD) {
    char **dst = tag == G_NAME ? &name : tag == G_VALUE ? &value : NULL;
    if (!dst) continue;
    free(*dst);
    if (!(*dst = wire_strdup(&v))) err = EBADMSG;
  }
  if (!err && (r == WIRE_MALFORMED || !name || !value)) err = EBADMSG;
  struct probe_var *grown = err ? NULL : probe_grow(e->v, e->n, sizeof(*e->v));
  if (grown) {
    e->v = grown;
    e->v[e->n].name = name;
    e->v[e->n].value = value;
    e->n++;
    return 0;
  }
  free(name);
  free(value);
  return err ? err : ENOMEM;
}

static int dec_if(struct wire_rd *g, struct probe_if *x) {
  struct wire_rd v;
  uint16_t tag;
  enum wire_field r;
  int e = 0;
  while ((r = wire_next(g, &tag, &v)) == WIRE_FIELD && !e) {
    if (tag == G_NAME) e = wire_str(&v, x->name, sizeof(x->name));
    else if (tag == G_ADDR) e = wire_str(&v, x->addr, sizeof(x->addr));
    else if (tag == G_MTU) e = wire_i32(&v, &x->mtu);
    else if (tag == G_UP) e = wire_i32(&v, &x->up);
  }
  return r == WIRE_MALFORMED || e ? EBADMSG : 0;
}

static int dec_rdma(struct wire_rd *g, struct probe_rdma *x) {
  struct wire_rd v;
  uint16_t tag;
  enum wire_field r;
  int e = 0;
  while ((r = wire_next(g, &tag, &v)) == WIRE_FIELD && !e) {
    switch (tag) {
    case G_NAME: e = wire_str(&v, x->name, sizeof(x->name)); break;
    case G_PORT: e = wire_i32(&v, &x->port); break;
    case G_LL: e = wire_str(&v, x->ll, sizeof(x->ll)); break;
    case G_GID_INDEX: e = wire_i32(&v, &x->gid_index); break;
    case G_GID: e = wire_str(&v, x->gid, sizeof(x->gid)); break;
    case G_GID_TYPE: e = wire_str(&v, x->gid_type, sizeof(x->gid_type)); break;
    case G_SUBNET: e = wire_str(&v, x->subnet, sizeof(x->subnet)); break;
    case G_NETDEV: e = wire_str(&v, x->netdev, sizeof(x->netdev)); break;
    case G_MTU: e = wire_i32(&v, &x->mtu); break;
    case G_SPEED: e = wire_i32(&v, &x->speed_mbps); break;
    case G_PKEY: e = wire_i32(&v, &x->pkey); break;
    case G_QOS_STATE: e = wire_i32(&v, &x->qos_state); break;
    case G_QOS: e = wire_str(&v, x->qos, sizeof(x->qos)); break;
    case G_QOS_PRIO: e = wire_i32(&v, &x->qos_prio); break;
    case G_QOS_LOSSLESS: e = wire_i32(&v, &x->qos_lossless); break;
    case G_QOS_PFC: e = wire_i32(&v, &x->qos_pfc); break;
    case G_QOS_TC: e = wire_str(&v, x->qos_tc, sizeof(x->qos_tc)); break;
    case G_QOS_FIX_TC: e = wire_i32(&v, &x->qos_fix_tc); break;
    default: break;
    }
  }
  return r == WIRE_MALFORMED || e ? EBADMSG : 0;
}

static int dec_small(struct wire_rd *g, uint16_t kind, struct probe_facts *f) {
  struct wire_rd v;
  uint16_t tag;
  enum wire_field r;
  int e = 0;
  struct probe_dev *d = kind == F_DEV ? &f->devs[f->ndev] : NULL;
  struct probe_issue *is = kind == F_ISSUE ? &f->issues[f->nissue] : NULL;
  struct probe_rec *rc = kind == F_REC ? &f->recs[f->nrec] : NULL;
  while ((r = wire_next(g, &tag, &v)) == WIRE_FIELD && !e) {
    if (d && tag == G_NAME) e = wire_str(&v, d->name, sizeof(d->name));
    else if (d && tag == G_SPEED) e = wire_i32(&v, &d->speed);
    else if (is && tag == G_SEV) e = wire_i32(&v, &is->sev);
    else if (is && tag == G_VALUE) e = wire_str(&v, is->text, sizeof(is->text));
    else if (rc && tag == G_NAME) e = wire_str(&v, rc->name, sizeof(rc->name));
    else if (rc && tag == G_VALUE) e = wire_str(&v, rc->value, sizeof(rc->value));
    else if (rc && tag == G_STATUS) e = wire_str(&v, rc->status, sizeof(rc->status));
  }
  if (r == WIRE_MALFORMED || e) return EBADMSG;
  f->ndev += d != NULL, f->nissue += is != NULL, f->nrec += rc != NULL;
  return 0;
}

/* A group field: the lists, bounded by their arrays. */
static int dec_group(uint16_t tag, struct wire_rd *v, struct probe_facts *f) {
  switch (tag) {
  case F_ENV: return dec_var(v, &f->env);
  case F_PID1: return dec_var(v, &f->pid1);
  case F_IF:
    if (f->nif == PROBE_MAX_IFS) return EBADMSG;
    return dec_if(v, &f->ifs[f->nif++]);
  case F_RDMA:
    if (f->nrdma == PROBE_MAX_RDMA) return EBADMSG;
    return dec_rdma(v, &f->rdma[f->nrdma++]);
  case F_DEV: return f->ndev == PROBE_MAX_DEVS ? EBADMSG : dec_small(v, tag, f);
  case F_ISSUE: return f->nissue == PROBE_MAX_ISSUES ? EBADMSG : dec_small(v, tag, f);
  case F_REC: return f->nrec == PROBE_MAX_RECS ? EBADMSG : dec_small(v, tag, f);
  default: return 0;
  }
}

static int dec_scalar(uint16_t tag, struct wire_rd *v, struct probe_facts *f) {
  switch (tag) {
  case F_RANK: return wire_i32(v, &f->rank);
  case F_LOCAL_RANK: return wire_i32(v, &f->local_rank);
  case F_HOST: return wire_str(v, f->host, sizeof(f->host));
  case F_PROBE_VERSION: return wire_str(v, f->probe_version, sizeof(f->probe_version));
  case F_NCCL_CODE: return wire_i32(v, &f->nccl_code);
  case F_NCCL_PATH: return wire_str(v, f->nccl_path, sizeof(f->nccl_path));
  case F_NCCL_ERR: return wire_str(v, f->nccl_err, sizeof(f->nccl_err));
  case F_PLUGIN_VERSION: return wire_str(v, f->plugin_version, sizeof(f->plugin_version));
  case F_PLUGIN_PATH: return wire_str(v, f->plugin_path, sizeof(f->plugin_path));
  case F_PLUGIN_ERR: return wire_str(v, f->plugin_err, sizeof(f->plugin_err));
  case F_ABI_MASK: return wire_i32(v, &f->abi_mask);
  case F_ABI_USED: return wire_i32(v, &f->abi_used);
  case F_PID1_OK: return wire_i32(v, &f->pid1_ok);
  case F_PID1_ERR: return wire_str(v, f->pid1_err, sizeof(f->pid1_err));
  case F_SOCK_IFS: return wire_str(v, f->sock_ifs, sizeof(f->sock_ifs));
  case F_SOCK_ERR: return wire_str(v, f->sock_err, sizeof(f->sock_err));
  case F_AUTO_IF: return wire_str(v, f->auto_if, sizeof(f->auto_if));
  case F_SOCK_MTU: return wire_i32(v, &f->sock_mtu);
  case F_RDMA_PRESENT: return wire_i32(v, &f->rdma_present);
  case F_TRANSPORT: return wire_str(v, f->transport, sizeof(f->transport));
  case F_NO_DEV: return wire_str(v, f->no_dev, sizeof(f->no_dev));
  default: return dec_group(tag, v, f);
  }
}

int wire_dec_facts(const uint8_t *body, size_t len, struct probe_facts *f, char *why, size_t cap) {
  memset(f, 0, sizeof(*f));
  f->rank = -1;
  struct wire_rd rd, v;
  uint16_t tag;
  enum wire_field r;
  wire_rd_init(&rd, body, len);
  while ((r = wire_next(&rd, &tag, &v)) == WIRE_FIELD) {
    if (dec_scalar(tag, &v, f)) {
      snprintf(why, cap, "malformed facts message: field %u", tag);
      probe_facts_free(f);
      return EBADMSG;
    }
  }
  if (r == WIRE_MALFORMED || f->rank < 0 || !f->host[0]) {
    snprintf(why, cap, "malformed facts message: %s",
             r == WIRE_MALFORMED ? "framing" : "no rank or host");
    probe_facts_free(f);
    return EBADMSG;
  }
  return 0;
}
