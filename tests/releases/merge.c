/* SPDX-License-Identifier: Apache-2.0 */
/* See merge.h. The loops follow src/graph/topo.cc at each tag in
 * releases.c; comments name where a release differs. */
#include "merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const path_names[] = {"LOC", "PORT", "PIX", "PXB", "PXN", "PHB", "SYS"};

void merge_cfg_from_env(const struct nccl_release *r, int abi, struct merge_cfg *c) {
  memset(c, 0, sizeof(*c));
  c->level = P_PORT;
  const char *lv = getenv("NCCL_NET_MERGE_LEVEL");
  for (int i = 0; lv && i <= P_SYS; i++)
    if (!strcmp(lv, path_names[i])) c->level = i;
  c->max_per_nic = release_max_devs_per_nic(r, abi);
  const char *pol = getenv("NCCL_NET_MERGE_POLICY");
  c->rail_policy = r->has_rail_policy && pol && !strcasecmp(pol, "RAIL");
  c->force = getenv("NCCL_NET_FORCE_MERGE");
}

/* The PCI components of a sysfs path after its root complex ("pci0000:00"). */
static int pci_parts(const char *path, char parts[][32], int cap) {
  const char *p = strstr(path, "/pci");
  int n = 0;
  while (p && *p && n < cap) {
    while (*p == '/') p++;
    size_t len = strcspn(p, "/");
    if (!len) break;
    snprintf(parts[n++], sizeof(parts[0]), "%.*s", (int)len, p);
    p += len;
  }
  return n;
}

enum merge_path merge_path_of(const char *a, const char *b) {
  char pa[16][32], pb[16][32];
  int na = a && *a ? pci_parts(a, pa, 16) : 0, nb = b && *b ? pci_parts(b, pb, 16) : 0;
  if (na < 2 || nb < 2) return P_SYS;
  if (strcmp(pa[0], pb[0])) return P_SYS;
  /* NCCL keys a NIC by its bus id with the function set to 0 */
  size_t la = strlen(pa[na - 1]), lb = strlen(pb[nb - 1]);
  if (na == nb && la == lb && !strncmp(pa[na - 1], pb[nb - 1], la - 1)) {
    int same = 1;
    for (int i = 0; i < na - 1; i++) same &= !strcmp(pa[i], pb[i]);
    if (same) return P_PORT;
  }
  int common = 0;
  while (common < na - 1 && common < nb - 1 && !strcmp(pa[common], pb[common])) common++;
  if (common == na - 1 && common == nb - 1) return P_PIX;
  return common > 1 ? P_PXB : P_PHB;
}

static int parse_group(char *s, char names[][64], int cap) {
  int n = 0;
  for (char *save = NULL, *t = strtok_r(s, ",", &save); t && n < cap;
       t = strtok_r(NULL, ",", &save))
    snprintf(names[n++], 64, "%s", t);
  return n;
}

/* ncclTopoForceMerge: a group that matches fewer devices than it names, or
 * that the plugin refuses, is fatal in every release that has it. */
static void force_merge(const struct nccl_release *rel, const struct merge_cfg *c,
                        const struct merge_dev *devs, int n, int *placed, merge_make_fn fn,
                        void *arg, struct merge_run *out) {
  char *copy = strdup(c->force), *save = NULL;
  for (char *g = strtok_r(copy, ";", &save); g; g = strtok_r(NULL, ";", &save)) {
    char names[8][64];
    int want = parse_group(g, names, c->max_per_nic), vd[8], nv = 0;
    for (int d = 0; d < n && nv < 8; d++)
      for (int k = 0; k < want; k++)
        if (!strcmp(devs[d].name, names[k])) vd[nv++] = d;
    int r = -1;
    if (nv == want && nv == 1 && rel->merge == MERGE_SKIP_SINGLE) r = 0; /* never passed */
    else if (nv == want) r = (out->calls++, fn(arg, nv, vd));
    if (r) {
      out->outcome = MERGE_FATAL;
      snprintf(out->why, sizeof(out->why), "NCCL_NET_FORCE_MERGE group %.100s: %s", g,
               r < 0 ? "names devices the plugin does not have" : "refused by makeVDevice");
      break;
    }
    for (int k = 0; k < nv; k++) placed[vd[k]] = 1;
  }
  free(copy);
}

/* One group from root i (ncclTopoAutoMerge's inner loop). */
static int gather(const struct merge_cfg *c, const struct merge_dev *devs, int n, int i,
                  const int *paths, int *placed, int *vd) {
  int nv = 0;
  vd[nv++] = i;
  placed[i] = 1;
  for (int j = 0; j < n; j++) {
    if (paths[i * n + j] <= c->level && !placed[j] && j != i &&
        (!c->rail_policy || (devs[i].rail_id != -1 && devs[i].rail_id == devs[j].rail_id))) {
      vd[nv++] = j;
      placed[j] = 1;
    }
    if (nv == c->max_per_nic) break;
  }
  return nv;
}

/* A refused group: unplaced, its members at PATH_DIS from the root, and the
 * scan restarted with i = 0 (the loop's i++ then makes it 1). */
static void unplace(int n, int *paths, int *placed, const int *vd, int nv) {
  placed[vd[0]] = 0;
  for (int k = 1; k < nv; k++) {
    placed[vd[k]] = 0;
    paths[vd[0] * n + vd[k]] = P_DIS;
    paths[vd[k] * n + vd[0]] = P_DIS;
  }
}

static void auto_merge(const struct nccl_release *r, const struct merge_cfg *c,
                       const struct merge_dev *devs, int n, int *placed, merge_make_fn fn,
                       void *arg, struct merge_run *out) {
  int *paths = calloc((size_t)(n * n), sizeof(int));
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      paths[i * n + j] = i == j ? P_LOC : (int)merge_path_of(devs[i].pci_path, devs[j].pci_path);
  long steps = 0, bound = 16L * n * n + 64;
  for (int i = 0; i < n; i++) {
    if (placed[i]) continue;
    if (++steps > bound) {
      out->outcome = MERGE_LOOPS;
      snprintf(out->why, sizeof(out->why),
               "the fusion loop rescanned %ld times without placing every device (NCCL spins "
               "forever here)",
               bound);
      break;
    }
    int vd[8], nv = gather(c, devs, n, i, paths, placed, vd);
    if (nv == 1 && r->merge == MERGE_SKIP_SINGLE) continue;
    out->calls++;
    int ret = fn(arg, nv, vd);
    if (!ret) continue;
    out->refused++;
    out->refused_single += nv == 1;
    if (r->merge == MERGE_ALL_FATAL) {
      if (ret != 5 /* ncclInvalidUsage: NCCLCHECKed */) continue;
      out->outcome = MERGE_FATAL;
      snprintf(out->why, sizeof(out->why),
               "makeVDevice refused a group of %d starting at %s: NCCL %s fails init", nv,
               devs[i].name, r->minor);
      break;
    }
    unplace(n, paths, placed, vd, nv);
    i = 0;
  }
  free(paths);
}

void merge_play(const struct nccl_release *r, const struct merge_cfg *c,
                const struct merge_dev *devs, int n, merge_make_fn fn, void *arg,
                struct merge_run *out) {
  memset(out, 0, sizeof(*out));
  if (r->merge == MERGE_NONE || n == 0) return;
  int *placed = calloc((size_t)n, sizeof(int));
  if (c->force) force_merge(r, c, devs, n, placed, fn, arg, out);
  if (out->outcome == MERGE_DONE) auto_merge(r, c, devs, n, placed, fn, arg, out);
  free(placed);
}
