/* SPDX-License-Identifier: Apache-2.0 */
/* The verbs steps of the plugin's init, run for a report (nccl-net-diag
 * doctor): load the verbs library (NCCL_DIAG_IBVERBS_LIB), list its
 * devices, open each chosen port, query its state and probe GPUDirect RDMA,
 * then close everything again. It tells "RDMA on 4 ports" from "4 ports
 * that cannot be opened here" (a container without /dev/infiniband). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/strutil.h"
#include "transport/ib/dev/ib.h"

/* Opens, queries and closes one chosen port; with a protection domain open,
 * probes dma-buf registration on it. */
static void probe_port(struct ib_probe *pr, const struct topo_dev *t, struct ibv_device *vd,
                       struct ib_probe_port *pp) {
  const struct verbs_ops *v = &pr->v;
  errno = 0;
  struct ibv_context *ctx = v->open_device(vd);
  if (!ctx) {
    pp->err = errno ? errno : ENODEV;
    ib_open_failure(t->name, pp->err, pp->why, sizeof(pp->why));
    return;
  }
  struct ibv_port_attr pa;
  pp->err = verbs_query_port(v, ctx, (uint8_t)t->ib_port, &pa);
  if (pp->err) {
    snprintf(pp->why, sizeof(pp->why), "cannot query %s port %d: %s", t->name, t->ib_port,
             strerror(pp->err));
  } else if (pa.state != IBV_PORT_ACTIVE) {
    pp->err = ENETDOWN;
    snprintf(pp->why, sizeof(pp->why), "%s port %d is not ACTIVE for verbs although sysfs said so",
             t->name, t->ib_port);
  }
  struct ibv_pd *pd = pp->err ? NULL : v->alloc_pd(ctx);
  if (pd) {
    pp->is_open = true;
    pp->has_dmabuf = ib_gdr_dmabuf(v, pd, t->name, pp->dmabuf, sizeof(pp->dmabuf));
    v->dealloc_pd(pd);
  } else if (!pp->err) {
    pp->err = errno ? errno : ENOMEM;
    snprintf(pp->why, sizeof(pp->why), "cannot allocate a protection domain on %s: %s", t->name,
             strerror(pp->err));
  }
  v->close_device(ctx);
}

int ib_probe_ports(const struct topo_choice *c, struct ib_probe *pr) {
  memset(pr, 0, sizeof(*pr));
  pr->has_peermem = ib_gdr_peermem(pr->peermem, sizeof(pr->peermem));
  if (verbs_load(&pr->v, pr->why, sizeof(pr->why))) return ENOENT;
  pr->is_loaded = true;
  int n = 0;
  errno = 0;
  struct ibv_device **list = pr->v.get_device_list(&n);
  if (!list || !n) {
    int err = errno;
    snprintf(pr->why, sizeof(pr->why),
             "%s lists no RDMA device (%s): this kernel has no RDMA support or no driver is "
             "loaded, although sysfs shows the devices",
             pr->v.lib, err ? strerror(err) : "an empty list");
    if (list) pr->v.free_device_list(list);
    return ENODEV;
  }
  for (int i = 0; i < c->ndev && i < TOPO_MAX_DEVS; i++) {
    struct ib_probe_port *pp = &pr->ports[pr->nport++];
    pp->dev = i;
    int k;
    for (k = 0; k < n && strcmp(pr->v.get_device_name(list[k]), c->dev[i].name); k++) {
    }
    if (k == n) {
      pp->err = ENODEV;
      snprintf(pp->why, sizeof(pp->why), "%s is in sysfs but not in %s's device list",
               c->dev[i].name, pr->v.lib);
      continue;
    }
    probe_port(pr, &c->dev[i], list[k], pp);
    pr->nopen += pp->is_open;
  }
  pr->v.free_device_list(list);
  return 0;
}
