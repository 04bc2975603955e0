/* SPDX-License-Identifier: Apache-2.0 */
/* hwloc, opened with dlopen so the plugin keeps libc as its only NEEDED
 * library: GPUs, their CPU locality and NUMA node, and a cross-check of the
 * RDMA devices' PCI chains. Only functions resolved here with dlsym are
 * called (hwloc.h's inline helpers would reference hwloc directly); the
 * header gives the object layout, which is stable within an API major.
 *
 * Which topology: hwloc's own discovery on a live host (HWLOC_XMLFILE is
 * honoured, as by any hwloc program); with a fixture sysfs root, the XML
 * named by HWLOC_XMLFILE or topo.xml beside the root, and never this
 * machine's hardware, which would describe another host. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/knobs.h"
#include "common/strutil.h"
#include "topo/internal.h"

#ifndef DIAG_HAVE_HWLOC_H

int topo_hwloc_discover(struct topo_host *h, char *why, size_t cap) {
  (void)h;
  snprintf(why, cap, "this build has no hwloc headers");
  return ENOSYS;
}

#else
#include <hwloc.h>

struct hwloc_view {
  void *lib;
  hwloc_topology_t topo;
  unsigned (*api_version)(void);
  int (*init)(hwloc_topology_t *);
  int (*io_filter)(hwloc_topology_t, enum hwloc_type_filter_e);
  int (*set_xml)(hwloc_topology_t, const char *);
  int (*load)(hwloc_topology_t);
  void (*destroy)(hwloc_topology_t);
  int (*type_depth)(hwloc_topology_t, hwloc_obj_type_t);
  unsigned (*nbobjs)(hwloc_topology_t, int);
  hwloc_obj_t (*obj_by_depth)(hwloc_topology_t, int, unsigned);
  int (*list_snprintf)(char *, size_t, hwloc_const_bitmap_t);
  int (*bitmap_first)(hwloc_const_bitmap_t);
};

static int hwloc_view_open(struct hwloc_view *w, char *why, size_t cap) {
  static const char *const libs[] = {"libhwloc.so.15", "libhwloc.so"};
  for (size_t i = 0; i < 2 && !w->lib; i++) w->lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
  if (!w->lib) {
    snprintf(why, cap, "libhwloc.so.15 cannot be loaded (%s)", dlerror());
    return ENOENT;
  }
  struct {
    void **slot;
    const char *name;
  } syms[] = {
    {(void **)&w->api_version, "hwloc_get_api_version"},
    {(void **)&w->init, "hwloc_topology_init"},
    {(void **)&w->io_filter, "hwloc_topology_set_io_types_filter"},
    {(void **)&w->set_xml, "hwloc_topology_set_xml"},
    {(void **)&w->load, "hwloc_topology_load"},
    {(void **)&w->destroy, "hwloc_topology_destroy"},
    {(void **)&w->type_depth, "hwloc_get_type_depth"},
    {(void **)&w->nbobjs, "hwloc_get_nbobjs_by_depth"},
    {(void **)&w->obj_by_depth, "hwloc_get_obj_by_depth"},
    {(void **)&w->list_snprintf, "hwloc_bitmap_list_snprintf"},
    {(void **)&w->bitmap_first, "hwloc_bitmap_first"},
  };
  for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
    *syms[i].slot = dlsym(w->lib, syms[i].name);
    if (!*syms[i].slot) {
      snprintf(why, cap, "libhwloc lacks %s", syms[i].name);
      return ENOSYS;
    }
  }
  unsigned v = w->api_version();
  if ((v >> 16) != (HWLOC_API_VERSION >> 16)) {
    snprintf(why, cap, "libhwloc API %u.%u is not the 2.x this plugin was built for", v >> 16,
             (v >> 8) & 0xff);
    return ENOTSUP;
  }
  return 0;
}

static void hwloc_view_close(struct hwloc_view *w) {
  if (w->topo) w->destroy(w->topo);
  if (w->lib) dlclose(w->lib);
}

/* Which XML to read, "" for hwloc's own choice; ENOENT when none fits. */
static int pick_xml(const struct topo_host *h, char *xml, size_t xml_cap, char *why, size_t cap) {
  const char *env = getenv("HWLOC_XMLFILE");
  xml[0] = 0;
  if (env && *env) {
    scopy(xml, xml_cap, env);
    return 0;
  }
  if (!strcmp(h->sysfs_root, "/sys")) return 0;
  snprintf(xml, xml_cap, "%s/../topo.xml", h->sysfs_root);
  if (access(xml, R_OK) == 0) return 0;
  snprintf(why, cap,
           "the sysfs root %s is not this machine's and neither HWLOC_XMLFILE nor a topo.xml "
           "beside it describes it",
           h->sysfs_root);
  return ENOENT;
}

static void busid_of(const struct hwloc_pcidev_attr_s *p, char *buf, size_t cap) {
  snprintf(buf, cap, "%04x:%02x:%02x.%x", p->domain, p->bus, p->dev, p->func);
}

/* The chain from hwloc's parents: PCI bridges name themselves by their
 * upstream BDF, the host bridge gives the root bus ("pci0000:16"). */
static void chain_of(const struct hwloc_view *w, hwloc_obj_t o, struct pci_chain *c, char *cpus,
                     size_t cap) {
  char rev[PCI_CHAIN_MAX][PCI_BUSID_LEN];
  int n = 0;
  memset(c, 0, sizeof(*c));
  c->numa = -1;
  for (; o && (o->type == HWLOC_OBJ_PCI_DEVICE || o->type == HWLOC_OBJ_BRIDGE); o = o->parent) {
    if (o->type == HWLOC_OBJ_PCI_DEVICE && n < PCI_CHAIN_MAX) {
      busid_of(&o->attr->pcidev, rev[n++], PCI_BUSID_LEN);
    } else if (o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI && n < PCI_CHAIN_MAX) {
      busid_of(&o->attr->bridge.upstream.pci, rev[n++], PCI_BUSID_LEN);
    } else if (o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
      snprintf(c->root, sizeof(c->root), "pci%04x:%02x", o->attr->bridge.downstream.pci.domain,
               o->attr->bridge.downstream.pci.secondary_bus);
    }
  }
  for (int i = 0; i < n; i++) scopy(c->bdfs[i], PCI_BUSID_LEN, rev[n - 1 - i]);
  c->nbdf = n;
  if (o && o->nodeset) c->numa = w->bitmap_first(o->nodeset);
  if (o && o->cpuset) w->list_snprintf(cpus, cap, o->cpuset);
}

static bool is_same_chain(const struct pci_chain *a, const struct pci_chain *b) {
  if (a->nbdf != b->nbdf || strcasecmp(a->root, b->root)) return false;
  for (int i = 0; i < a->nbdf; i++)
    if (strcasecmp(a->bdfs[i], b->bdfs[i])) return false;
  return true;
}

/* A GPU, or what hwloc knows of an RDMA device; 0 or ENOMEM. */
static int take_pcidev(const struct hwloc_view *w, struct topo_host *h, hwloc_obj_t o) {
  struct topo_gpu g;
  memset(&g, 0, sizeof(g));
  busid_of(&o->attr->pcidev, g.busid, sizeof(g.busid));
  chain_of(w, o, &g.chain, g.cpus, sizeof(g.cpus));
  g.numa = g.chain.numa;
  if (gpu_is_nvidia_gpu(o->attr->pcidev.vendor_id, o->attr->pcidev.class_id)) {
    g.device_id = o->attr->pcidev.device_id;
    return gpu_add(h, &g);
  }
  for (int i = 0; i < h->nhca; i++) {
    struct topo_hca *d = &h->hcas[i];
    if (strcasecmp(d->busid, g.busid)) continue;
    if (d->chain.nbdf && !is_same_chain(&d->chain, &g.chain))
      topo_note(h,
                "%s: hwloc places %s elsewhere in the PCI tree than sysfs does; distances "
                "follow sysfs, as NCCL's do",
                d->name, d->busid);
    if (!d->chain.nbdf) d->chain = g.chain;
    if (d->numa < 0) d->numa = d->chain.numa = g.numa;
    if (!d->cpus[0]) scopy(d->cpus, sizeof(d->cpus), g.cpus);
  }
  return 0;
}

int topo_hwloc_discover(struct topo_host *h, char *why, size_t cap) {
  if (!knob_int(K_DIAG_HWLOC)) {
    snprintf(why, cap, "hwloc disabled by NCCL_DIAG_HWLOC=0");
    return ECANCELED;
  }
  char xml[PATH_MAX];
  if (pick_xml(h, xml, sizeof(xml), why, cap)) return ENOENT;
  struct hwloc_view w;
  memset(&w, 0, sizeof(w));
  int r = hwloc_view_open(&w, why, cap);
  /* hwloc sets errno on failure, not always: then say EINVAL. */
  if (!r && w.init(&w.topo)) r = errno ? errno : EINVAL, w.topo = NULL;
  if (!r) {
    w.io_filter(w.topo, HWLOC_TYPE_FILTER_KEEP_ALL);
    errno = 0;
    if ((xml[0] && w.set_xml(w.topo, xml)) || w.load(w.topo)) r = errno ? errno : EINVAL;
    if (r)
      snprintf(why, cap, "hwloc cannot load %s: %s", xml[0] ? xml : "this machine's topology",
               strerror(r));
  }
  if (!r) {
    int depth = w.type_depth(w.topo, HWLOC_OBJ_PCI_DEVICE);
    unsigned n = w.nbobjs(w.topo, depth);
    for (unsigned i = 0; i < n && !r; i++) r = take_pcidev(&w, h, w.obj_by_depth(w.topo, depth, i));
  }
  if (!r) {
    unsigned v = w.api_version();
    snprintf(h->pci_source, sizeof(h->pci_source),
             "hwloc (API %u.%u) from %s%s; distances as NCCL computes them", v >> 16,
             (v >> 8) & 0xff, xml[0] ? "XML " : "this machine", xml);
    h->is_hwloc_used = true;
  }
  hwloc_view_close(&w);
  return r;
}

#endif
