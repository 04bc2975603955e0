/* SPDX-License-Identifier: Apache-2.0 */
/* Topology: what this host has (RDMA devices, ports, GID tables, GPUs,
 * interfaces) and how NCCL should use it, with the reason for every choice
 * and every rejected candidate.
 *
 * Three steps, all callable outside a training job (nccl-net-diag doctor
 * runs exactly what the plugin runs):
 *
 *   struct topo_host h;
 *   struct topo_choice c;
 *   topo_discover(&h, 0);          reads sysfs, interfaces and hwloc
 *   topo_decide(&h, NULL, &c);     pure: knobs (or given prefs) -> choice
 *   topo_report(&h, &c);           the plugin's log lines and events
 *   for (int i = 0; i < c.ndev; i++) use c.dev[i] (NCCL device order)
 *   topo_choice_free(&c), topo_host_free(&h);
 *
 * Both are small (the arrays are sized by what the host has), so callers
 * may keep them on the stack.
 *
 * The plugin itself uses the process-wide result of topo_process(), built
 * once (pthread_once) and read-only afterwards, so any thread may read it:
 * the IB transport takes c->dev[] as its device list (name, ib_port,
 * gid_index, gid, netdev, subnet, mtu, ll, pci_path, numa, speed_mbps, lid,
 * guid, real_port) and c->pc[] for messages. Discovery tolerates
 * every missing or unreadable file (a container with a partly mapped GID
 * table answers EINVAL) and records it in notes.
 *
 * topo_decide runs these passes, in this order (topo/decide.c); each reads
 * what the ones before it decided, records why a port was set apart and
 * the problems it finds:
 *  1. sockets (pass_sockets): NCCL_SOCKET_IFNAME with NCCL's grammar, and
 *     NCCL's own automatic choice beside ours (topo/netif_nccl.c); first,
 *     because the main interface and the advice read them;
 *  2. ports (hca_pass_ports, topo/hca.c): a port is used only when ACTIVE
 *     with an InfiniBand or Ethernet link layer, and NCCL_IB_DISABLE is
 *     not set;
 *  3. filter (hca_pass_filter): NCCL_IB_HCA selects it (NCCL's grammar,
 *     topo/filter.h);
 *  4. GIDs (pass_gids): a GID is usable (topo/gid.h): IB index 0 (1 with a
 *     routable FLID); RoCE by score or NCCL_IB_GID_INDEX;
 *  5. GPU distances (gpu_pass_distances, topo/gpu.c): every port to every
 *     GPU;
 *  6. main interface (plane_pass_main_interface, topo/plane.c): the one
 *     that carries bootstrap;
 *  7. planes (plane_pass_rules, NCCL_DIAG_PLANES=auto): a RoCE port on the
 *     bootstrap interface's subnet is set apart when other ports form a
 *     separate RDMA plane; a port far from every GPU is set apart when every
 *     GPU has a port on its own PCIe switch; a minority link layer is set
 *     apart (NCCL cannot connect InfiniBand to RoCE);
 *  8. forced GIDs (pass_forced_gids): the problem of an NCCL_IB_GID_INDEX
 *     on the ports kept; P_Keys (pkey_pass, topo/pkey.c): the key
 *     NCCL_IB_PKEY selects on each port kept, and whether it can talk;
 *     PF and VF (sriov_pass, topo/sriov.c): a physical function and one of
 *     its virtual functions both kept: one physical port seen twice; link
 *     rates (linkrate_pass, topo/linkrate.c): a port that links below the
 *     other ports of its model (lanes down, a lower speed);
 *  9. devices (hca_pass_devices): the rest, sorted by PCI bus id then port
 *     (NCCL_IB_DEVICE_PCI_ORDER), at most TOPO_MAX_DEVS (NCCL's MAX_IB_DEVS);
 * 10. GPUs (gpu_pass_nearest): each GPU's nearest devices;
 * 11. why none (pass_why_none): with no device, why, in one line;
 * 12. settings (advice_pass_settings, topo/advice.c and, for the socket
 *     interface, topo/sockadvice.c): what to export, and the problems of
 *     NCCL's own choices. */
#ifndef DIAG_TOPO_TOPO_H
#define DIAG_TOPO_TOPO_H

#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/addr.h"
#include "common/strbuf.h"
#include "topo/netif.h"
#include "topo/pcidist.h"

/* What discovery considers at most (the arrays are sized by what the host
 * has); past these, a note says what was left out. */
#define TOPO_MAX_HCAS 32
#define TOPO_MAX_PORTS 64
#define TOPO_MAX_GIDS 32 /* populated entries kept per port */
#define TOPO_MAX_GPUS 16
#define TOPO_MAX_NOTES 48
#define TOPO_NOTE_MAX 256
/* NCCL's MAX_IB_DEVS: the devices NCCL takes at most. */
#define TOPO_MAX_DEVS 32
#define TOPO_MAX_SETTINGS 6

enum topo_ll { TOPO_LL_UNKNOWN, TOPO_LL_IB, TOPO_LL_ETH };

/* gid_attrs/types: "IB/RoCE v1" (also what IB ports say) or "RoCE v2". */
enum gid_type { GID_TYPE_UNKNOWN, GID_TYPE_V1, GID_TYPE_V2 };

struct topo_gid {
  int index;
  uint8_t raw[16];
  enum gid_type type;
  int type_errno;           /* reading the type (EINVAL in containers), 0 = read */
  char netdev[IF_NAMESIZE]; /* gid_attrs/ndevs: "" when none or unreadable */
  int netdev_errno;
  /* Facts from the interface list, filled by discovery, used by scoring: */
  int netdev_up;       /* 1 up, 0 down or no carrier, -1 unknown */
  int prefix;          /* prefix of the interface address equal to this GID, -1 unknown */
  bool is_port_netdev; /* the port's own netdev (not a VLAN or macvlan on it) */
};

/* A P_Key table entry: bit 15 is full membership, the low 15 bits the
 * partition; 0x0000 and 0x8000 (partition 0) are no key. */
struct topo_pkey {
  int index;
  uint16_t value;
};

struct topo_port {
  int hca;   /* index into topo_host.hcas */
  int num;   /* port number, from 1 */
  int state; /* 4 = ACTIVE */
  char state_text[24];
  int phys_state; /* 5 = LinkUp */
  char phys_state_text[24];
  enum topo_ll ll;
  char rate[48];  /* "100 Gb/sec (4X EDR)" */
  int speed_mbps; /* 0 unknown */
  int width;      /* lanes, 0 unknown */
  int lid, sm_lid, lmc;
  int active_mtu;                  /* bytes */
  char netdev[IF_NAMESIZE];        /* "" none */
  char netdev_master[IF_NAMESIZE]; /* bond or team the netdev is enslaved to */
  int netdev_up;                   /* 1, 0, -1 unknown */
  int gid_tbl_len;                 /* entries in the table, populated or not */
  int ngid;                        /* populated entries kept in gids[] */
  bool has_more_gids;              /* than TOPO_MAX_GIDS: the rest are not considered */
  struct topo_gid *gids;           /* ngid of them */
  int pkey_tbl_len;                /* entries under pkeys/, populated or not */
  int npkey;
  struct topo_pkey *pkeys; /* the entries that hold a key, npkey of them */
};

struct topo_hca {
  char name[64];
  char busid[16];          /* "0000:1a:00.0", "" unknown */
  char pci_path[PATH_MAX]; /* realpath of class/infiniband/<dev>/device */
  int numa;
  char cpus[128]; /* local CPU list */
  char node_guid[24], sys_image_guid[24];
  char fw_ver[32], hca_type[32], board_id[32];
  struct pci_chain chain;
  int first_port, nports; /* range in topo_host.ports */
  char pf_busid[16];      /* an SR-IOV virtual function: its physical function, else "" */
  int pf;                 /* that function's RDMA device (index into hcas), -1 none */
};

struct topo_gpu {
  char busid[16];
  char name[16]; /* "GPU0" in PCI bus order, as nvidia-smi numbers them */
  unsigned device_id;
  int numa;
  char cpus[128];
  struct pci_chain chain;
};

struct topo_host {
  char sysfs_root[PATH_MAX];
  bool has_rdma;         /* class/infiniband lists a device */
  char why_no_rdma[256]; /* when not: why, for one INFO line */
  int nhca;
  struct topo_hca *hcas; /* nhca of them */
  int nport;
  struct topo_port *ports; /* nport of them, each device's ports together */
  bool has_gpu_list;       /* GPU discovery ran: no GPU in it means none */
  int ngpu;
  struct topo_gpu *gpus; /* ngpu of them, in PCI bus order */
  char pci_source[320];  /* "hwloc 2.9.0 (XML ...)" or "sysfs PCI paths (...)" */
  bool is_hwloc_used;
  struct netif_list ifs;
  char default_route_if[IF_NAMESIZE]; /* live hosts only, "" unknown */
  int nnote;                          /* unreadable or missing entries, tolerated */
  char **notes;                       /* nnote of them */
};

enum { TOPO_WANT_GPUS = 1 }; /* discover GPUs even on a host without RDMA */

/* Fills *h (its previous content is ignored). 0, or an errno when nothing
 * could be discovered (the interface list failed, or memory ran out; WARN
 * logged); release with topo_host_free() either way. Missing RDMA or GPUs
 * is not an error. */
int topo_discover(struct topo_host *h, int flags);
void topo_host_free(struct topo_host *h);

/* ---------------------------------------------------------------- choice */

struct topo_prefs {
  const char *hca_filter;    /* NCCL_IB_HCA, NULL = all */
  int gid_index;             /* NCCL_IB_GID_INDEX, -1 = automatic */
  int addr_family;           /* NCCL_IB_ADDR_FAMILY: AF_INET or AF_INET6 */
  const char *addr_range;    /* NCCL_IB_ADDR_RANGE, NULL = any */
  int roce_version;          /* NCCL_IB_ROCE_VERSION_NUM: 1 or 2 */
  const char *socket_ifname; /* NCCL_SOCKET_IFNAME, NULL = automatic */
  int socket_family;         /* NCCL_SOCKET_FAMILY: AF_INET, AF_INET6, AF_UNSPEC */
  bool is_planes_auto;       /* NCCL_DIAG_PLANES=auto (not off) */
  bool is_ib_disabled;       /* NCCL_IB_DISABLE=1 */
  int pkey_index;            /* NCCL_IB_PKEY: an index into each port's P_Key table */
};
/* The prefs the knob table holds now. */
void topo_prefs_from_knobs(struct topo_prefs *p);

enum topo_verdict {
  TV_CHOSEN,
  TV_STATE,    /* not ACTIVE, or unknown link layer */
  TV_FILTER,   /* NCCL_IB_HCA */
  TV_GID,      /* no usable GID */
  TV_PLANE,    /* plane rules */
  TV_LIMIT,    /* more than TOPO_MAX_DEVS */
  TV_DISABLED, /* NCCL_IB_DISABLE=1 */
};

struct topo_gid_reject {
  int index;
  char why[200];
};

/* A GID pick for one port: the chosen index (-1 = none) and the verdict on
 * every other populated entry. */
struct gid_pick {
  int index;
  int score;
  bool is_forced; /* index came from NCCL_IB_GID_INDEX */
  int auto_index; /* what the automatic choice picks, -1 none */
  int nccl_index; /* what NCCL's built-in IB transport picks */
  int severity;   /* of note: 0 none, 1 warning, 2 error */
  char note[480]; /* refusal reason, or the forced index's problem */
  char hint[96];  /* a knob setting that would make a GID usable */
  int nreject;
  struct topo_gid_reject *rejects; /* the caller's room for one per populated entry */
};

struct topo_port_choice {
  enum topo_verdict verdict;
  char why[1280];        /* "" when chosen */
  bool is_user_selected; /* an include-list NCCL_IB_HCA entry named it */
  bool is_off_plane;     /* the plane rules set it apart (kept only if the user named it) */
  int rail, plane;       /* NCCL_IB_HCA 3rd/4th fields, -1 none */
  struct gid_pick gid;
  struct ipaddr addr; /* the chosen GID's address, prefix when known */
  bool has_addr;
  int dev;                  /* index into topo_choice.dev, -1 */
  enum pci_class gpu_class; /* distance to the nearest GPU, PCI_CLASS_UNKNOWN none */
  int nearest_gpu;          /* index of that GPU, -1 */
  int pkey;                 /* the P_Key at NCCL_IB_PKEY, -1 past the table (0 = empty) */
};

/* One device for NCCL: what the IB transport needs, in NCCL device order. */
struct topo_dev {
  int port;         /* index into topo_host.ports */
  int hca;          /* index into topo_host.hcas */
  const char *name; /* the RDMA device, points into the host */
  int ib_port;      /* the verbs port number */
  int real_port;    /* earlier devices on the same PCI device (NCCL's realPort) */
  int gid_index;
  uint8_t gid[16];
  enum gid_type gid_type;
  const char *netdev;   /* "" none (IB without IPoIB) */
  struct ipaddr subnet; /* the GID's address with its prefix; family 0 on IB */
  int mtu;              /* active MTU, bytes */
  enum topo_ll ll;
  const char *pci_path; /* real sysfs path, as NCCL's topology reads it */
  int numa;
  int speed_mbps;
  int lid;
  const char *guid; /* sys_image_guid: ports of one ASIC share it */
  int rail, plane;
  int off_plane; /* this host's layout sets it apart; the user forced it */
  bool is_vf;    /* an SR-IOV virtual function: never another port of its physical function */
  int pkey;      /* the P_Key at NCCL_IB_PKEY, -1 past the table (0 = empty) */
};

struct topo_gpu_choice {
  enum pci_class nearest_class; /* to a chosen device, PCI_CLASS_UNKNOWN none */
  int nnearest;
  int *nearest;                 /* indices into topo_choice.dev at that class */
  enum pci_class *port_classes; /* to every port */
};

enum topo_severity { TOPO_NOTE, TOPO_WARNING, TOPO_ERROR };

struct topo_issue {
  enum topo_severity severity;
  char *text; /* as a report lists it */
  char *warn; /* the plugin's WARN line for it, with the fix; NULL when it logs none */
  char *fix;  /* the fix alone, for reports that list it apart; NULL when not given */
};

/* A recommended environment setting. status: "add" (unset now), "change"
 * (set to something that selects otherwise), "keep" (already right). */
struct topo_setting {
  char name[40];
  char value[400];
  char status[8];
  char why[640];
};

struct topo_choice {
  struct topo_prefs prefs;
  struct netif_choice sock;    /* NCCL_SOCKET_IFNAME as this plugin applies it */
  struct netif_nccl nccl_sock; /* NCCL's own choice: its bootstrap takes the first */
  int main_if;                 /* index into host ifs: the bootstrap interface, -1 none */
  bool is_main_confident;      /* chosen by the user, the default route or GPU locality, not
                                  merely by interface order: plane rule 1 may use it */
  char main_why[256];
  int nport;
  struct topo_port_choice *pc; /* one per host port */
  int ndev;
  struct topo_dev *dev;                /* room for every port, at most TOPO_MAX_DEVS */
  char why_none[768];                  /* ndev == 0: why, in one line */
  struct topo_gpu_choice *gpu_choices; /* one per host GPU */
  int nissue;
  struct topo_issue *issues;
  int nissue_lost; /* problems not recorded: out of memory */
  int nerror;      /* issues of TOPO_ERROR: a multi-node run will break */
  int nsetting;
  struct topo_setting settings[TOPO_MAX_SETTINGS]; /* recommended */
  void *block; /* the arrays above that are sized by the host, in one allocation */
};

/* Decides everything into *c (its previous content is ignored); p NULL = the
 * knobs. Reads no file, logs nothing and emits no event. 0, or ENOMEM with
 * why_none saying so; what cannot be used is in the verdicts, issues and
 * why_none. c points into h: release c with topo_choice_free() first. */
int topo_decide(const struct topo_host *h, const struct topo_prefs *p, struct topo_choice *c);
void topo_choice_free(struct topo_choice *c);
/* Logs each decision (INFO; WARN for each misconfiguration, with its fix)
 * and emits one event per decision, as the plugin does once per process. */
void topo_report(const struct topo_host *h, const struct topo_choice *c);

/* The plugin's view, built once per process (discover, decide, report with
 * the knobs). Never NULL; on failure ndev is 0 and why_none says why. */
const struct topo_choice *topo_process(const struct topo_host **host);

/* ------------------------------------------------------------- helpers */

const char *topo_ll_name(enum topo_ll ll);                   /* "IB", "RoCE", "unknown" */
const char *topo_verdict_name(enum topo_verdict v);          /* "chosen", "state", ... */
const char *gid_type_name(enum gid_type t, enum topo_ll ll); /* "RoCE v2", "IB" */
/* "mlx5_2:1" */
void topo_port_label(const struct topo_host *h, int port, char *buf, size_t cap);

#endif
