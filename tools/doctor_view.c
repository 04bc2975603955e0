/* SPDX-License-Identifier: Apache-2.0 */
/* What the printers (doctor_text.c, doctor_json.c, doctor_gids.c) ask of a
 * filled report. Kept apart from doctor.c, which runs the printers, so the
 * doctor files call each other one way. */
#include <string.h>

#include "tools/doctor.h"
#include "topo/gid.h"

const char *doctor_env_get(const struct doctor_env *e, const char *name) {
  for (int i = 0; i < e->nvar; i++)
    if (!strcmp(e->vars[i].name, name)) return e->vars[i].value;
  return NULL;
}

const char *doctor_transport(const struct doctor *d) { return doctor_has_rdma(d) ? "RDMA" : "TCP"; }

const char *doctor_severity_name(enum topo_severity s) {
  return s == TOPO_ERROR ? "error" : s == TOPO_WARNING ? "warning" : "note";
}

void doctor_port_subnet(const struct doctor *d, int port, char *buf, size_t cap) {
  const struct topo_port_choice *pc = &d->c->pc[port];
  buf[0] = 0;
  if (!pc->has_addr) return;
  if (pc->addr.prefix >= 0) ipaddr_subnet_str(&pc->addr, buf, cap);
  else ipaddr_str(&pc->addr, buf, cap);
}

const char *doctor_gid_verdict(const struct doctor *d, int port, int index) {
  const struct topo_port_choice *pc = &d->c->pc[port];
  if (pc->gid.index == index && pc->gid.index >= 0) return "";
  if (pc->gid.is_forced && pc->gid.auto_index == index)
    return "the automatic choice, but NCCL_IB_GID_INDEX forces another";
  for (int i = 0; i < pc->gid.nreject; i++)
    if (pc->gid.rejects[i].index == index) return pc->gid.rejects[i].why;
  return pc->verdict == TV_STATE || pc->verdict == TV_DISABLED ? "port not used" : "not chosen";
}

int doctor_env_differences(const struct doctor *d, struct doctor_difference *diffs) {
  int n = 0;
  for (int i = 0; i < d->self.nvar; i++) {
    const struct doctor_var *v = &d->self.vars[i];
    const char *pid1 = doctor_env_get(&d->pid1, v->name);
    if (!pid1 || strcmp(pid1, v->value))
      diffs[n++] = (struct doctor_difference){v->name, v->value, pid1};
  }
  for (int i = 0; i < d->pid1.nvar; i++) {
    const struct doctor_var *v = &d->pid1.vars[i];
    if (!doctor_env_get(&d->self, v->name))
      diffs[n++] = (struct doctor_difference){v->name, NULL, v->value};
  }
  return n;
}
