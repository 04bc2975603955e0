/* SPDX-License-Identifier: Apache-2.0 */
/* RoCE QoS of a port's interface: PFC per priority, trust mode, the
 * DSCP->priority map, ETS and ECN, read as `dcb`, mlnx_qos and lldpad read
 * them, and judged against the traffic class NCCL's queue pairs will use.
 *
 * Sources: on a live host (sysfs root /sys) DCB netlink (RTM_GETDCB,
 * DCB_CMD_IEEE_GET) for PFC, ETS and the APP table; on a fixture host the
 * file class/net/<if>/x-diag-dcb in its sysfs copy, written in the format
 * below, read instead of netlink. Both add mlx5's sysfs: qos/trust and
 * ecn/roce_{np,rp}/enable/<prio> on the interface, tc/<port>/traffic_class
 * on the RDMA device. A source that cannot be read leaves the state
 * unknown, with why: never a guess.
 *
 * x-diag-dcb (one key a line, '#' comments):
 *   none                       the driver has no DCB support (as a veth)
 *   pfc-en 3 4                 priorities with PFC on (empty: none)
 *   prio-tc 0 0 0 3 0 0 0 0    ETS traffic class of priorities 0..7
 *   tc-tsa ets ets ets strict ets ets ets ets
 *   tc-bw 50 0 0 0 50 0 0 0    ETS bandwidth share of classes 0..7
 *   app-dscp 26:3 48:6         APP table DSCP->priority entries
 *   dcbx host ieee             DCBX: host or lld-managed (firmware), ieee,
 *                              cee, static */
#ifndef DIAG_TOPO_QOS_H
#define DIAG_TOPO_QOS_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QOS_PRIOS 8
#define QOS_DSCPS 64

enum qos_source { QOS_SRC_UNKNOWN, QOS_SRC_NETLINK, QOS_SRC_FIXTURE };
enum qos_trust { QOS_TRUST_PCP, QOS_TRUST_DSCP };
enum qos_tsa { QOS_TSA_STRICT = 0, QOS_TSA_CBS = 1, QOS_TSA_ETS = 2, QOS_TSA_VENDOR = 255 };

struct topo_qos {
  enum qos_source source;
  char why_unknown[200];            /* source unknown: why */
  int unknown_errno;                /* and the errno behind it (ports alike are said once) */
  char netdev[IF_NAMESIZE];         /* where the state was read: a bond's first member for a bond */
  char bond[IF_NAMESIZE];           /* the port's bond (RoCE LAG), "" none */
  char vf_netdev[IF_NAMESIZE];      /* a VF read through its physical function: the VF's, "" not */
  char member_differs[IF_NAMESIZE]; /* a member of bond whose PFC/trust/map differ, "" none */
  enum qos_trust trust;
  bool is_trust_read; /* from qos/trust; else inferred (DSCP APP entries: dscp, else pcp) */
  bool has_pfc;
  uint8_t pfc_en; /* bit p: PFC on priority p */
  bool has_ets;
  uint8_t prio_tc[QOS_PRIOS];
  uint8_t tc_tsa[QOS_PRIOS];
  uint8_t tc_bw[QOS_PRIOS];
  uint64_t dscp_set; /* bit d: the APP table maps DSCP d */
  uint8_t dscp_prio[QOS_DSCPS];
  bool has_ecn; /* either point's files exist */
  bool has_ecn_np, has_ecn_rp;
  uint8_t ecn_np, ecn_rp; /* bit p: ECN notification / reaction point on */
  int dev_tclass;         /* tc/<port>/traffic_class of the RDMA device, -1 none */
  int dcbx;               /* DCB_ATTR_DCBX: DCB_CAP_DCBX_* flags (who negotiates), -1 unknown */
};

/* Reads the QoS of netdev (the port's interface) and of RDMA device dev
 * port port. Never fails: q->source says whether anything was read. */
void topo_qos_read(const char *dev, int port, const char *netdev, struct topo_qos *q);
struct topo_host;
/* Port p of a discovered host: through its bond's members (RoCE LAG), and
 * for an SR-IOV virtual function whose own interface reports nothing,
 * through its physical function's port, whose QoS its traffic takes. */
void topo_qos_read_port(const struct topo_host *h, int p, struct topo_qos *q);
struct topo_port;
/* Whether the GID at gid_index is a VLAN's on the port: frames carry a PCP. */
bool topo_qos_is_tagged(const struct topo_port *pt, int gid_index);

/* The DCB netlink back-end (qos_nl.c). topo_qos_nl_read asks the kernel
 * for netdev's IEEE 802.1Qaz state: 0, or an errno with why. */
int topo_qos_nl_read(const char *netdev, struct topo_qos *q, char *why, size_t cap);
/* Parses one DCB reply (the netlink message, header included): 0, EBADMSG
 * on a malformed one, or the kernel's errno from an error reply. Bounded
 * by len; never reads past it. */
int topo_qos_nl_parse(const void *msg, size_t len, struct topo_qos *q);
/* Parses the x-diag-dcb text: 0, EOPNOTSUPP for "none", EINVAL (why). */
int topo_qos_text_parse(const char *text, struct topo_qos *q, char *why, size_t cap);

/* ------------------------------------------------------------ judgement */

/* What NCCL's queue pairs use on this port. */
struct qos_use {
  int tc;         /* the data QPs' traffic class (GRH byte) */
  bool is_tc_set; /* NCCL_IB_TC set (else NCCL's default) */
  int fifo_tc;    /* NCCL_IB_FIFO_TC, -1 unset (the receiver's QPs then use tc) */
  int sl;         /* NCCL_IB_SL or NCCL's default */
  bool is_tagged; /* the GID's interface is a VLAN: frames carry a PCP */
};

enum qos_kind {
  QOS_PFC_OFF,        /* the classic: data on a priority where PFC is off, PFC on elsewhere */
  QOS_PFC_NONE,       /* PFC off on every priority */
  QOS_TRUST_UNTAGGED, /* trust pcp, frames untagged */
  QOS_ECN_OFF,        /* ECN off on the lossless priority */
  QOS_FIFO_LOSSY,     /* NCCL_IB_FIFO_TC on a lossy priority, data lossless */
  QOS_ETS_ZERO,       /* the priority's ETS class has 0% bandwidth */
  QOS_TCLASS_FORCED,  /* the device's traffic_class overrides NCCL_IB_TC */
  QOS_BOND_DIFFERS,   /* the members of a RoCE LAG bond are set up differently */
};
#define QOS_MAX_FINDINGS 8

struct qos_finding {
  enum qos_kind kind;
  int severity; /* 0 note, 1 warning */
  char text[640];
  char fix[400];
};

struct qos_verdict {
  int tc;        /* effective data class (the device's traffic_class wins) */
  int dscp;      /* tc >> 2 */
  int prio;      /* priority of the data, -1 unknown */
  int fifo_prio; /* of the clear-to-send QPs */
  bool is_lossless;
  char summary[320]; /* "trust dscp, PFC on 3, ECN on 3; NCCL_IB_TC=0 -> DSCP 0 -> prio 0" */
  int nfinding;
  struct qos_finding findings[QOS_MAX_FINDINGS];
};

/* The priority a RoCE v2 frame of traffic class tc (or, trusting PCP, of
 * service level sl) lands on; -1 when that cannot be known. */
int qos_prio_of(const struct topo_qos *q, int tc, int sl, bool is_tagged);
/* A traffic class that lands on priority prio (ECN bits 10, as NCCL's
 * documented 106 = DSCP 26), -1 none. */
int qos_tc_for_prio(const struct topo_qos *q, int prio);
/* The class that reaches the lowest PFC priority trusting DSCP, -1 none. */
int qos_lossless_tc(const struct topo_qos *q);
/* Pure: q and u -> v. where names the port ("device mlx5_0 port 1"). */
void qos_judge(const struct topo_qos *q, const struct qos_use *u, const char *where,
               struct qos_verdict *v);
/* The port's configuration in one phrase, for comparing hosts:
 * "trust dscp, PFC on 3, ECN on 3" (+ ", device class 106"). */
void qos_config_str(const struct topo_qos *q, char *buf, size_t cap);
/* Priorities with ECN on at every point that reports (0 when none reports). */
uint8_t qos_ecn_on(const struct topo_qos *q);
/* The knobs as NCCL reads them. */
void qos_use_from_knobs(struct qos_use *u, bool is_tagged);
const char *qos_trust_name(enum qos_trust t);
/* "host, ieee", "lld-managed, ieee", "" unknown */
void qos_dcbx_str(int dcbx, char *buf, size_t cap);
/* "3,4" or "none" */
void qos_prio_list(uint8_t bits, char *buf, size_t cap);

#endif
