/* SPDX-License-Identifier: Apache-2.0 */
/* A port whose link trained below the rate its siblings link at: ports of
 * one adapter model (its board id, the SKU) and link layer can all link at
 * the same rate, so one that links lower has lanes down (a damaged cable or
 * transceiver, a dirty connector) or came up at a lower speed (a cable
 * rated lower, the switch port's setting). NCCL spreads its channels over
 * the NICs evenly and each ring or tree moves at its slowest link: one
 * such port paces the job, and nothing in NCCL's log says so. */
#include <stdio.h>
#include <string.h>

#include "topo/internal.h"

/* The model a port's rate is compared within: its board id (the SKU:
 * one model comes as one 400G or two 200G ports), else its HCA type;
 * NULL when neither is known. */
static const char *model_of(const struct topo_host *h, int p) {
  const struct topo_hca *a = &h->hcas[h->ports[p].hca];
  return a->board_id[0] ? a->board_id : a->hca_type[0] ? a->hca_type : NULL;
}

static bool is_sibling(const struct topo_host *h, const struct topo_choice *c, int p, int q) {
  const char *m = model_of(h, p), *n = model_of(h, q);
  return p != q && c->pc[q].verdict == TV_CHOSEN && h->ports[q].speed_mbps > 0 && m && n &&
         !strcmp(m, n) && h->ports[p].ll == h->ports[q].ll;
}

/* The rate most of p's model's ports link at (p among them; a tie goes
 * to the faster): a sibling at that rate, or -1 when p has no sibling.
 * The most, not the fastest: one port that links faster than the rest
 * (the only one on a faster switch) does not make the rest slow. */
static int usual_sibling(const struct topo_host *h, const struct topo_choice *c, int p, int *nsib) {
  int best = -1, best_n = 0;
  *nsib = 0;
  for (int q = 0; q < h->nport; q++) {
    if (!is_sibling(h, c, p, q)) continue;
    (*nsib)++;
    int n = h->ports[q].speed_mbps == h->ports[p].speed_mbps;
    for (int r = 0; r < h->nport; r++)
      n += is_sibling(h, c, p, r) && h->ports[r].speed_mbps == h->ports[q].speed_mbps;
    if (n > best_n || (n == best_n && h->ports[q].speed_mbps > h->ports[best].speed_mbps))
      best = q, best_n = n;
  }
  return best;
}

/* "mlx5_0, mlx5_3, mlx5_5 and 4 more": the siblings at the usual rate;
 * returns how many they are. */
static int top_names(const struct topo_host *h, const struct topo_choice *c, int p, int top,
                     char *buf, size_t cap) {
  size_t o = 0;
  int n = 0, more = 0;
  buf[0] = 0;
  for (int q = 0; q < h->nport; q++) {
    if (!is_sibling(h, c, p, q) || h->ports[q].speed_mbps != h->ports[top].speed_mbps) continue;
    if (n++ >= 3) {
      more++;
      continue;
    }
    const struct topo_port *pt = &h->ports[q];
    const char *name = h->hcas[pt->hca].name;
    if (o + 1 >= cap) continue; /* counted, not named: the line stays in bounds */
    if (h->hcas[pt->hca].nports > 1)
      o += (size_t)snprintf(buf + o, cap - o, "%s%s:%d", n > 1 ? ", " : "", name, pt->num);
    else o += (size_t)snprintf(buf + o, cap - o, "%s%s", n > 1 ? ", " : "", name);
  }
  if (more && o + 1 < cap) snprintf(buf + o, cap - o, " and %d more", more);
  return n;
}

static void report(const struct topo_host *h, struct topo_choice *c, int p, int top, int nsib) {
  const struct topo_port *pt = &h->ports[p], *tp = &h->ports[top];
  const char *dev = h->hcas[pt->hca].name;
  char names[240], whose[400], why[200], check[200], fix[400];
  int ntop = top_names(h, c, p, top, names, sizeof(names));
  if (nsib == 1)
    snprintf(whose, sizeof(whose), "%s, the other port of its model on this host", names);
  else if (ntop == nsib)
    snprintf(whose, sizeof(whose), "%s, the %d other ports of its model on this host", names, nsib);
  else
    snprintf(whose, sizeof(whose), "%s, %d of the %d other ports of its model on this host", names,
             ntop, nsib);
  if (pt->width > 0 && tp->width > pt->width)
    snprintf(why, sizeof(why),
             "%d of its %d lanes are down (a damaged cable or transceiver, or a dirty connector)",
             tp->width - pt->width, tp->width);
  else
    snprintf(why, sizeof(why),
             "its link came up at a lower speed (a cable or transceiver rated lower, or the switch "
             "port's speed setting)");
  if (pt->ll == TOPO_LL_ETH && pt->netdev[0])
    snprintf(check, sizeof(check), "ethtool %s, mlxlink -d %s -p %d", pt->netdev, dev, pt->num);
  else
    snprintf(check, sizeof(check), "ibstat %s %d, mlxlink -d %s -p %d", dev, pt->num, dev, pt->num);
  snprintf(fix, sizeof(fix),
           "check the link (%s: its lanes, speed and cable), reseat or replace its cable or "
           "transceiver and check the switch port; it links at the full rate again only once it "
           "retrains (the port goes down and up)",
           check);
  struct topo_issue *is = topo_issue(
    c, TOPO_WARNING,
    "%s port %d links at %s, below the %s of %s: %s; NCCL spreads its channels over the NICs, and "
    "every ring and tree through this port moves at its rate",
    dev, pt->num, pt->rate, tp->rate, whose, why);
  topo_issue_warn(c, is,
                  "device %s port %d: links at %s, below the %s of %s: %s, and every ring and "
                  "tree through it moves at its rate; %s",
                  dev, pt->num, pt->rate, tp->rate, whose, why, fix);
  topo_issue_fix(c, is, "%s", fix);
}

void linkrate_pass(const struct topo_host *h, struct topo_choice *c) {
  for (int p = 0; p < h->nport; p++) {
    const struct topo_port *pt = &h->ports[p];
    if (c->pc[p].verdict != TV_CHOSEN || pt->speed_mbps <= 0) continue;
    int nsib, top = usual_sibling(h, c, p, &nsib);
    /* a tenth under: rates are whole link speeds, never near each other */
    if (top >= 0 && (double)pt->speed_mbps < 0.9 * h->ports[top].speed_mbps)
      report(h, c, p, top, nsib);
  }
}
