/* SPDX-License-Identifier: Apache-2.0 */
/* The lines that describe a host rather than a failure: versions, plugin,
 * settings, interfaces, RDMA devices, the per-QP address lines. Formats of
 * NCCL 2.12 to 2.30 (see the notes at each reader). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"
#include "tools/explain/corr_lines.h"

/* "NCCL version 2.19.3+cuda12.3" (INFO, or a bare line at NCCL_DEBUG=WARN
 * or VERSION), and PyTorch's "..., NCCL version 2.18.1" after an error.
 * Not "compiled with NCCL version" and other sentences. */
bool corr_parse_version(const char *text, char *ver, size_t vcap, char *full, size_t fcap) {
  for (const char *p = text; (p = strstr(p, "NCCL version ")); p++) {
    bool is_start = p == text || (p - text >= 2 && p[-2] == ',' && p[-1] == ' ');
    const char *v = p + 13;
    if (!is_start || *v < '0' || *v > '9') continue;
    char tok[48];
    text_token(v, ",)", tok, sizeof(tok));
    scopy(full, fcap, tok);
    char *plus = strchr(tok, '+');
    if (plus) *plus = 0;
    scopy(ver, vcap, tok);
    return true;
  }
  return false;
}

/* "NCCL_IB_GID_INDEX set by environment to 3." (numbers end with a dot),
 * "NCCL_SOCKET_IFNAME set by environment to eth0", "NCCL_IB_HCA set to x". */
bool corr_parse_env(const char *text, char *key, size_t kcap, char *val, size_t vcap) {
  if (strncmp(text, "NCCL_", 5)) return false;
  char name[48];
  size_t n = text_token(text, "", name, sizeof(name));
  const char *v = text + n;
  if (!strncmp(v, " set by environment to ", 23)) v += 23;
  else if (!strncmp(v, " set to ", 8)) v += 8;
  else return false;
  scopy(key, kcap, name);
  scopy(val, vcap, v);
  size_t len = strlen(val);
  bool is_number = len > 1 && val[len - 1] == '.';
  for (size_t i = 0; is_number && i + 1 < len; i++)
    if (!((val[i] >= '0' && val[i] <= '9') || (i == 0 && val[i] == '-'))) is_number = false;
  if (is_number) val[len - 1] = 0;
  return true;
}

/* A setting as a user pastes it beside the log: "export NCCL_X=v",
 * "$ NCCL_X=v torchrun ...", an env dump's "NCCL_X=v"; quotes dropped. */
static bool parse_shell_env(const char *t, char *key, size_t kcap, char *val, size_t vcap) {
  if (!strncmp(t, "$ ", 2)) t += 2;
  if (!strncmp(t, "export ", 7)) t += 7;
  if (strncmp(t, "NCCL_", 5)) return false;
  size_t n = strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
  if (t[n] != '=' || n >= kcap) return false;
  snprintf(key, kcap, "%.*s", (int)n, t);
  const char *v = t + n + 1;
  char q = (*v == '"' || *v == '\'') ? *v++ : 0;
  size_t m = q ? strcspn(v, q == '"' ? "\"" : "'") : strcspn(v, " \t;");
  snprintf(val, vcap, "%.*s", (int)m, v);
  return val[0] != 0;
}

bool corr_parse_ifaddr(const char *p, char *iface, size_t icap, char *ip, size_t ipcap) {
  char tok[128];
  text_token(p, ";", tok, sizeof(tok));
  char *colon = strchr(tok, ':'), *lt = strchr(tok, '<');
  if (!colon || !lt || lt < colon) return false;
  *colon = 0;
  scopy(iface, icap, tok);
  text_ip_of(colon + 1, ip, ipcap);
  return iface[0] && ip[0];
}

int corr_mtu_bytes(long v) {
  if (v >= 1 && v <= 5) return 256 << (v - 1);
  return v >= 256 && v <= 65536 ? (int)v : 0;
}

static void add_addr(struct corr_host *h, const char *iface, const char *ip, const struct rec *r) {
  for (int i = 0; i < h->naddrs; i++)
    if (!strcmp(h->addrs[i].ip, ip)) return;
  if (h->naddrs >= 64) return;
  struct corr_addr *v = realloc(h->addrs, (size_t)(h->naddrs + 1) * sizeof(*v));
  if (!v) return;
  h->addrs = v;
  struct corr_addr *a = &v[h->naddrs++];
  scopy(a->iface, sizeof(a->iface), iface);
  scopy(a->ip, sizeof(a->ip), ip);
  a->rec = r;
}

void corr_add_port(struct corr_host *h, const struct corr_port *p) {
  for (int i = 0; i < h->nports; i++) {
    struct corr_port *q = &h->ports[i];
    if (strcmp(q->dev, p->dev) || q->has_gid != p->has_gid ||
        (p->has_gid && memcmp(q->gid.b, p->gid.b, 16)))
      continue;
    if (!q->mtu) q->mtu = p->mtu;
    if (q->gid_index < 0) q->gid_index = p->gid_index;
    if (q->port < 0) q->port = p->port;
    return;
  }
  if (h->nports >= 256) return;
  struct corr_port *v = realloc(h->ports, (size_t)(h->nports + 1) * sizeof(*v));
  if (!v) return;
  h->ports = v;
  v[h->nports++] = *p;
  if (p->has_gid && log_gid_is_v4(&p->gid)) {
    char ip[32];
    log_gid_v4(&p->gid, ip, sizeof(ip));
    add_addr(h, p->dev, ip, p->rec);
  }
}

static void add_env(struct corr_host *h, const char *key, const char *val, const struct rec *r) {
  for (int i = 0; i < h->nenv; i++)
    if (!strcmp(h->env[i].key, key)) return;
  if (h->nenv >= 256) return;
  struct corr_kv *v = realloc(h->env, (size_t)(h->nenv + 1) * sizeof(*v));
  if (!v) return;
  h->env = v;
  struct corr_kv *kv = &v[h->nenv++];
  scopy(kv->key, sizeof(kv->key), key);
  scopy(kv->val, sizeof(kv->val), val);
  kv->rec = r;
}

/* 2.12-2.23 "NET/Plugin : No plugin found (x), using internal implementation",
 * 2.24+ "NET/Plugin: Could not find: x. Using internal network plugin.",
 * every version "NET/Plugin: Loaded net plugin NAME (vN)". */
static void read_plugin(struct corr_host *h, const struct rec *r) {
  const char *t = r->text, *p;
  if (strncmp(t, "NET/Plugin", 10)) return;
  if ((p = text_after(t, "Loaded net plugin "))) {
    /* a name may hold spaces ("AWS Libfabric"): up to " (vN)" */
    const char *abi = text_after(p, " (v");
    size_t n = abi ? (size_t)(abi - 3 - p) : strlen(p);
    if (n >= sizeof(h->plugin)) n = sizeof(h->plugin) - 1;
    memcpy(h->plugin, p, n);
    h->plugin[n] = 0;
    if (abi) abi -= 1;
    h->plugin_abi[0] = 0;
    if (abi) text_token(abi, ")", h->plugin_abi, sizeof(h->plugin_abi));
    h->plugin_rec = r;
  } else if (!h->plugin_rec && (strstr(t, "internal") || strstr(t, "No plugin found") ||
                                strstr(t, "Could not find"))) {
    scopy(h->plugin, sizeof(h->plugin), "internal");
    h->plugin_rec = r;
  }
}

/* "NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>"
 * (2.30 may add ":rail:plane" before the link layer). */
static void read_ib_using(struct corr_host *h, const struct rec *r) {
  const char *p = text_after(r->text, "NET/IB : Using ");
  if (!p) return;
  h->ib_list[0] = 0, h->nib = 0, h->ib_rec = r;
  while (*p == '[') {
    const char *close = strchr(p, ']');
    if (!close) break;
    char tok[64], name[32];
    if (!text_token(close + 1, ";", tok, sizeof(tok))) break; /* "[RO];" */
    text_token(tok, ":", name, sizeof(name));
    if (h->nib < CORR_IBDEVS_MAX) scopy(h->ib_names[h->nib], sizeof(h->ib_names[0]), name);
    h->nib++;
    if (strstr(tok, "/RoCE")) h->is_roce = true;
    size_t len = strlen(h->ib_list);
    snprintf(h->ib_list + len, sizeof(h->ib_list) - len, "%s%s", len ? " " : "", tok);
    p = close + 1 + strlen(tok);
    while (*p == ' ') p++;
  }
  const char *oob = text_after(r->text, "OOB ");
  char iface[32], ip[64];
  if (oob && corr_parse_ifaddr(oob, iface, sizeof(iface), ip, sizeof(ip)))
    add_addr(h, iface, ip, r);
}

/* "NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.1.0.1<0>" */
static void read_sock_using(struct corr_host *h, const struct rec *r) {
  const char *p = text_after(r->text, "NET/Socket : Using ");
  if (!p) return;
  h->sock_list[0] = 0, h->nsock = 0, h->sock_rec = r;
  while ((p = strchr(p, '['))) {
    const char *close = strchr(p, ']');
    if (!close) break;
    char iface[32], ip[64];
    if (corr_parse_ifaddr(close + 1, iface, sizeof(iface), ip, sizeof(ip))) {
      size_t len = strlen(h->sock_list);
      snprintf(h->sock_list + len, sizeof(h->sock_list) - len, "%s%s", len ? " " : "", iface);
      add_addr(h, iface, ip, r);
      h->nsock++;
    }
    p = close + 1;
  }
}

/* "Bootstrap : Using eth0:10.0.0.1<0>" (2.12-2.23) or "Bootstrap: Using ..." */
static void read_bootstrap(struct corr_host *h, const struct rec *r) {
  const char *p = text_after(r->text, "Bootstrap : Using ");
  if (!p) p = text_after(r->text, "Bootstrap: Using ");
  char iface[32], ip[64];
  if (!p || !corr_parse_ifaddr(p, iface, sizeof(iface), ip, sizeof(ip))) return;
  scopy(h->boot_if, sizeof(h->boot_if), iface);
  scopy(h->boot_ip, sizeof(h->boot_ip), ip);
  h->boot_rec = r;
  add_addr(h, iface, ip, r);
}

/* Per-QP address lines: "NET/IB: Dev 0 Port 1 qpn 123 mtu 5 GID 3 (0/504010AFFFF0000)"
 * (2.12-2.19), "NET/IB: NCCL Dev 0 IbDev 2 Port 1 qpn|qp_num 123 mtu 5 ... GID 3 (...)"
 * (2.21+, 2.30 with the function name first). IB ports print a LID instead. */
static void read_qp_line(struct corr_host *h, const struct rec *r) {
  const char *t = r->text, *p;
  if (strncmp(t, "NET/IB: ", 8) || !(p = text_after(t, " mtu "))) return;
  struct corr_port port = {.port = -1, .gid_index = -1, .rec = r};
  long v;
  if (text_long(p, &v)) port.mtu = corr_mtu_bytes(v);
  const char *idx = text_after(t, " IbDev ");
  if (!idx) idx = text_after(t, "NET/IB: Dev ");
  if (idx && text_long(idx, &v) && v >= 0) {
    if (v < h->nib && v < CORR_IBDEVS_MAX) scopy(port.dev, sizeof(port.dev), h->ib_names[v]);
    else snprintf(port.dev, sizeof(port.dev), "#%ld", v);
  }
  if ((p = text_after(t, " Port ")) && text_long(p, &v)) port.port = (int)v;
  if ((p = text_after(t, " GID ")) && text_long(p, &v)) {
    port.gid_index = (int)v;
    const char *open = strchr(p, '(');
    port.has_gid = open && log_gid_parse_nccl(open, &port.gid);
  }
  corr_add_port(h, &port);
}

/* The local GID of a failed QP or completion: "on dev mlx5_4:1, ... local GID
 * index 3, local GID ::ffff:10.1.4.5" (2.24+) and "localGid X ... hca NAME". */
static void read_fail_port(struct corr_host *h, const struct rec *r) {
  const char *t = r->text, *p;
  struct corr_port port = {.port = -1, .gid_index = -1, .rec = r};
  char tok[64];
  if ((p = text_after(t, "on dev "))) {
    text_token(p, ",", tok, sizeof(tok));
    char *colon = strchr(tok, ':');
    long v;
    if (colon && text_long(colon + 1, &v)) port.port = (int)v, *colon = 0;
    scopy(port.dev, sizeof(port.dev), tok);
    if ((p = text_after(t, "local GID index ")) && text_long(p, &v)) port.gid_index = (int)v;
    port.has_gid = log_gid_after(t, "local GID ", &port.gid);
  } else if ((p = text_after(t, "localGid "))) {
    port.has_gid = log_gid_parse(p, &port.gid);
    text_token(text_after(t, " hca "), ",", port.dev, sizeof(port.dev));
  }
  if (port.dev[0] && port.has_gid && !log_gid_is_zero(&port.gid)) corr_add_port(h, &port);
}

void corr_read_rec(struct corr_host *h, const struct rec *r) {
  const char *t = r->text;
  char a[48], b[160];
  if (corr_parse_version(t, a, sizeof(a), b, sizeof(b))) {
    if (!h->version[0]) {
      scopy(h->version, sizeof(h->version), a), scopy(h->version_full, sizeof(h->version_full), b);
      h->version_rec = r;
    } else if (strcmp(h->version, a) && !h->version2[0]) {
      scopy(h->version2, sizeof(h->version2), a);
      h->version2_rec = r;
    }
  }
  if (corr_parse_env(t, a, sizeof(a), b, sizeof(b)) ||
      (r->level == REC_TEXT && parse_shell_env(t, a, sizeof(a), b, sizeof(b))))
    add_env(h, a, b, r);
  /* this plugin's first line: "NET/diag libnccl-net-diag 0.1.0 (NCCL 2.28.9 in this process)" */
  if (r->is_diag && !strncmp(t, "libnccl-net-diag ", 17))
    text_token(t + 17, "", h->diag_version, sizeof(h->diag_version));
  if (!strncmp(t, "Using network ", 14)) {
    text_token(t + 14, "", h->network, sizeof(h->network));
    h->network_rec = r;
  }
  if (strstr(t, "NET/IB : No device found")) h->ib_none_rec = r;
  read_plugin(h, r);
  read_ib_using(h, r);
  read_sock_using(h, r);
  read_bootstrap(h, r);
  read_qp_line(h, r);
  if (r->level == REC_WARN) read_fail_port(h, r);
  if (r->level == REC_WARN) {
    h->nwarn++;
    if (!h->first_warn && !strstr(t, "Connection closed by")) h->first_warn = r;
  }
}
