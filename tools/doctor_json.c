/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag doctor --json: the report as one document.
 *
 * {"schema": "nccl-net-diag.doctor/1", "tool", "version", "host", "sysfs_root", "ifaddrs",
 * "pci_source", "transport": "RDMA"|"TCP", "why_tcp", "rdma_present", "hcas": [{name, busid,
 * pci_path, numa, cpus, node_guid, sys_image_guid, fw_ver, hca_type, board_id, physfn ("" unless an
 * SR-IOV virtual function)}], "ports": [{label, device, port, state, phys_state, link_layer, rate,
 * speed_mbps, width, lid, sm_lid, active_mtu, netdev, netdev_master, netdev_up, gid_tbl_len,
 * verdict, why, nccl_dev, gid_index, gid_forced, gid_auto_index, gid_nccl_index, gid_note, address,
 * subnet, nearest_gpu, gpu_class, gids: [{index, gid, type, netdev, chosen, why}], pkey_tbl_len,
 * pkey_index, pkey, pkeys: [{index, value, membership, partition}], qos (doctor_qos.c)}],
 * "devices": [NCCL order: {nccl_dev, device, port, real_port, gid_index, gid, gid_type, netdev,
 * subnet, mtu, link_layer, pci_path, numa, speed_mbps, lid, guid}], "gpus": [{name, busid, numa,
 * cpus, class, nearest:
 * [{device, port, netdev, subnet, gid_index}], distances: {<device>: class}}], "interfaces":
 * [{name, state, addresses, mtu, speed_mbps, pci_path, numa, chosen, socket_index, main, why,
 * nccl_index, nccl_address, nccl_why}], "socket": {ifname, chosen, main, main_why, error, nccl:
 * {rule, bootstrap, bootstrap_address, chosen}}, "env": {process, agreement: {NAME: class}, pid1,
 * pid1_source, pid1_error, differences: [{name, process, pid1}], evaluated_with}, "verbs": {probed,
 * why_not_probed, library, loaded, error, opened, ports: [{device, port, opened, error}]},
 * "gpudirect": {probed, enabled, peermem, dmabuf}, "notes", "problems": [{severity, text, fix}],
 * "errors", "recommendations": [{name, value, status, why, export}], "exit_status"} */
#include <stdio.h>
#include <string.h>

#include "common/agree.h"
#include "common/events.h"
#include "common/version.h"
#include "tools/doctor.h"
#include "tools/doctor_plugin.h"
#include "tools/json_out.h"
#include "topo/gid.h"
#include "topo/pkey.h"

/* doctor writes "" where a value is missing, never null. */
static void put_str(struct json *w, const char *key, const char *v) {
  json_str(w, key, v ? v : "");
}

static void put_hcas(struct json *w, const struct topo_host *h) {
  json_arr(w, "hcas");
  for (int i = 0; i < h->nhca; i++) {
    const struct topo_hca *d = &h->hcas[i];
    json_obj(w, NULL);
    put_str(w, "name", d->name);
    put_str(w, "busid", d->busid);
    put_str(w, "pci_path", d->pci_path);
    json_int(w, "numa", d->numa);
    put_str(w, "cpus", d->cpus);
    put_str(w, "node_guid", d->node_guid);
    put_str(w, "sys_image_guid", d->sys_image_guid);
    put_str(w, "fw_ver", d->fw_ver);
    put_str(w, "hca_type", d->hca_type);
    put_str(w, "board_id", d->board_id);
    put_str(w, "physfn", d->pf_busid);
    json_close_obj(w);
  }
  json_close_arr(w);
}

static void put_gids(struct json *w, const struct doctor *d, int p) {
  const struct topo_port *pt = &d->h->ports[p];
  json_arr(w, "gids");
  for (int k = 0; k < pt->ngid; k++) {
    const struct topo_gid *g = &pt->gids[k];
    char gs[64];
    gid_str(g->raw, gs, sizeof(gs));
    const char *why = doctor_gid_verdict(d, p, g->index);
    json_obj(w, NULL);
    json_int(w, "index", g->index);
    put_str(w, "gid", gs);
    put_str(w, "type", g->type_errno ? "unreadable" : gid_type_name(g->type, pt->ll));
    put_str(w, "netdev", g->netdev);
    json_bool(w, "chosen", !why[0]);
    put_str(w, "why", why);
    json_close_obj(w);
  }
  json_close_arr(w);
}

/* The P_Key table, and the key NCCL_IB_PKEY selects (-1: past the table). */
static void put_pkeys(struct json *w, const struct doctor *d, int p) {
  const struct topo_port *pt = &d->h->ports[p];
  json_int(w, "pkey_tbl_len", pt->pkey_tbl_len);
  json_int(w, "pkey_index", d->c->prefs.pkey_index);
  json_int(w, "pkey", pt->pkey_tbl_len ? pkey_at(pt, d->c->prefs.pkey_index) : -1);
  json_arr(w, "pkeys");
  for (int k = 0; k < pt->npkey; k++) {
    char v[8], part[8];
    snprintf(v, sizeof(v), "0x%04x", pt->pkeys[k].value);
    snprintf(part, sizeof(part), "0x%04x", pkey_partition(pt->pkeys[k].value));
    json_obj(w, NULL);
    json_int(w, "index", pt->pkeys[k].index);
    put_str(w, "value", v);
    put_str(w, "membership", pkey_is_full(pt->pkeys[k].value) ? "full" : "limited");
    put_str(w, "partition", part);
    json_close_obj(w);
  }
  json_close_arr(w);
}

static void put_port(struct json *w, const struct doctor *d, int p) {
  const struct topo_port *pt = &d->h->ports[p];
  const struct topo_port_choice *pc = &d->c->pc[p];
  char label[80], addr[64] = "", sub[64];
  topo_port_label(d->h, p, label, sizeof(label));
  if (pc->has_addr) ipaddr_str(&pc->addr, addr, sizeof(addr));
  doctor_port_subnet(d, p, sub, sizeof(sub));
  json_obj(w, NULL);
  put_str(w, "label", label);
  put_str(w, "device", d->h->hcas[pt->hca].name);
  json_int(w, "port", pt->num);
  put_str(w, "state", pt->state_text);
  put_str(w, "phys_state", pt->phys_state_text);
  put_str(w, "link_layer", topo_ll_name(pt->ll));
  put_str(w, "rate", pt->rate);
  json_int(w, "speed_mbps", pt->speed_mbps);
  json_int(w, "width", pt->width);
  json_int(w, "lid", pt->lid);
  json_int(w, "sm_lid", pt->sm_lid);
  json_int(w, "active_mtu", pt->active_mtu);
  put_str(w, "netdev", pt->netdev);
  put_str(w, "netdev_master", pt->netdev_master);
  json_int(w, "netdev_up", pt->netdev_up);
  json_int(w, "gid_tbl_len", pt->gid_tbl_len);
  put_str(w, "verdict", topo_verdict_name(pc->verdict));
  put_str(w, "why", pc->why);
  json_int(w, "nccl_dev", pc->dev);
  json_int(w, "gid_index", pc->gid.index);
  json_bool(w, "gid_forced", pc->gid.is_forced);
  json_int(w, "gid_auto_index", pc->gid.auto_index);
  json_int(w, "gid_nccl_index", pc->gid.nccl_index);
  put_str(w, "gid_note", pc->gid.note);
  put_str(w, "address", addr);
  put_str(w, "subnet", sub);
  put_str(w, "nearest_gpu", pc->nearest_gpu >= 0 ? d->h->gpus[pc->nearest_gpu].name : "");
  put_str(w, "gpu_class", pc->nearest_gpu >= 0 ? pci_class_name(pc->gpu_class) : "");
  put_gids(w, d, p);
  put_pkeys(w, d, p);
  doctor_qos_json(w, d, p);
  json_close_obj(w);
}

static void put_devices(struct json *w, const struct doctor *d) {
  json_arr(w, "devices");
  for (int i = 0; i < d->c->ndev; i++) {
    const struct topo_dev *dv = &d->c->dev[i];
    char gs[64], sub[64];
    gid_str(dv->gid, gs, sizeof(gs));
    doctor_port_subnet(d, dv->port, sub, sizeof(sub));
    json_obj(w, NULL);
    json_int(w, "nccl_dev", i);
    put_str(w, "device", dv->name);
    json_int(w, "port", dv->ib_port);
    json_int(w, "real_port", dv->real_port);
    json_int(w, "gid_index", dv->gid_index);
    put_str(w, "gid", gs);
    put_str(w, "gid_type", gid_type_name(dv->gid_type, dv->ll));
    put_str(w, "netdev", dv->netdev);
    put_str(w, "subnet", sub);
    json_int(w, "mtu", dv->mtu);
    put_str(w, "link_layer", topo_ll_name(dv->ll));
    put_str(w, "pci_path", dv->pci_path);
    json_int(w, "numa", dv->numa);
    json_int(w, "speed_mbps", dv->speed_mbps);
    json_int(w, "lid", dv->lid);
    put_str(w, "guid", dv->guid);
    json_close_obj(w);
  }
  json_close_arr(w);
}

static void put_gpu(struct json *w, const struct doctor *d, int g) {
  const struct topo_gpu *gpu = &d->h->gpus[g];
  const struct topo_gpu_choice *gc = &d->c->gpu_choices[g];
  json_obj(w, NULL);
  put_str(w, "name", gpu->name);
  put_str(w, "busid", gpu->busid);
  json_int(w, "numa", gpu->numa);
  put_str(w, "cpus", gpu->cpus);
  put_str(w, "class", pci_class_name(gc->nearest_class));
  json_arr(w, "nearest");
  for (int k = 0; k < gc->nnearest; k++) {
    const struct topo_dev *dv = &d->c->dev[gc->nearest[k]];
    char sub[64];
    doctor_port_subnet(d, dv->port, sub, sizeof(sub));
    json_obj(w, NULL);
    put_str(w, "device", dv->name);
    json_int(w, "port", dv->ib_port);
    put_str(w, "netdev", dv->netdev);
    put_str(w, "subnet", sub);
    json_int(w, "gid_index", dv->gid_index);
    json_close_obj(w);
  }
  json_close_arr(w);
  json_obj(w, "distances");
  for (int i = 0; i < d->h->nhca; i++)
    if (d->h->hcas[i].nports)
      put_str(w, d->h->hcas[i].name, pci_class_name(gc->port_classes[d->h->hcas[i].first_port]));
  json_close_obj(w);
  json_close_obj(w);
}

/* NCCL's own choice for interface i: its place, its address, why not. */
static void put_nccl_interface(struct json *w, const struct doctor *d, int i) {
  const struct netif_nccl *m = &d->c->nccl_sock;
  int at = netif_nccl_position(m, i);
  char a[64] = "";
  if (at >= 0) ipaddr_str(&d->h->ifs.ifs[i].addr[m->addr[at]], a, sizeof(a));
  json_int(w, "nccl_index", at);
  put_str(w, "nccl_address", a);
  put_str(w, "nccl_why", at >= 0 ? "" : m->why[i]);
}

static void put_nccl_choice(struct json *w, const struct doctor *d) {
  const struct netif_nccl *m = &d->c->nccl_sock;
  const struct netif_list *l = &d->h->ifs;
  char a[64] = "";
  if (m->n) ipaddr_str(&l->ifs[m->idx[0]].addr[m->addr[0]], a, sizeof(a));
  json_obj(w, "nccl");
  put_str(w, "rule", m->rule);
  put_str(w, "bootstrap", m->n ? l->ifs[m->idx[0]].name : "");
  put_str(w, "bootstrap_address", a);
  json_arr(w, "chosen");
  for (int j = 0; j < m->n; j++) put_str(w, NULL, l->ifs[m->idx[j]].name);
  json_close_arr(w);
  json_close_obj(w);
}

static void put_interfaces(struct json *w, const struct doctor *d) {
  const struct topo_host *h = d->h;
  const struct topo_choice *c = d->c;
  json_arr(w, "interfaces");
  for (int i = 0; i < h->ifs.n; i++) {
    const struct netif *n = &h->ifs.ifs[i];
    int j;
    for (j = 0; j < c->sock.n && c->sock.idx[j] != i; j++) {
    }
    json_obj(w, NULL);
    put_str(w, "name", n->name);
    put_str(w, "state", !n->up ? "down" : !n->running ? "nocarrier" : "up");
    json_arr(w, "addresses");
    for (int k = 0; k < n->naddr; k++) {
      char a[64];
      ipaddr_cidr(&n->addr[k], a, sizeof(a));
      put_str(w, NULL, a);
    }
    json_close_arr(w);
    json_int(w, "mtu", n->mtu);
    json_int(w, "speed_mbps", n->speed_mbps);
    put_str(w, "pci_path", n->pci_path);
    json_int(w, "numa", n->numa);
    json_bool(w, "chosen", j < c->sock.n);
    json_int(w, "socket_index", j < c->sock.n ? j : -1);
    json_bool(w, "main", i == c->main_if);
    put_str(w, "why", c->sock.why[i]);
    put_nccl_interface(w, d, i);
    json_close_obj(w);
  }
  json_close_arr(w);
  json_obj(w, "socket");
  put_str(w, "ifname", c->prefs.socket_ifname);
  json_arr(w, "chosen");
  for (int j = 0; j < c->sock.n; j++) put_str(w, NULL, h->ifs.ifs[c->sock.idx[j]].name);
  json_close_arr(w);
  put_str(w, "main", c->main_if >= 0 ? h->ifs.ifs[c->main_if].name : "");
  put_str(w, "main_why", c->main_why);
  put_str(w, "error", c->sock.error);
  put_nccl_choice(w, d);
  json_close_obj(w);
}

static void put_vars(struct json *w, const char *key, const struct doctor_env *e) {
  json_obj(w, key);
  for (int i = 0; i < e->nvar; i++) put_str(w, e->vars[i].name, e->vars[i].value);
  json_close_obj(w);
}

static void put_env(struct json *w, const struct doctor *d) {
  json_obj(w, "env");
  put_vars(w, "process", &d->self);
  json_obj(w, "agreement"); /* the must-agree table's class of each */
  for (int i = 0; i < d->self.nvar; i++) {
    const struct agree_entry *a = agree_lookup(d->self.vars[i].name);
    if (a) put_str(w, d->self.vars[i].name, agree_class_name(a->cls));
  }
  json_close_obj(w);
  if (d->has_pid1) put_vars(w, "pid1", &d->pid1);
  else json_null(w, "pid1");
  put_str(w, "pid1_source", d->pid1_src);
  put_str(w, "pid1_error", d->pid1_why);
  json_arr(w, "differences");
  struct doctor_difference diffs[2 * DOCTOR_MAX_VARS];
  int ndiff = d->has_pid1 ? doctor_env_differences(d, diffs) : 0;
  for (int i = 0; i < ndiff; i++) {
    json_obj(w, NULL);
    put_str(w, "name", diffs[i].name);
    if (diffs[i].process) put_str(w, "process", diffs[i].process);
    else json_null(w, "process");
    if (diffs[i].pid1) put_str(w, "pid1", diffs[i].pid1);
    else json_null(w, "pid1");
    json_close_obj(w);
  }
  json_close_arr(w);
  put_str(w, "evaluated_with", d->is_pid1_applied ? "pid1" : "process");
  json_close_obj(w);
}

static void put_verbs(struct json *w, const struct doctor *d) {
  const struct ib_probe *pr = d->probe;
  json_obj(w, "verbs");
  json_bool(w, "probed", d->is_probed);
  put_str(w, "why_not_probed", d->why_not_probed);
  put_str(w, "library", pr ? pr->v.lib : "");
  json_bool(w, "loaded", pr && pr->is_loaded);
  put_str(w, "error", pr ? pr->why : "");
  json_int(w, "opened", pr ? pr->nopen : 0);
  json_arr(w, "ports");
  for (int i = 0; pr && i < pr->nport; i++) {
    json_obj(w, NULL);
    put_str(w, "device", d->c->dev[pr->ports[i].dev].name);
    json_int(w, "port", d->c->dev[pr->ports[i].dev].ib_port);
    json_bool(w, "opened", pr->ports[i].is_open);
    put_str(w, "error", pr->ports[i].why);
    json_close_obj(w);
  }
  json_close_arr(w);
  json_close_obj(w);
  bool has_dmabuf = false;
  const char *dmabuf = "";
  for (int i = 0; pr && i < pr->nport; i++) {
    has_dmabuf |= pr->ports[i].has_dmabuf;
    if (pr->ports[i].is_open && !dmabuf[0]) dmabuf = pr->ports[i].dmabuf;
  }
  json_obj(w, "gpudirect");
  json_bool(w, "probed", pr && pr->nopen);
  json_bool(w, "enabled", pr && pr->nopen && (pr->has_peermem || has_dmabuf));
  put_str(w, "peermem", pr ? pr->peermem : "");
  put_str(w, "dmabuf", dmabuf);
  json_close_obj(w);
}

static void put_finding(struct json *w, const char *severity, const char *text, const char *fix) {
  json_obj(w, NULL);
  put_str(w, "severity", severity);
  put_str(w, "text", text);
  put_str(w, "fix", fix);
  json_close_obj(w);
}

static void put_advice(struct json *w, const struct doctor *d) {
  const struct topo_choice *c = d->c;
  json_arr(w, "notes");
  for (int i = 0; i < d->h->nnote; i++) put_str(w, NULL, d->h->notes[i]);
  json_close_arr(w);
  json_arr(w, "problems");
  for (int i = 0; i < c->nissue; i++)
    put_finding(w, doctor_severity_name(c->issues[i].severity), c->issues[i].text,
                c->issues[i].fix ? c->issues[i].fix : "");
  for (int i = 0; i < d->nfinding; i++)
    put_finding(w, doctor_severity_name(d->findings[i].severity), d->findings[i].text,
                d->findings[i].fix);
  if (c->nissue_lost) {
    char text[96];
    snprintf(text, sizeof(text), "%d more problems could not be recorded: out of memory",
             c->nissue_lost);
    json_obj(w, NULL);
    put_str(w, "severity", "error");
    put_str(w, "text", text);
    json_close_obj(w);
  }
  json_close_arr(w);
  json_int(w, "errors", doctor_count(d, TOPO_ERROR));
  json_arr(w, "recommendations");
  for (int i = 0; i < c->nsetting; i++) {
    char ex[512];
    snprintf(ex, sizeof(ex), "export %s=%s", c->settings[i].name, c->settings[i].value);
    json_obj(w, NULL);
    put_str(w, "name", c->settings[i].name);
    put_str(w, "value", c->settings[i].value);
    put_str(w, "status", c->settings[i].status);
    put_str(w, "why", c->settings[i].why);
    put_str(w, "export", ex);
    json_close_obj(w);
  }
  json_close_arr(w);
}

void doctor_print_json(FILE *f, const struct doctor *d) {
  const struct topo_host *h = d->h;
  struct json w;
  json_begin(&w, f);
  put_str(&w, "schema", "nccl-net-diag.doctor/1");
  put_str(&w, "tool", "nccl-net-diag doctor");
  put_str(&w, "version", DIAG_VERSION);
  put_str(&w, "host", d->hostname);
  put_str(&w, "sysfs_root", h->sysfs_root);
  put_str(&w, "ifaddrs", h->ifs.source);
  put_str(&w, "pci_source", h->pci_source);
  put_str(&w, "transport", doctor_transport(d));
  put_str(&w, "why_tcp", d->c->why_none);
  json_bool(&w, "rdma_present", h->has_rdma);
  put_hcas(&w, h);
  json_arr(&w, "ports");
  for (int p = 0; p < h->nport; p++) put_port(&w, d, p);
  json_close_arr(&w);
  put_devices(&w, d);
  put_verbs(&w, d);
  json_arr(&w, "gpus");
  for (int g = 0; g < h->ngpu; g++) put_gpu(&w, d, g);
  json_close_arr(&w);
  put_interfaces(&w, d);
  put_env(&w, d);
  doctor_plugin_json(&w);
  put_advice(&w, d);
  json_int(&w, "exit_status", d->exit_status);
  json_end(&w);
}
