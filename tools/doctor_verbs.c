/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag doctor: the verbs steps of the plugin's init, on this
 * host's own devices. A sysfs copy of another host (NCCL_DIAG_SYSFS_ROOT)
 * is not probed, unless NCCL_DIAG_IBVERBS_LIB names a library that serves
 * it (the tests' softverbs). What cannot be opened here is an error: NCCL
 * would run over TCP, or with fewer devices than the other nodes. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/knobs.h"
#include "tools/doctor.h"
#include "topo/sysfs.h"

struct doctor_finding *doctor_finding(struct doctor *d, enum topo_severity s, const char *fix,
                                      const char *fmt, ...) {
  if (d->nfinding == DOCTOR_MAX_FINDINGS) return NULL;
  struct doctor_finding *f = &d->findings[d->nfinding++];
  f->severity = s;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->text, sizeof(f->text), fmt, ap);
  va_end(ap);
  snprintf(f->fix, sizeof(f->fix), "%s", fix);
  return f;
}

static const char *const fix_devices =
  "run where the devices can be opened: in a container pass /dev/infiniband (--device="
  "/dev/infiniband) and allow it in the device cgroup";

/* No port could be opened: one line with the first reason. */
static void none_opened(struct doctor *d, const struct ib_probe *pr) {
  const struct topo_choice *c = d->c;
  int same = 1;
  for (int i = 1; i < pr->nport; i++) same &= pr->ports[i].err == pr->ports[0].err;
  doctor_finding(d, TOPO_ERROR, fix_devices,
                 "%d RDMA port%s present but none can be opened here: %s%s; NCCL would run every "
                 "connection over TCP, at TCP speed",
                 c->ndev, c->ndev == 1 ? " is" : "s are", pr->ports[0].why,
                 pr->nport > 1 && same ? " (every port alike)" : "");
}

static void some_not_opened(struct doctor *d, const struct ib_probe *pr) {
  for (int i = 0; i < pr->nport; i++) {
    const struct ib_probe_port *pp = &pr->ports[i];
    if (pp->is_open) continue;
    doctor_finding(d, TOPO_ERROR, fix_devices,
                   "RDMA device %s port %d cannot be used here: %s; this node then offers NCCL %d "
                   "device%s where its peers may offer %d, and NCCL may hang",
                   d->c->dev[pp->dev].name, d->c->dev[pp->dev].ib_port, pp->why, pr->nopen,
                   pr->nopen == 1 ? "" : "s", pr->nport);
  }
}

static void gpudirect(struct doctor *d, const struct ib_probe *pr) {
  if (!d->h->ngpu || !pr->nopen || pr->has_peermem) return;
  const struct ib_probe_port *open = NULL;
  for (int i = 0; i < pr->nport; i++) {
    if (pr->ports[i].has_dmabuf) return;
    if (pr->ports[i].is_open && !open) open = &pr->ports[i];
  }
  doctor_finding(
    d, TOPO_WARNING,
    "load nvidia_peermem (modprobe nvidia_peermem; nv_peer_mem with MLNX_OFED), or use "
    "dma-buf (Linux 5.12+, rdma-core 34+, the NVIDIA open kernel modules)",
    "GPUDirect RDMA is off: %d NVIDIA GPU%s, but the NICs cannot reach GPU memory: %s; "
    "%s. NCCL would stage every GPU buffer in host memory: each byte crosses PCIe twice and "
    "network bandwidth per GPU drops well below the NICs' rate",
    d->h->ngpu, d->h->ngpu == 1 ? "" : "s", pr->peermem, open->dmabuf);
}

void doctor_probe(struct doctor *d) {
  static struct ib_probe pr;
  const struct topo_choice *c = d->c;
  if (!c->ndev) {
    snprintf(d->why_not_probed, sizeof(d->why_not_probed), "no RDMA port is chosen");
    return;
  }
  if (strcmp(sysfs_root(), "/sys") && !knob_is_set(K_DIAG_IBVERBS_LIB)) {
    snprintf(d->why_not_probed, sizeof(d->why_not_probed),
             "the sysfs root %s describes another host: its devices cannot be opened from here",
             sysfs_root());
    return;
  }
  d->is_probed = true;
  d->probe = &pr;
  if (ib_probe_ports(c, &pr)) {
    doctor_finding(d, TOPO_ERROR,
                   pr.is_loaded
                     ? "load the RDMA driver (mlx5_ib for ConnectX) or run on the host that "
                       "has the devices"
                     : "install rdma-core's libibverbs1 (or mount it into the container)",
                   "%d RDMA port%s chosen but %s; NCCL would run every connection over TCP, at TCP "
                   "speed",
                   c->ndev, c->ndev == 1 ? " is" : "s are", pr.why);
    return;
  }
  if (!pr.nopen) none_opened(d, &pr);
  else some_not_opened(d, &pr);
  gpudirect(d, &pr);
}

bool doctor_has_rdma(const struct doctor *d) {
  return d->c->ndev && (!d->is_probed || (d->probe->is_loaded && d->probe->nopen));
}

int doctor_count(const struct doctor *d, enum topo_severity s) {
  int n = 0;
  for (int i = 0; i < d->c->nissue; i++) n += d->c->issues[i].severity == s;
  for (int i = 0; i < d->nfinding; i++) n += d->findings[i].severity == s;
  return n;
}
