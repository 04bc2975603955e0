/* SPDX-License-Identifier: Apache-2.0 */
/* A physical function and its virtual functions, all visible (SR-IOV with
 * the host's whole /sys and /dev/infiniband in a container): they are one
 * physical port. NCCL would count that port once per function, and its own
 * IB transport fuses functions of one adapter into a dual-port NIC. The
 * functions are recognised by their physfn/virtfn links, and InfiniBand
 * ports also by a shared port GUID (their GID 0). */
#include <stdio.h>
#include <string.h>

#include "topo/internal.h"

/* Whether ports p and q are one physical port seen through two functions. */
static bool same_port(const struct topo_host *h, int p, int q) {
  const struct topo_hca *a = &h->hcas[h->ports[p].hca], *b = &h->hcas[h->ports[q].hca];
  if (a == b) return false;
  if (a->pf >= 0 && &h->hcas[a->pf] == b) return true;
  if (b->pf >= 0 && &h->hcas[b->pf] == a) return true;
  if (a->pf_busid[0] && !strcmp(a->pf_busid, b->pf_busid)) return true; /* two VFs of one PF */
  const struct topo_port *x = &h->ports[p], *y = &h->ports[q];
  return x->ll == TOPO_LL_IB && y->ll == TOPO_LL_IB && x->ngid && y->ngid &&
         x->gids[0].index == 0 && y->gids[0].index == 0 &&
         !memcmp(x->gids[0].raw, y->gids[0].raw, 16);
}

/* "mlx5_2 (0000:3b:00.2, a virtual function of 0000:3b:00.0)" */
static void describe(const struct topo_host *h, int p, char *buf, size_t cap) {
  const struct topo_hca *a = &h->hcas[h->ports[p].hca];
  if (a->pf_busid[0])
    snprintf(buf, cap, "%s (%s, a virtual function of %s)", a->name, a->busid, a->pf_busid);
  else snprintf(buf, cap, "%s (%s, a physical function)", a->name, a->busid);
}

static void report_pair(const struct topo_host *h, struct topo_choice *c, int p, int q) {
  char a[128], b[128], keep[80];
  describe(h, p, a, sizeof(a));
  describe(h, q, b, sizeof(b));
  /* In a container the virtual function is usually the one meant for it. */
  int vf = h->hcas[h->ports[q].hca].pf_busid[0] ? q : p;
  snprintf(keep, sizeof(keep), "==%s", h->hcas[h->ports[vf].hca].name);
  /* An error: NCCL's numbers (bandwidth, ports of a NIC) would be wrong for
   * the whole job, not one connection. */
  struct topo_issue *is = topo_issue(
    c, TOPO_ERROR,
    "%s and %s drive one physical port: NCCL would count that port's bandwidth twice, and its "
    "built-in IB transport fuses them into one bogus dual-port NIC; expose only one of them to "
    "this host or container (NCCL_IB_HCA%s selects the virtual function), or set "
    "NCCL_IB_MERGE_NICS=0",
    a, b, keep);
  topo_issue_warn(c, is, "%s", is ? is->text : "");
  topo_issue_fix(c, is, "expose only one of %s and %s (NCCL_IB_HCA%s), or set NCCL_IB_MERGE_NICS=0",
                 h->hcas[h->ports[p].hca].name, h->hcas[h->ports[q].hca].name, keep);
}

void sriov_pass(const struct topo_host *h, struct topo_choice *c) {
  for (int p = 0; p < h->nport; p++)
    for (int q = p + 1; q < h->nport; q++)
      if (c->pc[p].verdict == TV_CHOSEN && c->pc[q].verdict == TV_CHOSEN && same_port(h, p, q))
        report_pair(h, c, p, q);
}
