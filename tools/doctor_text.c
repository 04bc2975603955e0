/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag doctor: the report for people. One view of what
 * ibdev2netdev, show_gids, nvidia-smi topo -m and ip addr would say, with
 * the plugin's verdict and reason on every line. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/agree.h"
#include "tools/doctor.h"
#include "tools/doctor_plugin.h"
#include "tools/ncclconf.h"
#include "tools/textwrap.h"
#include "topo/gid.h"
#include "topo/pkey.h"

/* The destination's columns (textwrap.h); no wrapping when piped. */
static int wrap_cols;
#define WRAP (wrap_cols > 0 ? wrap_cols : 1 << 20)

/* Prints text after a prefix, wrapped at spaces, continuation lines
 * indented by indent columns. */
static void wrapped(FILE *f, const char *prefix, int indent, const char *text) {
  int col = fprintf(f, "%s", prefix);
  bool is_line_start = true; /* of the text, on this line: no space before the word */
  const char *p = text;
  while (*p == ' ') p++;
  while (*p) {
    int word = (int)strcspn(p, " ");
    if (!is_line_start && col + 1 + word > WRAP) {
      col = fprintf(f, "\n%*s", indent, "") - 1;
      is_line_start = true;
    }
    col += fprintf(f, "%s%.*s", is_line_start ? "" : " ", word, p);
    is_line_start = false;
    p += word;
    while (*p == ' ') p++;
  }
  fprintf(f, "\n");
}

static void print_header(FILE *f, const struct doctor *d) {
  const struct topo_host *h = d->h;
  const struct topo_choice *c = d->c;
  fprintf(f, "nccl-net-diag doctor on %s\n", d->hostname);
  fprintf(f, "  sysfs root     %s\n  interfaces     %s\n", h->sysfs_root, h->ifs.source);
  wrapped(f, "  PCI topology   ", 17, h->pci_source);
  char plugin[2400];
  doctor_plugin_line(plugin, sizeof(plugin));
  wrapped(f, "  NCCL plugin    ", 17, plugin);
  if (doctor_has_rdma(d))
    fprintf(f, "  transport      RDMA on %d port%s, bootstrap over %s\n",
            d->is_probed ? d->probe->nopen : c->ndev, c->ndev == 1 ? "" : "s",
            c->main_if >= 0 ? h->ifs.ifs[c->main_if].name : "nothing");
  else if (c->ndev)
    fprintf(f,
            "  transport      TCP: %d RDMA port%s chosen, but verbs cannot use %s here (see "
            "Problems)\n",
            c->ndev, c->ndev == 1 ? " is" : "s are", c->ndev == 1 ? "it" : "them");
  else wrapped(f, "  transport      TCP: ", 17, c->why_none);
}

static const char *verdict_text(const struct doctor *d, int p, char *buf, size_t cap) {
  const struct topo_port_choice *pc = &d->c->pc[p];
  if (pc->verdict == TV_CHOSEN) snprintf(buf, cap, "[%d] chosen", pc->dev);
  else snprintf(buf, cap, "not used (%s)", topo_verdict_name(pc->verdict));
  return buf;
}

static void print_gid_row(FILE *f, const struct doctor *d, int p, const struct topo_gid *g) {
  const struct topo_port *pt = &d->h->ports[p];
  char gs[64], chosen[96];
  gid_str(g->raw, gs, sizeof(gs));
  const char *why = doctor_gid_verdict(d, p, g->index);
  if (!why[0]) {
    snprintf(chosen, sizeof(chosen), "CHOSEN%s%s",
             d->c->pc[p].gid.is_forced ? " (NCCL_IB_GID_INDEX)" : "",
             d->c->pc[p].verdict == TV_CHOSEN ? "" : " for the port, which is not used");
    why = chosen;
  }
  fprintf(f, "      GID %-3d %-28s %-8s %-14s %s\n", g->index, gs,
          g->type_errno ? "unread" : gid_type_name(g->type, pt->ll), g->netdev[0] ? g->netdev : "-",
          why);
}

/* The P_Key table and the key NCCL_IB_PKEY selects. */
static void print_pkeys(FILE *f, const struct doctor *d, int p) {
  const struct topo_port *pt = &d->h->ports[p];
  if (!pt->pkey_tbl_len) return;
  char table[512], line[700], sel[64];
  pkey_table_str(pt, table, sizeof(table));
  int idx = d->c->prefs.pkey_index, v = pkey_at(pt, idx);
  if (v < 0) snprintf(sel, sizeof(sel), "past the table");
  else pkey_describe(v, sel, sizeof(sel));
  snprintf(line, sizeof(line), "%s; NCCL_IB_PKEY=%d selects %s", table, idx, sel);
  wrapped(f, "      P_Keys ", 8, line);
}

/* Under a port line: why it is not used, then its GID table. */
static void print_port_detail(FILE *f, const struct doctor *d, int p) {
  const struct topo_port *pt = &d->h->ports[p];
  const struct topo_port_choice *pc = &d->c->pc[p];
  if (pc->verdict != TV_CHOSEN) wrapped(f, "      not used: ", 8, pc->why);
  const struct topo_hca *hca = &d->h->hcas[pt->hca];
  if (hca->pf_busid[0])
    fprintf(f, "      SR-IOV virtual function of %s%s%s\n", hca->pf_busid,
            hca->pf >= 0 ? ", RDMA device " : "", hca->pf >= 0 ? d->h->hcas[hca->pf].name : "");
  if (!pt->ngid) fprintf(f, "      (no populated GID)\n");
  for (int k = 0; k < pt->ngid; k++) print_gid_row(f, d, p, &pt->gids[k]);
  bool is_populated = false;
  for (int k = 0; k < pt->ngid; k++) is_populated |= pt->gids[k].index == pc->gid.index;
  if (pc->gid.is_forced && pc->gid.index >= 0 && !is_populated)
    fprintf(f, "      GID %-3d (empty or missing; forced by NCCL_IB_GID_INDEX)\n", pc->gid.index);
  if (pt->ll == TOPO_LL_ETH && pc->gid.nccl_index != pc->gid.index && pc->verdict != TV_STATE)
    fprintf(f, "      NCCL's built-in IB transport would choose GID %d\n", pc->gid.nccl_index);
  print_pkeys(f, d, p);
}

/* "100 Gb/sec (4X EDR)" as "100G (4X EDR)": the table fits 100 columns. */
static void short_rate(const char *rate, char *buf, size_t cap) {
  const char *unit = strstr(rate, " Gb/sec");
  if (unit) snprintf(buf, cap, "%.*sG%s", (int)(unit - rate), rate, unit + 7);
  else snprintf(buf, cap, "%s", rate);
}

/* The cells of port p's row in the ports table. */
struct port_row {
  char label[80], state[48], link[16], rate[48], mtu[16], lid[16], nd[40], pci[32], numa[16];
  const char *cells[9];
};
static const char *const *port_row(const struct doctor *d, int p, struct port_row *r) {
  const struct topo_host *h = d->h;
  const struct topo_port *pt = &h->ports[p];
  const struct topo_hca *hca = &h->hcas[pt->hca];
  topo_port_label(h, p, r->label, sizeof(r->label));
  snprintf(r->state, sizeof(r->state), "%s/%s", pt->state_text, pt->phys_state_text);
  snprintf(r->link, sizeof(r->link), "%s", topo_ll_name(pt->ll));
  short_rate(pt->rate, r->rate, sizeof(r->rate));
  snprintf(r->mtu, sizeof(r->mtu), "%d", pt->active_mtu);
  snprintf(r->lid, sizeof(r->lid), "-");
  if (pt->ll == TOPO_LL_IB) snprintf(r->lid, sizeof(r->lid), "%d", pt->lid);
  snprintf(r->nd, sizeof(r->nd), "%s%s", pt->netdev[0] ? pt->netdev : "-",
           pt->netdev_up == 1   ? " (up)"
           : pt->netdev_up == 0 ? " (down)"
                                : "");
  snprintf(r->pci, sizeof(r->pci), "%s", hca->busid[0] ? hca->busid : "-");
  snprintf(r->numa, sizeof(r->numa), "%d", hca->numa);
  const char *c[9] = {r->label, r->state, r->link, r->rate, r->mtu, r->lid, r->nd, r->pci, r->numa};
  memcpy(r->cells, c, sizeof(c));
  return r->cells;
}

static void print_ports(FILE *f, const struct doctor *d) {
  const struct topo_host *h = d->h;
  fprintf(f, "\nRDMA ports and their GIDs (ibdev2netdev and show_gids in one view)\n");
  if (!h->nport) {
    wrapped(f, "  none: ", 4, h->has_rdma ? "the devices have no ports" : h->why_no_rdma);
    return;
  }
  static const char *const head[] = {"DEVICE:PORT", "STATE",  "LINK", "RATE", "MTU",
                                     "LID",         "NETDEV", "PCI",  "NUMA"};
  struct text_cols cols = {0};
  struct port_row row;
  text_cols_fit(&cols, 9, head);
  for (int p = 0; p < h->nport; p++) text_cols_fit(&cols, 9, port_row(d, p, &row));
  text_cols_print(f, &cols, head);
  fprintf(f, "\n");
  for (int p = 0; p < h->nport; p++) {
    char v[64];
    text_cols_print(f, &cols, port_row(d, p, &row));
    fprintf(f, "\n");
    wrapped(f, "      this plugin: ", 8, verdict_text(d, p, v, sizeof(v)));
    print_port_detail(f, d, p);
  }
}

static void print_devices(FILE *f, const struct doctor *d) {
  const struct topo_choice *c = d->c;
  if (!c->ndev) return;
  fprintf(f, "\nNCCL devices, in NCCL's order (by PCI bus id), pciPath as NCCL's topology reads "
             "it\n");
  for (int i = 0; i < c->ndev; i++) {
    const struct topo_dev *dv = &c->dev[i];
    char gs[64], sub[64];
    gid_str(dv->gid, gs, sizeof(gs));
    doctor_port_subnet(d, dv->port, sub, sizeof(sub));
    fprintf(f, "  [%d] %s:%d %s GID %d %s%s%s%s%s, MTU %d, %d Mb/s, NUMA %d, NCCL port %d\n", i,
            dv->name, dv->ib_port, topo_ll_name(dv->ll), dv->gid_index, gs,
            dv->netdev[0] ? " on " : "", dv->netdev, sub[0] ? " " : "", sub, dv->mtu,
            dv->speed_mbps, dv->numa, dv->ib_port + dv->real_port);
    fprintf(f, "      pciPath %s\n", dv->pci_path);
  }
}

/* What opening the chosen ports through verbs found, and GPUDirect RDMA. */
static void print_verbs(FILE *f, const struct doctor *d) {
  const struct ib_probe *pr = d->probe;
  if (!d->c->ndev) return;
  fprintf(f, "\nRDMA ports opened through verbs (as the plugin's init does)\n");
  if (!d->is_probed) {
    wrapped(f, "  not probed: ", 4, d->why_not_probed);
    return;
  }
  if (!pr->is_loaded || !pr->nport) wrapped(f, "  ", 4, pr->why);
  for (int i = 0; i < pr->nport; i++) {
    const struct ib_probe_port *pp = &pr->ports[i];
    char pre[80];
    snprintf(pre, sizeof(pre), "  %s:%d%*s", d->c->dev[pp->dev].name, d->c->dev[pp->dev].ib_port,
             (int)(14 - strlen(d->c->dev[pp->dev].name)), "");
    wrapped(f, pre, 18, pp->is_open ? "opened" : pp->why);
  }
  if (!pr->nopen) return;
  bool has_dmabuf = false;
  for (int i = 0; i < pr->nport; i++) has_dmabuf |= pr->ports[i].has_dmabuf;
  fprintf(f, "  GPUDirect RDMA %s\n", pr->has_peermem || has_dmabuf ? "on" : "off");
  wrapped(f, "    peer memory: ", 6, pr->peermem);
  for (int i = 0; i < pr->nport; i++)
    if (pr->ports[i].is_open) {
      wrapped(f, "    ", 6, pr->ports[i].dmabuf);
      break;
    }
}

static void print_matrix_legend(FILE *f, const struct doctor *d) {
  const struct topo_host *h = d->h;
  fprintf(f, "  NICs:");
  for (int i = 0; i < h->nhca; i++) {
    int p = h->hcas[i].first_port;
    char sub[64] = "";
    if (h->hcas[i].nports) doctor_port_subnet(d, p, sub, sizeof(sub));
    fprintf(f, "%s %s = %s%s%s (%s)", i ? ";" : "", h->hcas[i].name,
            h->hcas[i].nports && h->ports[p].netdev[0] ? h->ports[p].netdev : "-",
            sub[0] ? " " : "", sub,
            h->hcas[i].nports && d->c->pc[p].verdict == TV_CHOSEN ? "chosen" : "not used");
  }
  fprintf(f, "\n  PIX one PCIe switch, PXB several switches, PHB one host bridge, NODE two host "
             "bridges of one\n  NUMA node (NCCL calls it PHB), SYS across NUMA nodes: NCCL's "
             "definitions\n");
}

static void print_gpus(FILE *f, const struct doctor *d) {
  const struct topo_host *h = d->h;
  const struct topo_choice *c = d->c;
  fprintf(f, "\nGPU to NIC (nvidia-smi topo -m, with the NICs' netdevs and subnets)\n");
  if (!h->ngpu) {
    fprintf(f, "  no GPU found (%s)\n", h->pci_source); /* wrapped by text_wrap */
    return;
  }
  fprintf(f, "  %-6s", "");
  for (int i = 0; i < h->nhca; i++)
    fprintf(f, " %-*s", (int)strlen(h->hcas[i].name) < 5 ? 5 : (int)strlen(h->hcas[i].name),
            h->hcas[i].name);
  fprintf(f, "  %-13s %-4s %s\n", "CPU AFFINITY", "NUMA", "NEAREST CHOSEN");
  for (int g = 0; g < h->ngpu; g++) {
    fprintf(f, "  %-6s", h->gpus[g].name);
    for (int i = 0; i < h->nhca; i++) {
      int w = (int)strlen(h->hcas[i].name) < 5 ? 5 : (int)strlen(h->hcas[i].name);
      enum pci_class k = h->hcas[i].nports ? c->gpu_choices[g].port_classes[h->hcas[i].first_port]
                                           : PCI_CLASS_UNKNOWN;
      fprintf(f, " %-*s", w, pci_class_name(k));
    }
    char near[256] = "none";
    size_t o = 0;
    for (int k = 0; k < c->gpu_choices[g].nnearest && o < sizeof(near); k++) {
      const struct topo_dev *dv = &c->dev[c->gpu_choices[g].nearest[k]];
      char sub[64];
      doctor_port_subnet(d, dv->port, sub, sizeof(sub));
      o = strbuf_cat(near, sizeof(near), o, "%s%s:%d (%s%s%s, GID %d)", k ? ", " : "", dv->name,
                     dv->ib_port, dv->netdev[0] ? dv->netdev : "-", sub[0] ? " " : "", sub,
                     dv->gid_index);
    }
    fprintf(f, "  %-13s %-4d %s\n", h->gpus[g].cpus[0] ? h->gpus[g].cpus : "-", h->gpus[g].numa,
            near);
  }
  print_matrix_legend(f, d);
}

/* NCCL's own choice, which its bootstrap and built-in transports make
 * whatever this plugin chooses: the NCCL column above, in words. */
static void print_nccl_choice(FILE *f, const struct doctor *d) {
  const struct netif_nccl *m = &d->c->nccl_sock;
  const struct netif_list *l = &d->h->ifs;
  char line[1200], a[64];
  size_t o = 0;
  if (!m->n) {
    wrapped(f, "  NCCL's own choice: ", 4,
            "nothing (NCCL stops with 'Bootstrap : no socket "
            "interface found')");
    return;
  }
  ipaddr_str(&l->ifs[m->idx[0]].addr[m->addr[0]], a, sizeof(a));
  o = strbuf_cat(line, sizeof(line), o, "bootstrap over %s (%s), by %s; its Socket transport uses",
                 l->ifs[m->idx[0]].name, a, m->rule);
  for (int j = 0; j < m->n; j++)
    o = strbuf_cat(line, sizeof(line), o, " %s", l->ifs[m->idx[j]].name);
  for (int i = 0, first = 1; i < l->n; i++) {
    if (netif_nccl_position(m, i) >= 0) continue;
    o = strbuf_cat(line, sizeof(line), o, "%s%s (%s)", first ? "; not " : ", ", l->ifs[i].name,
                   m->why[i]);
    first = 0;
  }
  wrapped(f, "  NCCL's own choice: ", 4, line);
}

/* The addresses of an interface from column col on, as many per line as
 * fit in WRAP, the rest under the first. */
static void if_addresses(FILE *f, const struct netif *n, int col) {
  int start = col;
  if (!n->naddr) fprintf(f, "-");
  for (int k = 0; k < n->naddr; k++) {
    char a[64];
    ipaddr_cidr(&n->addr[k], a, sizeof(a));
    if (k && col + 1 + (int)strlen(a) > WRAP) col = fprintf(f, "\n%*s", start, "") - 1;
    else if (k) col += fprintf(f, " ");
    col += fprintf(f, "%s", a);
  }
  fprintf(f, "\n");
}

/* The cells of interface i's row, but its addresses. */
struct if_row {
  char state[16], mtu[16], pci[32], numa[16], nccl[16];
  const char *cells[7];
};
static const char *const *if_row(const struct doctor *d, int i, struct if_row *r) {
  const struct netif *n = &d->h->ifs.ifs[i];
  struct pci_chain ch;
  snprintf(r->state, sizeof(r->state), "%s", !n->up ? "down" : !n->running ? "no-carrier" : "up");
  snprintf(r->mtu, sizeof(r->mtu), "%d", n->mtu);
  snprintf(r->pci, sizeof(r->pci), "%s",
           pci_chain_from_path(&ch, n->pci_path, -1) == 0 ? ch.bdfs[ch.nbdf - 1] : "-");
  snprintf(r->numa, sizeof(r->numa), "%d", n->numa);
  int at = netif_nccl_position(&d->c->nccl_sock, i);
  snprintf(r->nccl, sizeof(r->nccl), "-");
  if (at == 0) snprintf(r->nccl, sizeof(r->nccl), "bootstrap");
  else if (at > 0) snprintf(r->nccl, sizeof(r->nccl), "[%d]", at);
  const char *c[7] = {n->name, r->state, r->mtu, r->pci, r->numa, r->nccl, ""};
  memcpy(r->cells, c, sizeof(c));
  return r->cells;
}

/* "      this plugin: chosen [0], main", under its interface. */
static void if_verdict(FILE *f, const struct topo_choice *c, int i) {
  char verdict[400];
  int j;
  for (j = 0; j < c->sock.n && c->sock.idx[j] != i; j++) {
  }
  if (j < c->sock.n)
    snprintf(verdict, sizeof(verdict), "chosen [%d]%s", j, i == c->main_if ? ", main" : "");
  else
    snprintf(verdict, sizeof(verdict), "not used: %s%s", c->sock.why[i],
             i == c->main_if ? "; main" : "");
  wrapped(f, "      this plugin: ", 8, verdict);
}

static void print_ifaces(FILE *f, const struct doctor *d) {
  const struct topo_host *h = d->h;
  const struct topo_choice *c = d->c;
  const char *ifn = c->prefs.socket_ifname;
  fprintf(f, "\nSocket interfaces (NCCL_SOCKET_IFNAME %s%s%s)\n",
          ifn ? "=" : "unset: NCCL's automatic choice", ifn ? ifn : "", "");
  static const char *const head[] = {"IFACE", "STATE", "MTU", "PCI", "NUMA", "NCCL", "ADDRESSES"};
  struct text_cols cols = {0};
  struct if_row row;
  text_cols_fit(&cols, 7, head);
  for (int i = 0; i < h->ifs.n; i++) text_cols_fit(&cols, 6, if_row(d, i, &row));
  text_cols_print(f, &cols, head);
  fprintf(f, "\n");
  for (int i = 0; i < h->ifs.n; i++) {
    const struct netif *n = &h->ifs.ifs[i];
    int col = text_cols_print(f, &cols, if_row(d, i, &row));
    if_addresses(f, n, col);
    if_verdict(f, c, i);
  }
  print_nccl_choice(f, d);
  if (c->main_if >= 0) {
    char line[400];
    snprintf(line, sizeof(line), "%s: %s", h->ifs.ifs[c->main_if].name, c->main_why);
    wrapped(f, "  main interface: ", 4, line);
  }
  if (c->sock.error[0]) wrapped(f, "  problem: ", 4, c->sock.error);
}

/* "  this process: NCCL_A=1 NCCL_B=x" or "...: none". */
static void print_vars(FILE *f, const char *label, const struct doctor_env *e) {
  fprintf(f, "  %s:", label);
  for (int i = 0; i < e->nvar; i++) fprintf(f, " %s=%s", e->vars[i].name, e->vars[i].value);
  if (!e->nvar) fprintf(f, " none");
  fprintf(f, "\n");
}

/* A value in quotes, or "unset". */
static void print_value(FILE *f, const char *value) {
  if (value) fprintf(f, "\"%s\"", value);
  else fprintf(f, "unset");
}

/* What each set variable means across nodes, from the must-agree table. */
static void print_agreement(FILE *f, const struct doctor_env *e) {
  for (int i = 0; i < e->nvar; i++) {
    const struct agree_entry *a = agree_lookup(e->vars[i].name);
    if (!a || (a->cls != AGREE_MUST && a->cls != AGREE_PER_HOST)) continue;
    char line[600];
    snprintf(line, sizeof(line), "%s %s: %s", e->vars[i].name,
             a->cls == AGREE_MUST ? "must be the same on every node"
                                  : "names this node's hardware: it may differ, but every node "
                                    "must select the network the others use",
             a->why);
    wrapped(f, "  ", 4, line);
  }
}

static void print_env(FILE *f, const struct doctor *d) {
  fprintf(f, "\nNCCL_* variables\n");
  char files[1024];
  ncclconf_files(files, sizeof(files));
  wrapped(f, "  NCCL's config files: ", 4,
          files[0] ? files
                   : "none (NCCL reads NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf; the "
                     "environment wins)");
  print_vars(f, "this process", &d->self);
  print_agreement(f, &d->self);
  if (!d->has_pid1) {
    wrapped(f, "  PID 1: ", 4, d->pid1_why);
  } else {
    char label[300];
    snprintf(label, sizeof(label), "PID 1 (%s)", d->pid1_src);
    print_vars(f, label, &d->pid1);
    struct doctor_difference diffs[2 * DOCTOR_MAX_VARS];
    int ndiff = doctor_env_differences(d, diffs);
    for (int i = 0; i < ndiff; i++) {
      fprintf(f, "  differs: %s: this process ", diffs[i].name);
      print_value(f, diffs[i].process);
      fprintf(f, ", PID 1 ");
      print_value(f, diffs[i].pid1);
      fprintf(f, "\n");
    }
    if (ndiff && !d->is_pid1_applied)
      fprintf(f, "  a job started by PID 1 sees PID 1's values: rerun with --pid1 to check them\n");
  }
  fprintf(f, "  evaluated with: %s\n",
          d->is_pid1_applied ? "PID 1's values (--pid1)" : "this process's values");
}

static void print_issues(FILE *f, const struct doctor *d) {
  const struct topo_host *h = d->h;
  const struct topo_choice *c = d->c;
  if (h->nnote) fprintf(f, "\nDiscovery notes (tolerated)\n");
  for (int i = 0; i < h->nnote; i++) wrapped(f, "  - ", 4, h->notes[i]);
  fprintf(f, "\nProblems\n");
  if (!c->nissue && !d->nfinding) fprintf(f, "  none\n");
  for (enum topo_severity s = TOPO_ERROR;; s--) {
    char pre[24];
    snprintf(pre, sizeof(pre), "  %-8s ", doctor_severity_name(s));
    for (int i = 0; i < c->nissue; i++) {
      if (c->issues[i].severity != s) continue;
      wrapped(f, pre, 11, c->issues[i].text);
      /* A text that already ends with its fix does not repeat it. */
      if (c->issues[i].fix && !strstr(c->issues[i].text, c->issues[i].fix))
        wrapped(f, "           fix: ", 11, c->issues[i].fix);
    }
    for (int i = 0; i < d->nfinding; i++) {
      if (d->findings[i].severity != s) continue;
      wrapped(f, pre, 11, d->findings[i].text);
      wrapped(f, "           fix: ", 11, d->findings[i].fix);
    }
    if (s == TOPO_NOTE) break;
  }
  if (c->nissue_lost)
    fprintf(f, "  %d more problem%s could not be recorded: out of memory\n", c->nissue_lost,
            c->nissue_lost == 1 ? "" : "s");
}

static void print_recs(FILE *f, const struct doctor *d) {
  const struct topo_choice *c = d->c;
  fprintf(f, "\nRecommended settings\n");
  int errors = doctor_count(d, TOPO_ERROR), warnings = doctor_count(d, TOPO_WARNING);
  if (!c->nsetting && errors)
    fprintf(f, "  none from the automatic choices: fix the errors above first\n");
  else if (!c->nsetting)
    fprintf(f, "  none needed: the automatic choices above are what NCCL should use\n");
  for (int i = 0; i < c->nsetting; i++) {
    const struct topo_setting *r = &c->settings[i];
    fprintf(f, "  export %s=%s\n", r->name, r->value);
    char pre[32];
    snprintf(pre, sizeof(pre), "      # %s: ", r->status);
    wrapped(f, pre, 8, r->why);
  }
  fprintf(f, "\nverdict: %s, %d error%s, %d warning%s; exit status %d\n", doctor_transport(d),
          errors, errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s", d->exit_status);
}

void doctor_print_text(FILE *out, const struct doctor *d) {
  struct text_wrap w;
  FILE *f = text_wrap_open(&w, out);
  wrap_cols = w.cols;
  print_header(f, d);
  print_ports(f, d);
  doctor_print_gids(f, d);
  print_devices(f, d);
  print_verbs(f, d);
  doctor_qos_text(f, d);
  print_gpus(f, d);
  print_ifaces(f, d);
  print_env(f, d);
  print_issues(f, d);
  print_recs(f, d);
  text_wrap_close(&w);
}
