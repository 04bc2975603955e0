/* SPDX-License-Identifier: Apache-2.0 */
/* doctor: one line per GID, as show_gids prints them (DEV PORT INDEX GID
 * IPv4 VER DEV), so a grep for an address or a netdev finds its GID. */
#include <string.h>
#include <sys/socket.h>

#include "common/addr.h"
#include "tools/doctor.h"
#include "tools/doctor_plugin.h"
#include "tools/textwrap.h"
#include "topo/gid.h"

struct gid_row {
  char port[12], index[12], gid[64], ipv4[48], ver[8], use[16];
  const char *cells[8];
};

static const char *const *gid_row(const struct doctor *d, int p, const struct topo_gid *g,
                                  struct gid_row *r) {
  const struct topo_port *pt = &d->h->ports[p];
  snprintf(r->port, sizeof(r->port), "%d", pt->num);
  snprintf(r->index, sizeof(r->index), "%d", g->index);
  gid_str(g->raw, r->gid, sizeof(r->gid));
  r->ipv4[0] = 0;
  if (pt->ll == TOPO_LL_ETH && gid_family(g->raw) == AF_INET) {
    struct ipaddr a;
    gid_to_ipaddr(g->raw, &a);
    ipaddr_str(&a, r->ipv4, sizeof(r->ipv4));
  }
  /* show_gids' VER: v1 or v2 for RoCE; IB ports have one kind of GID. */
  const char *type = g->type_errno ? "?" : gid_type_name(g->type, pt->ll);
  const char *v = strrchr(type, ' ');
  snprintf(r->ver, sizeof(r->ver), "%s", v ? v + 1 : type);
  snprintf(r->use, sizeof(r->use), "%s", doctor_gid_verdict(d, p, g->index)[0] ? "" : "chosen");
  const char *c[8] = {
    d->h->hcas[pt->hca].name,       r->port, r->index, r->gid, r->ipv4[0] ? r->ipv4 : "-", r->ver,
    g->netdev[0] ? g->netdev : "-", r->use};
  memcpy(r->cells, c, sizeof(c));
  return r->cells;
}

void doctor_print_gids(FILE *f, const struct doctor *d) {
  const struct topo_host *h = d->h;
  int n = 0;
  for (int p = 0; p < h->nport; p++) n += h->ports[p].ngid;
  if (!n) return;
  fprintf(f, "\nGIDs, one per line (as show_gids prints them; chosen: the one this plugin uses)\n");
  static const char *const head[] = {"DEV", "PORT", "INDEX", "GID", "IPv4", "VER", "DEV", ""};
  struct text_cols cols = {0};
  struct gid_row row;
  text_cols_fit(&cols, 8, head);
  for (int p = 0; p < h->nport; p++)
    for (int k = 0; k < h->ports[p].ngid; k++)
      text_cols_fit(&cols, 8, gid_row(d, p, &h->ports[p].gids[k], &row));
  text_cols_print(f, &cols, head);
  fprintf(f, "\n");
  for (int p = 0; p < h->nport; p++)
    for (int k = 0; k < h->ports[p].ngid; k++) {
      text_cols_print(f, &cols, gid_row(d, p, &h->ports[p].gids[k], &row));
      fprintf(f, "\n");
    }
}
