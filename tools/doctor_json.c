/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag doctor --json: the report as one document.
 *
 * {"tool", "version", "host", "sysfs_root", "ifaddrs", "pci_source",
 *  "transport": "RDMA"|"TCP", "why_tcp", "rdma_present",
 *  "hcas": [{name, busid, pci_path, numa, cpus, node_guid, sys_image_guid, fw_ver, hca_type,
 *            board_id}],
 *  "ports": [{label, device, port, state, phys_state, link_layer, rate, speed_mbps, width, lid,
 *             sm_lid, active_mtu, netdev, netdev_master, netdev_up, gid_tbl_len, verdict, why,
 *             nccl_dev, gid_index, gid_forced, gid_auto_index, gid_nccl_index, gid_note,
 *             address, subnet, nearest_gpu, gpu_class,
 *             gids: [{index, gid, type, netdev, chosen, why}]}],
 *  "devices": [NCCL order: {nccl_dev, device, port, real_port, gid_index, gid, gid_type,
 *               netdev, subnet, mtu, link_layer, pci_path, numa, speed_mbps, lid, guid}],
 *  "gpus": [{name, busid, numa, cpus, class, nearest: [{device, port, netdev, subnet,
 *            gid_index}], distances: {<device>: class}}],
 *  "interfaces": [{name, state, addresses, mtu, speed_mbps, pci_path, numa, chosen,
 *                  socket_index, main, why}],
 *  "socket": {ifname, chosen, main, main_why, error},
 *  "env": {process, pid1, pid1_source, pid1_error, differences: [{name, process, pid1}],
 *          evaluated_with},
 *  "notes", "problems": [{severity, text}], "errors",
 *  "recommendations": [{name, value, status, why, export}], "exit_status"} */
#include <stdio.h>
#include <string.h>

#include "common/events.h"
#include "common/version.h"
#include "tools/doctor.h"
#include "topo/gid.h"

struct jw {
  FILE *f;
  int depth;
  int first;
};

static void jw_key(struct jw *w, const char *key) {
  fprintf(w->f, "%s\n%*s", w->first ? "" : ",", 2 * w->depth, "");
  w->first = 0;
  if (key) {
    char k[128];
    json_escape(k, sizeof(k), key);
    fprintf(w->f, "\"%s\": ", k);
  }
}

static void jw_open(struct jw *w, const char *key, char brace) {
  jw_key(w, key);
  fputc(brace, w->f);
  w->depth++;
  w->first = 1;
}

static void jw_close(struct jw *w, char brace) {
  w->depth--;
  if (!w->first) fprintf(w->f, "\n%*s", 2 * w->depth, "");
  fputc(brace, w->f);
  w->first = 0;
}

static void jw_str(struct jw *w, const char *key, const char *v) {
  static char buf[8192];
  json_escape(buf, sizeof(buf), v ? v : "");
  jw_key(w, key);
  fprintf(w->f, "\"%s\"", buf);
}

static void jw_int(struct jw *w, const char *key, long long v) {
  jw_key(w, key);
  fprintf(w->f, "%lld", v);
}

static void jw_bool(struct jw *w, const char *key, int v) {
  jw_key(w, key);
  fprintf(w->f, "%s", v ? "true" : "false");
}

static void jw_null(struct jw *w, const char *key) {
  jw_key(w, key);
  fprintf(w->f, "null");
}

static void put_hcas(struct jw *w, const struct topo_host *h) {
  jw_open(w, "hcas", '[');
  for (int i = 0; i < h->nhca; i++) {
    const struct topo_hca *d = &h->hca[i];
    jw_open(w, NULL, '{');
    jw_str(w, "name", d->name);
    jw_str(w, "busid", d->busid);
    jw_str(w, "pci_path", d->pci_path);
    jw_int(w, "numa", d->numa);
    jw_str(w, "cpus", d->cpus);
    jw_str(w, "node_guid", d->node_guid);
    jw_str(w, "sys_image_guid", d->sys_image_guid);
    jw_str(w, "fw_ver", d->fw_ver);
    jw_str(w, "hca_type", d->hca_type);
    jw_str(w, "board_id", d->board_id);
    jw_close(w, '}');
  }
  jw_close(w, ']');
}

static void put_gids(struct jw *w, const struct doctor *d, int p) {
  const struct topo_port *pt = &d->h->port[p];
  jw_open(w, "gids", '[');
  for (int k = 0; k < pt->ngid; k++) {
    const struct topo_gid *g = &pt->gid[k];
    char gs[64];
    gid_str(g->raw, gs, sizeof(gs));
    const char *why = doc_gid_verdict(d, p, g->index);
    jw_open(w, NULL, '{');
    jw_int(w, "index", g->index);
    jw_str(w, "gid", gs);
    jw_str(w, "type", g->type_err ? "unreadable" : gid_type_name(g->type, pt->ll));
    jw_str(w, "netdev", g->ndev);
    jw_bool(w, "chosen", !why[0]);
    jw_str(w, "why", why);
    jw_close(w, '}');
  }
  jw_close(w, ']');
}

static void put_port(struct jw *w, const struct doctor *d, int p) {
  const struct topo_port *pt = &d->h->port[p];
  const struct topo_port_choice *pc = &d->c->pc[p];
  char label[80], addr[64] = "", sub[64];
  topo_port_label(d->h, p, label, sizeof(label));
  if (pc->has_addr) ipaddr_str(&pc->addr, addr, sizeof(addr));
  doc_port_subnet(d, p, sub, sizeof(sub));
  jw_open(w, NULL, '{');
  jw_str(w, "label", label);
  jw_str(w, "device", d->h->hca[pt->hca].name);
  jw_int(w, "port", pt->num);
  jw_str(w, "state", pt->state_txt);
  jw_str(w, "phys_state", pt->phys_txt);
  jw_str(w, "link_layer", topo_ll_name(pt->ll));
  jw_str(w, "rate", pt->rate);
  jw_int(w, "speed_mbps", pt->speed_mbps);
  jw_int(w, "width", pt->width);
  jw_int(w, "lid", pt->lid);
  jw_int(w, "sm_lid", pt->sm_lid);
  jw_int(w, "active_mtu", pt->active_mtu);
  jw_str(w, "netdev", pt->netdev);
  jw_str(w, "netdev_master", pt->netdev_master);
  jw_int(w, "netdev_up", pt->netdev_up);
  jw_int(w, "gid_tbl_len", pt->gid_tbl_len);
  jw_str(w, "verdict", topo_verdict_name(pc->verdict));
  jw_str(w, "why", pc->why);
  jw_int(w, "nccl_dev", pc->dev);
  jw_int(w, "gid_index", pc->gid.index);
  jw_bool(w, "gid_forced", pc->gid.forced);
  jw_int(w, "gid_auto_index", pc->gid.auto_index);
  jw_int(w, "gid_nccl_index", pc->gid.nccl_index);
  jw_str(w, "gid_note", pc->gid.note);
  jw_str(w, "address", addr);
  jw_str(w, "subnet", sub);
  jw_str(w, "nearest_gpu", pc->gpu_near >= 0 ? d->h->gpu[pc->gpu_near].name : "");
  jw_str(w, "gpu_class", pc->gpu_near >= 0 ? pci_class_name(pc->gpu_class) : "");
  put_gids(w, d, p);
  jw_close(w, '}');
}

static void put_devices(struct jw *w, const struct doctor *d) {
  jw_open(w, "devices", '[');
  for (int i = 0; i < d->c->ndev; i++) {
    const struct topo_dev *dv = &d->c->dev[i];
    char gs[64], sub[64];
    gid_str(dv->gid, gs, sizeof(gs));
    doc_port_subnet(d, dv->port, sub, sizeof(sub));
    jw_open(w, NULL, '{');
    jw_int(w, "nccl_dev", i);
    jw_str(w, "device", dv->name);
    jw_int(w, "port", dv->ib_port);
    jw_int(w, "real_port", dv->real_port);
    jw_int(w, "gid_index", dv->gid_index);
    jw_str(w, "gid", gs);
    jw_str(w, "gid_type", gid_type_name(dv->gid_type, dv->ll));
    jw_str(w, "netdev", dv->netdev);
    jw_str(w, "subnet", sub);
    jw_int(w, "mtu", dv->mtu);
    jw_str(w, "link_layer", topo_ll_name(dv->ll));
    jw_str(w, "pci_path", dv->pci_path);
    jw_int(w, "numa", dv->numa);
    jw_int(w, "speed_mbps", dv->speed_mbps);
    jw_int(w, "lid", dv->lid);
    jw_str(w, "guid", dv->guid);
    jw_close(w, '}');
  }
  jw_close(w, ']');
}

static void put_gpu(struct jw *w, const struct doctor *d, int g) {
  const struct topo_gpu *gpu = &d->h->gpu[g];
  const struct topo_gpu_choice *gc = &d->c->gc[g];
  jw_open(w, NULL, '{');
  jw_str(w, "name", gpu->name);
  jw_str(w, "busid", gpu->busid);
  jw_int(w, "numa", gpu->numa);
  jw_str(w, "cpus", gpu->cpus);
  jw_str(w, "class", pci_class_name(gc->cls));
  jw_open(w, "nearest", '[');
  for (int k = 0; k < gc->nnear; k++) {
    const struct topo_dev *dv = &d->c->dev[gc->near[k]];
    char sub[64];
    doc_port_subnet(d, dv->port, sub, sizeof(sub));
    jw_open(w, NULL, '{');
    jw_str(w, "device", dv->name);
    jw_int(w, "port", dv->ib_port);
    jw_str(w, "netdev", dv->netdev);
    jw_str(w, "subnet", sub);
    jw_int(w, "gid_index", dv->gid_index);
    jw_close(w, '}');
  }
  jw_close(w, ']');
  jw_open(w, "distances", '{');
  for (int i = 0; i < d->h->nhca; i++)
    if (d->h->hca[i].nports)
      jw_str(w, d->h->hca[i].name, pci_class_name(gc->to_port[d->h->hca[i].first_port]));
  jw_close(w, '}');
  jw_close(w, '}');
}

static void put_interfaces(struct jw *w, const struct doctor *d) {
  const struct topo_host *h = d->h;
  const struct topo_choice *c = d->c;
  jw_open(w, "interfaces", '[');
  for (int i = 0; i < h->ifs.n; i++) {
    const struct netif *n = &h->ifs.ifs[i];
    int j;
    for (j = 0; j < c->sock.n && c->sock.idx[j] != i; j++) {
    }
    jw_open(w, NULL, '{');
    jw_str(w, "name", n->name);
    jw_str(w, "state", !n->up ? "down" : !n->running ? "nocarrier" : "up");
    jw_open(w, "addresses", '[');
    for (int k = 0; k < n->naddr; k++) {
      char a[64];
      ipaddr_cidr(&n->addr[k], a, sizeof(a));
      jw_str(w, NULL, a);
    }
    jw_close(w, ']');
    jw_int(w, "mtu", n->mtu);
    jw_int(w, "speed_mbps", n->speed_mbps);
    jw_str(w, "pci_path", n->pci_path);
    jw_int(w, "numa", n->numa);
    jw_bool(w, "chosen", j < c->sock.n);
    jw_int(w, "socket_index", j < c->sock.n ? j : -1);
    jw_bool(w, "main", i == c->main_if);
    jw_str(w, "why", c->sock.why[i]);
    jw_close(w, '}');
  }
  jw_close(w, ']');
  jw_open(w, "socket", '{');
  jw_str(w, "ifname", c->prefs.socket_ifname);
  jw_open(w, "chosen", '[');
  for (int j = 0; j < c->sock.n; j++) jw_str(w, NULL, h->ifs.ifs[c->sock.idx[j]].name);
  jw_close(w, ']');
  jw_str(w, "main", c->main_if >= 0 ? h->ifs.ifs[c->main_if].name : "");
  jw_str(w, "main_why", c->main_why);
  jw_str(w, "error", c->sock.error);
  jw_close(w, '}');
}

static void put_vars(struct jw *w, const char *key, const struct doc_env *e) {
  jw_open(w, key, '{');
  for (int i = 0; i < e->n; i++) jw_str(w, e->v[i].name, e->v[i].value);
  jw_close(w, '}');
}

static void put_env(struct jw *w, const struct doctor *d) {
  jw_open(w, "env", '{');
  put_vars(w, "process", &d->self);
  if (d->pid1_ok) put_vars(w, "pid1", &d->pid1);
  else jw_null(w, "pid1");
  jw_str(w, "pid1_source", d->pid1_src);
  jw_str(w, "pid1_error", d->pid1_err);
  jw_open(w, "differences", '[');
  for (int pass = 0; d->pid1_ok && pass < 2; pass++) {
    const struct doc_env *a = pass ? &d->pid1 : &d->self, *b = pass ? &d->self : &d->pid1;
    for (int i = 0; i < a->n; i++) {
      const char *other = doc_env_get(b, a->v[i].name);
      if ((pass && other) || (other && !strcmp(other, a->v[i].value))) continue;
      jw_open(w, NULL, '{');
      jw_str(w, "name", a->v[i].name);
      if (pass) jw_null(w, "process");
      else jw_str(w, "process", a->v[i].value);
      if (!pass && !other) jw_null(w, "pid1");
      else jw_str(w, "pid1", pass ? a->v[i].value : other);
      jw_close(w, '}');
    }
  }
  jw_close(w, ']');
  jw_str(w, "evaluated_with", d->pid1_applied ? "pid1" : "process");
  jw_close(w, '}');
}

static void put_advice(struct jw *w, const struct doctor *d) {
  const struct topo_choice *c = d->c;
  jw_open(w, "notes", '[');
  for (int i = 0; i < d->h->nnote; i++) jw_str(w, NULL, d->h->note[i]);
  jw_close(w, ']');
  jw_open(w, "problems", '[');
  for (int i = 0; i < c->nissue; i++) {
    jw_open(w, NULL, '{');
    jw_str(w, "severity", doc_sev_name(c->issue[i].sev));
    jw_str(w, "text", c->issue[i].text);
    jw_close(w, '}');
  }
  if (c->nissue_lost) {
    char text[96];
    snprintf(text, sizeof(text), "%d more problems could not be recorded: out of memory",
             c->nissue_lost);
    jw_open(w, NULL, '{');
    jw_str(w, "severity", "error");
    jw_str(w, "text", text);
    jw_close(w, '}');
  }
  jw_close(w, ']');
  jw_int(w, "errors", c->errors);
  jw_open(w, "recommendations", '[');
  for (int i = 0; i < c->nrec; i++) {
    char ex[512];
    snprintf(ex, sizeof(ex), "export %s=%s", c->rec[i].name, c->rec[i].value);
    jw_open(w, NULL, '{');
    jw_str(w, "name", c->rec[i].name);
    jw_str(w, "value", c->rec[i].value);
    jw_str(w, "status", c->rec[i].status);
    jw_str(w, "why", c->rec[i].why);
    jw_str(w, "export", ex);
    jw_close(w, '}');
  }
  jw_close(w, ']');
}

void doctor_print_json(FILE *f, const struct doctor *d) {
  const struct topo_host *h = d->h;
  struct jw w = {f, 0, 1};
  jw_open(&w, NULL, '{');
  jw_str(&w, "tool", "nccl-net-diag doctor");
  jw_str(&w, "version", DIAG_VERSION);
  jw_str(&w, "host", d->hostname);
  jw_str(&w, "sysfs_root", h->sysfs_root);
  jw_str(&w, "ifaddrs", h->ifs.source);
  jw_str(&w, "pci_source", h->pci_source);
  jw_str(&w, "transport", doc_transport(d));
  jw_str(&w, "why_tcp", d->c->why_none);
  jw_bool(&w, "rdma_present", h->rdma_present);
  put_hcas(&w, h);
  jw_open(&w, "ports", '[');
  for (int p = 0; p < h->nport; p++) put_port(&w, d, p);
  jw_close(&w, ']');
  put_devices(&w, d);
  jw_open(&w, "gpus", '[');
  for (int g = 0; g < h->ngpu; g++) put_gpu(&w, d, g);
  jw_close(&w, ']');
  put_interfaces(&w, d);
  put_env(&w, d);
  put_advice(&w, d);
  jw_int(&w, "exit_status", d->exit_status);
  jw_close(&w, '}');
  fputc('\n', f);
}
