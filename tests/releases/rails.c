/* SPDX-License-Identifier: Apache-2.0 */
/* The rails and planes a v12 table must report (NCCL 2.30 reads them for its
 * rail- and plane-aware search and NCCL_NET_MERGE_POLICY=RAIL): a physical
 * device's are the 3rd and 4th fields of its NCCL_IB_HCA entry
 * (name:port:rail:plane; src/transport/net_ib/init.cc at v2.30.7-1); a
 * fused device's rail is its members' common rail, its plane has bit 14. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

struct hca_entry {
  char name[64];
  int port, rail, plane;
};

static int parse_hca(struct hca_entry *es, int cap, bool *is_exact) {
  const char *env = getenv("NCCL_IB_HCA");
  *is_exact = false;
  if (!env || env[0] == '^') return 0; /* an exclusion list names no rails */
  if (env[0] == '=') *is_exact = true, env++;
  char copy[1024];
  snprintf(copy, sizeof(copy), "%s", env);
  int n = 0;
  for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && n < cap;
       t = strtok_r(NULL, ",", &save)) {
    struct hca_entry *e = &es[n++];
    e->port = e->rail = e->plane = -1;
    char *f = strchr(t, ':');
    if (f) *f++ = 0;
    snprintf(e->name, sizeof(e->name), "%s", t);
    if (f) sscanf(f, "%d:%d:%d", &e->port, &e->rail, &e->plane);
  }
  return n;
}

static void expected(const struct netload_props *p, const struct hca_entry *es, int n,
                     bool is_exact, int *rail, int *plane) {
  *rail = *plane = -1;
  for (int i = 0; i < n; i++) {
    size_t len = strlen(es[i].name);
    bool name_ok = is_exact ? !strcmp(p->name, es[i].name) : !strncmp(p->name, es[i].name, len);
    /* props.port is NCCL's port + realPort, not the verbs port the entry names */
    if (name_ok) {
      *rail = es[i].rail;
      *plane = es[i].plane;
      return;
    }
  }
}

/* ncclIbGetPlaneIndex: the plane's place among the distinct planes of the
 * physical devices in order, 0 being the undefined plane. */
static int plane_index(const struct replay *rp, int plane) {
  int planes[16] = {-1}, n = 1;
  for (int d = 0; d < rp->nphys && n < 15; d++) {
    int k = 0;
    while (k < n && planes[k] != rp->props[d].plane_id) k++;
    if (k == n) planes[n++] = rp->props[d].plane_id;
  }
  for (int k = 0; k < n; k++)
    if (planes[k] == plane) return k;
  return 0;
}

static void fused(const struct replay *rp, const struct netload_props *p, int *rail, int *plane) {
  const struct netload_props *m0 = &rp->props[p->vdev_members[0]];
  *rail = m0->rail_id;
  *plane = p->vdevs > 1 ? 1 << 14 : m0->plane_id;
  for (int k = 0; k < p->vdevs && k < 8; k++) {
    const struct netload_props *m = &rp->props[p->vdev_members[k]];
    if (m->rail_id != *rail) *rail = -1;
    if (p->vdevs > 1) *plane |= 1 << plane_index(rp, m->plane_id);
  }
}

void replay_check_rails(struct replay *rp) {
  if (rp->abi < 12) return;
  struct hca_entry es[32];
  bool is_exact;
  int n = parse_hca(es, 32, &is_exact);
  for (int d = 0; d < rp->nphys + rp->nvirt; d++) {
    const struct netload_props *p = &rp->props[d];
    int rail = -1, plane = -1;
    if (d < rp->nphys) {
      expected(p, es, n, is_exact, &rail, &plane);
    } else {
      fused(rp, p, &rail, &plane);
    }
    if (p->rail_id != rail || p->plane_id != plane)
      replay_fail_as(rp, "RAILS",
                     "%s reports rail %d plane 0x%x, NCCL would have rail %d plane 0x%x", p->name,
                     p->rail_id, p->plane_id, rail, plane);
  }
}
