/* SPDX-License-Identifier: Apache-2.0 */
/* What each host's lines say about it (NCCL version, net plugin, settings,
 * interfaces and addresses, RDMA devices, the GIDs and MTUs its queue pairs
 * used), so rules can compare hosts, find the host behind an address or a
 * GID, and name the one that differs from the rest. */
#ifndef DIAG_TOOLS_EXPLAIN_CORRELATE_H
#define DIAG_TOOLS_EXPLAIN_CORRELATE_H

#include "tools/explain/explain.h"
#include "tools/explain/facts.h"

#define CORR_IBDEVS_MAX 32

struct corr_port {
  char dev[32];  /* "mlx5_4"; "#3" when only NCCL's index is known */
  int port;      /* -1: unknown */
  int gid_index; /* -1: unknown */
  struct log_gid gid;
  bool has_gid;
  int mtu; /* bytes; 0: unknown */
  const struct rec *rec;
};

struct corr_kv {
  char key[48];
  char val[160];
  const struct rec *rec;
};

struct corr_addr {
  char iface[32];
  char ip[64];
  const struct rec *rec;
};

struct corr_host {
  char name[EXPLAIN_HOST_MAX];
  char version[32];      /* "2.19.3" */
  char version_full[48]; /* "2.19.3+cuda12.3" */
  const struct rec *version_rec;
  char version2[32]; /* a second version in the same host's lines */
  const struct rec *version2_rec;
  char plugin[96];       /* "internal", or the external plugin's name */
  char plugin_abi[8];    /* "v11" */
  char plugin_key[128];  /* what must agree: "diag 0.1.0", "Libfabric", "internal" */
  char diag_version[32]; /* this plugin's version, from its own first line */
  const struct rec *plugin_rec;
  char network[48]; /* "IB", "Socket", a plugin name: "Using network X" */
  const struct rec *network_rec;
  char boot_if[32], boot_ip[64];
  const struct rec *boot_rec;
  char ib_list[320]; /* "mlx5_0:1/RoCE mlx5_1:1/RoCE" as NCCL listed them */
  char ib_names[CORR_IBDEVS_MAX][32];
  int nib;
  bool is_roce;
  const struct rec *ib_rec;
  const struct rec *ib_none_rec; /* "NET/IB : No device found." */
  char sock_list[320];           /* "eth0 eth1" */
  int nsock;
  const struct rec *sock_rec;
  struct corr_kv *env;
  int nenv;
  struct corr_port *ports;
  int nports;
  struct corr_addr *addrs;
  int naddrs;
  long nwarn;
  const struct rec *first_warn; /* the first WARN that is not "closed by remote peer" */
};

struct corr {
  struct corr_host *hosts;
  int nhosts;
};

int corr_build(const struct logset *ls, struct corr *c);
void corr_free(struct corr *c);

/* By name ("node-a", or "node-a.cluster.local" for "node-a"). */
const struct corr_host *corr_find(const struct corr *c, const char *name);
/* The host that uses this IP (bootstrap, socket, IB OOB, an IPv4 GID). */
const struct corr_host *corr_find_addr(const struct corr *c, const char *ip);
/* The host (and its port) whose queue pairs used this GID. */
const struct corr_host *corr_find_gid(const struct corr *c, const struct log_gid *g,
                                      const struct corr_port **port);
/* A setting the host's log shows ("NCCL_SOCKET_IFNAME"); NULL if none. */
const char *corr_env(const struct corr_host *h, const char *key);

/* Groups hosts by a value (values[i] for c->hosts[i]; NULL: unknown) and
 * writes "2.19.3 on node-a, node-c; 2.14.3 on node-b". is_odd[i] marks the
 * hosts outside a strict majority (none without one). Returns the number
 * of distinct values. */
int corr_split(const struct corr *c, const char *const *values, bool *is_odd, char *buf,
               size_t cap);

/* Line readers shared with the rules (and unit-tested). */
bool corr_parse_version(const char *text, char *ver, size_t vcap, char *full, size_t fcap);
bool corr_parse_env(const char *text, char *key, size_t kcap, char *val, size_t vcap);
/* "eth0:10.0.0.1<0>" -> "eth0", "10.0.0.1" */
bool corr_parse_ifaddr(const char *p, char *iface, size_t icap, char *ip, size_t ipcap);
/* NCCL's "mtu N" is the verbs enum (1..5 = 256..4096 bytes). */
int corr_mtu_bytes(long v);

#endif
