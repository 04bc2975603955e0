/* SPDX-License-Identifier: Apache-2.0 */
/* softverbs: devices, ports and GID tables read from a fixture host's sysfs
 * tree (NCCL_DIAG_SYSFS_ROOT), the same files the plugin's topology code
 * reads, so both always agree. The format is tests/fixtures/README.md. */
#include "sv.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sv_sysfs_root(void) {
  const char *r = sv_env("NCCL_DIAG_SYSFS_ROOT");
  return r ? r : "/sys";
}

/* The x-diag-unreadable list of a port: files that read as EINVAL. */
struct unreadable {
  char text[4096];
};

static bool is_unreadable(const struct unreadable *u, const char *rel) {
  size_t n = strlen(rel);
  for (const char *p = u->text; (p = strstr(p, rel)) != NULL; p += n)
    if ((p == u->text || p[-1] == '\n') && (p[n] == '\n' || p[n] == 0)) return true;
  return false;
}

static int port_read(const char *pdir, const struct unreadable *u, const char *rel, char *buf,
                     size_t len) {
  if (is_unreadable(u, rel)) return EINVAL;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", pdir, rel);
  return sv_read_text(path, buf, len);
}

static long port_num(const char *pdir, const struct unreadable *u, const char *rel, long def) {
  char buf[64];
  if (port_read(pdir, u, rel, buf, sizeof buf)) return def;
  return strtol(buf, NULL, 0);
}

/* Highest numeric entry + 1 in a directory such as gids/ or pkeys/. */
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    char *end;
    long i = strtol(e->d_name, &end, 10);
    if (*e->d_name && !*end && i >= 0 && i < 4096 && i + 1 > n) n = (int)i + 1;
  }
  closedir(d);
  return n;
}

static void load_gids(const char *pdir, const struct unreadable *u, struct sv_port *p) {
  char dir[PATH_MAX], rel[64], buf[128];
  snprintf(dir, sizeof dir, "%s/gids", pdir);
  p->ngids = count_entries(dir);
  p->gids = calloc((size_t)p->ngids + 1, sizeof *p->gids);
  for (int i = 0; i < p->ngids; i++) {
    struct sv_gid *g = &p->gids[i];
    snprintf(rel, sizeof rel, "gids/%d", i);
    int err = port_read(pdir, u, rel, buf, sizeof buf);
    g->gid_unreadable = err == EINVAL;
    if (err || sv_parse_gid(buf, &g->gid)) memset(&g->gid, 0, sizeof g->gid);
    /* No type file at all is an old kernel: IB, or RoCE v1. */
    snprintf(rel, sizeof rel, "gid_attrs/types/%d", i);
    err = port_read(pdir, u, rel, buf, sizeof buf);
    g->type = p->link_layer == IBV_LINK_LAYER_INFINIBAND ? IBV_GID_TYPE_IB : IBV_GID_TYPE_ROCE_V1;
    if (err == EINVAL) g->type = -1;
    else if (!err && p->link_layer == IBV_LINK_LAYER_ETHERNET && strstr(buf, "v2"))
      g->type = IBV_GID_TYPE_ROCE_V2;
    snprintf(rel, sizeof rel, "gid_attrs/ndevs/%d", i);
    if (!port_read(pdir, u, rel, buf, sizeof buf)) {
      snprintf(g->ndev, sizeof g->ndev, "%s", buf);
      if (!p->netdev[0]) snprintf(p->netdev, sizeof p->netdev, "%s", buf);
    }
  }
}

static void load_pkeys(const char *pdir, const struct unreadable *u, struct sv_port *p) {
  char dir[PATH_MAX], rel[64];
  snprintf(dir, sizeof dir, "%s/pkeys", pdir);
  p->npkeys = count_entries(dir);
  p->pkeys = calloc((size_t)p->npkeys + 1, sizeof *p->pkeys);
  for (int i = 0; i < p->npkeys; i++) {
    snprintf(rel, sizeof rel, "pkeys/%d", i);
    p->pkeys[i] = (uint16_t)port_num(pdir, u, rel, 0);
  }
}

/* "100 Gb/sec (4X EDR)" -> IB width and speed codes, as ibv_port_attr has them. */
static void parse_rate(const char *rate, struct sv_port *p) {
  static const struct {
    const char *tok;
    uint8_t code;
  } widths[] = {{"(1X", 1}, {"(2X", 16}, {"(4X", 2}, {"(8X", 4}, {"(12X", 8}},
    speeds[] = {{"SDR", 1},  {"DDR", 2},  {"QDR", 4},  {"FDR10", 8},
                {"FDR", 16}, {"EDR", 32}, {"HDR", 64}, {"NDR", 128}};
  p->width = 2;
  p->speed = 32;
  for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++)
    if (strstr(rate, widths[i].tok)) p->width = widths[i].code;
  for (size_t i = 0; i < sizeof speeds / sizeof speeds[0]; i++)
    if (strstr(rate, speeds[i].tok)) {
      p->speed = speeds[i].code;
      break;
    }
}

static enum ibv_mtu mtu_enum(long bytes) {
  enum ibv_mtu m = IBV_MTU_256;
  for (long b = 512; b <= 4096 && b <= bytes; b *= 2) m++;
  return m;
}

/* x-diag-active_mtu when present; else 4096 on IB and, on RoCE, the
 * netdev MTU rounded down to an IB MTU (tests/fixtures/README.md). */
static void load_mtu(const char *root, const char *pdir, const struct unreadable *u,
                     struct sv_port *p) {
  long bytes = port_num(pdir, u, "x-diag-active_mtu", 0);
  if (!bytes && p->link_layer == IBV_LINK_LAYER_ETHERNET && p->netdev[0]) {
    char path[PATH_MAX], buf[32];
    snprintf(path, sizeof path, "%s/class/net/%s/mtu", root, p->netdev);
    bytes = sv_read_text(path, buf, sizeof buf) ? 1500 : strtol(buf, NULL, 10);
  }
  p->active_mtu = mtu_enum(bytes ? bytes : 4096);
}

static void load_port(struct sv_device *d, const char *pdir, int num) {
  struct sv_port *p = &d->ports[d->nports++];
  struct unreadable u = {{0}};
  char path[PATH_MAX], buf[128];
  snprintf(path, sizeof path, "%s/x-diag-unreadable", pdir);
  sv_read_text(path, u.text, sizeof u.text);
  p->num = (uint8_t)num;
  p->state = (uint8_t)port_num(pdir, &u, "state", IBV_PORT_DOWN);
  p->phys_state = (uint8_t)port_num(pdir, &u, "phys_state", 5);
  p->link_layer = IBV_LINK_LAYER_INFINIBAND;
  if (!port_read(pdir, &u, "link_layer", buf, sizeof buf) && !strcmp(buf, "Ethernet"))
    p->link_layer = IBV_LINK_LAYER_ETHERNET;
  p->lid = (uint16_t)port_num(pdir, &u, "lid", 0);
  p->sm_lid = (uint16_t)port_num(pdir, &u, "sm_lid", 0);
  p->lmc = (uint8_t)port_num(pdir, &u, "lid_mask_count", 0);
  p->cap_flags = (uint32_t)port_num(pdir, &u, "cap_mask", 0);
  parse_rate(port_read(pdir, &u, "rate", buf, sizeof buf) ? "" : buf, p);
  load_gids(pdir, &u, p);
  load_pkeys(pdir, &u, p);
  if (p->link_layer == IBV_LINK_LAYER_INFINIBAND) sv_port_find_ipoib(d->root, d->ibdev.name, p);
  load_mtu(d->root, pdir, &u, p);
}

static uint64_t parse_guid(const char *text) {
  uint64_t v = 0;
  for (const char *s = text; *s; s++) {
    if (*s == ':') continue;
    char c = *s;
    int x = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (x < 0) break;
    v = v << 4 | (uint64_t)x;
  }
  return v;
}

static uint32_t read_hex(const char *dir, const char *name) {
  char path[PATH_MAX], buf[32];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return sv_read_text(path, buf, sizeof buf) ? 0 : (uint32_t)strtoul(buf, NULL, 16);
}

static struct sv_device *load_device(const char *root, const char *name, int index) {
  struct sv_device *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  char dir[PATH_MAX], path[PATH_MAX], buf[128];
  atomic_init(&d->refs, 1);
  d->index = index;
  snprintf(d->root, sizeof d->root, "%s", root);
  snprintf(d->ibdev.name, sizeof d->ibdev.name, "%s", name);
  snprintf(d->ibdev.dev_name, sizeof d->ibdev.dev_name, "uverbs%d", index);
  snprintf(d->ibdev.dev_path, sizeof d->ibdev.dev_path, "%s/class/infiniband_verbs/uverbs%d", root,
           index);
  snprintf(dir, sizeof dir, "%s/class/infiniband/%s", root, name);
  snprintf(d->ibdev.ibdev_path, sizeof d->ibdev.ibdev_path, "%s", dir);
  d->ibdev.node_type = IBV_NODE_CA;
  d->ibdev.transport_type = IBV_TRANSPORT_IB;
  snprintf(path, sizeof path, "%s/node_guid", dir);
  d->node_guid = sv_read_text(path, buf, sizeof buf) ? 0 : parse_guid(buf);
  snprintf(path, sizeof path, "%s/sys_image_guid", dir);
  d->sys_image_guid = sv_read_text(path, buf, sizeof buf) ? d->node_guid : parse_guid(buf);
  snprintf(path, sizeof path, "%s/fw_ver", dir);
  if (sv_read_text(path, d->fw_ver, sizeof d->fw_ver))
    snprintf(d->fw_ver, sizeof d->fw_ver, "softverbs");
  snprintf(path, sizeof path, "%s/device", dir);
  d->vendor_id = read_hex(path, "vendor");
  d->vendor_part_id = read_hex(path, "device");
  for (int p = 1; p <= SV_MAX_PORTS; p++) {
    snprintf(path, sizeof path, "%s/ports/%d", dir, p);
    DIR *pd = opendir(path);
    if (!pd) break;
    closedir(pd);
    load_port(d, path, p);
  }
  return d;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists <root>/class/infiniband, sorted by name. ENOSYS when the class
 * itself is missing: that is what a kernel without RDMA answers. */
int sv_fixture_scan(const char *root, struct sv_device ***devs, int *n) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/class/infiniband", root);
  DIR *d = opendir(dir);
  if (!d) return ENOSYS;
  char *names[64];
  int count = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL && count < 64;)
    if (e->d_name[0] != '.') names[count++] = strdup(e->d_name);
  closedir(d);
  qsort(names, (size_t)count, sizeof names[0], name_cmp);
  *devs = calloc((size_t)count + 1, sizeof **devs);
  *n = 0;
  for (int i = 0; i < count; i++) {
    struct sv_device *dev = *devs ? load_device(root, names[i], i) : NULL;
    if (dev) (*devs)[(*n)++] = dev;
    free(names[i]);
  }
  return *devs ? 0 : ENOMEM;
}

void sv_device_put(struct sv_device *d) {
  if (!d || atomic_fetch_sub(&d->refs, 1) != 1) return;
  for (int i = 0; i < d->nports; i++) {
    free(d->ports[i].gids);
    free(d->ports[i].pkeys);
  }
  free(d);
}

struct sv_port *sv_device_port(struct sv_device *d, int port) {
  return port >= 1 && port <= d->nports ? &d->ports[port - 1] : NULL;
}

bool sv_port_is_down(struct sv_device *d, struct sv_port *p) {
  return p->state != IBV_PORT_ACTIVE || sv_fault_port_down(d->ibdev.name, p->num);
}
