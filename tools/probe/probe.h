/* SPDX-License-Identifier: Apache-2.0 */
/* nccl-net-diag probe: a whole-cluster preflight. Every rank of a job
 * started by torchrun, mpirun or srun reports its host's facts to rank 0,
 * which compares them, then has every pair of hosts move verified data
 * through the plugin, and prints one report.
 *
 * The pieces, one concern per file in this folder:
 *   launch.c, launch_slurm.c  rank, world size and rendezvous from the launcher
 *   wire*.c                   the rendezvous protocol (versioned, length-checked)
 *   rdv_server.c, coord*.c    rank 0: connections, arrival, the pair rounds
 *   rdv_client.c, worker.c    every rank: its connection to rank 0, its tasks
 *   facts*.c                  what a host has and is set to
 *   schedule.c                which pairs, in rounds of disjoint pairs
 *   transfer.c, capture.c     moving data through the plugin, its WARN lines
 *   compare*.c, verdict.c     differences and failed pairs as problems
 *   report_text.c, report_json.c */
#ifndef DIAG_TOOLS_PROBE_PROBE_H
#define DIAG_TOOLS_PROBE_PROBE_H

#include "tools/json_dest.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define PROBE_HOST_MAX 64
#define PROBE_MAX_IFS 16
#define PROBE_MAX_RDMA 32
#define PROBE_MAX_DEVS 32
#define PROBE_MAX_ISSUES 8
#define PROBE_MAX_RECS 6
#define PROBE_DEFAULT_PORT 29500 /* torchrun's MASTER_PORT default */

enum probe_pairs_mode { PAIRS_AUTO, PAIRS_ALL, PAIRS_RING, PAIRS_SAMPLE };

struct probe_opts {
  struct json_dest json; /* rank 0 writes the report as JSON there */
  int timeout_s;
  size_t bytes;
  enum probe_pairs_mode pairs;
  int sample_n;
  int all_pairs_max;
  int pings;
  unsigned seed;
  double slow_ratio; /* a pair below this fraction of its kind's median is slow */
  const char *rendezvous;
  const char *job_id;
  const char *nccl_lib;
  const char *plugin;
  int abi;
  int verbose;
};

/* Room for element n of an array that grows one element at a time: the
 * capacity doubles at every power of two, so n appends cost O(n). NULL
 * when out of memory (the array is left as it was). */
static inline void *probe_grow(void *array, int n, size_t elem) {
  if (n && (n & (n - 1))) return array;
  return realloc(array, (size_t)(n ? 2 * n : 1) * elem);
}

/* ------------------------------------------------------------- host facts */

struct probe_var {
  char *name, *value;
};

struct probe_env {
  int n;
  struct probe_var *v;
};

struct probe_if {
  char name[16];
  char addr[64]; /* first address, CIDR; "" none */
  int mtu;
  int up;
};

/* An RDMA port the plugin uses (topo's device list, NCCL device order). */
struct probe_rdma {
  char name[64];
  int port;
  char ll[8]; /* "IB" or "RoCE" */
  int gid_index;
  char gid[48];
  char gid_type[12];
  char subnet[64];
  char netdev[16];
  int mtu;
  int speed_mbps;
  int pkey;         /* the P_Key at index NCCL_IB_PKEY, -1 unknown */
  int qos_state;    /* RoCE QoS: 0 not reported (an older probe, or not RoCE), 1 unknown, 2 read */
  char qos[160];    /* read: "trust dscp, PFC on 3, ECN on 3"; unknown: why */
  int qos_prio;     /* the priority NCCL's data lands on, -1 unknown */
  int qos_lossless; /* PFC is on there */
  int qos_pfc;      /* PFC bitmap, -1 unknown */
  char qos_tc[48];  /* "NCCL_IB_TC=0 (DSCP 0)" as judged */
  int qos_fix_tc;   /* a class that reaches a PFC priority there, -1 none */
};

/* A device as NCCL sees it through the plugin's getProperties. */
struct probe_dev {
  char name[64];
  int speed;
};

struct probe_issue {
  int sev; /* 0 note, 1 warning, 2 error */
  char text[1024];
};

struct probe_rec {
  char name[40];
  char value[400];
  char status[8]; /* add, change, keep */
};

struct probe_facts {
  int rank, local_rank;
  char host[PROBE_HOST_MAX];
  char probe_version[32];
  int nccl_code; /* 0 = none found */
  char nccl_path[256];
  char nccl_err[256];
  char plugin_version[32];
  char plugin_path[256];
  char plugin_err[256];
  int abi_mask; /* bit v: ncclNetPlugin_vN is exported */
  int abi_used;
  struct probe_env env, pid1;
  int pid1_ok;
  char pid1_err[160];
  char sock_ifs[128]; /* the chosen socket interfaces, comma separated */
  char sock_err[512];
  char auto_if[16]; /* the first interface chosen with NCCL_SOCKET_IFNAME unset */
  int sock_mtu;
  int nif;
  struct probe_if ifs[PROBE_MAX_IFS];
  int rdma_present;
  int nrdma;
  struct probe_rdma rdma[PROBE_MAX_RDMA];
  char transport[8]; /* "RDMA" or "TCP": what the plugin's devices are */
  int ndev;
  struct probe_dev devs[PROBE_MAX_DEVS];
  char no_dev[512]; /* ndev == 0: the plugin's reason */
  int nissue;
  struct probe_issue issues[PROBE_MAX_ISSUES];
  int nrec;
  struct probe_rec recs[PROBE_MAX_RECS];
};

void probe_facts_free(struct probe_facts *f);
const char *probe_env_get(const struct probe_env *e, const char *name);

/* ------------------------------------------------------------ results */

struct probe_pair {
  int src, dst; /* ranks */
  int dev;
  char dev_name[64];     /* the device on src */
  char dst_dev_name[64]; /* the device it connects to on dst */
  char transport[8];
  int tested; /* 0: not run (a host was gone, had no device, or time ran out) */
  int ok;
  int slow;     /* far below the median of its kind, measured twice */
  int retested; /* measured again because the first run looked slow */
  double gbps, lat_us;
  char cause[32];   /* short, for the matrix */
  char code[32];    /* the plugin's cause code of a failed connect, "" none */
  int stall_bytes;  /* messages of this size stalled while small ones passed (path MTU), 0 not */
  char error[2048]; /* the cause in full: the plugin's own diagnosis where it gave one */
};

enum probe_sev { SEV_NOTE, SEV_WARNING, SEV_ERROR };

struct probe_problem {
  enum probe_sev sev;
  char hosts[512]; /* comma separated */
  char text[2048];
  char fix[2048];
};

/* A rank rank 0 refused, or that never came, or died. */
struct probe_rank_state {
  int arrived, dead;
  char addr[80]; /* where its connection came from */
  double dead_at_s;
  char why[256];
};

struct probe_refusal {
  char peer[80];
  char why[320];
};

/* Everything rank 0 learned: the input of the report. */
struct probe_run {
  const struct probe_opts *opts;
  char launcher[32];
  char rendezvous[300];
  char job[128];
  int world;
  struct probe_facts *facts; /* [world]; host[0] == 0 when the rank never reported */
  struct probe_rank_state *ranks;
  int nhost;
  int *host_rank; /* [nhost]: the rank that tests pairs for each host */
  char pairs_mode[64];
  int nrounds;
  int npair;
  struct probe_pair *pairs;
  int nproblem;
  struct probe_problem *problems;
  int nrefusal;
  struct probe_refusal *refusals;
  char *host_first; /* [world]: the first rank that reported from its host (compare.c) */
  double elapsed_s;
  double arrival_s; /* how long rank 0 waited for the ranks */
  int timed_out;
};

int probe_add_problem(struct probe_run *r, enum probe_sev sev, const char *hosts, const char *fix,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
const char *probe_sev_name(enum probe_sev s);
/* The host name of a rank, or "rank N" when it never reported. */
const char *probe_rank_host(const struct probe_run *r, int rank, char *buf, size_t cap);

/* The judgement (verdict.c): slow pairs, failed pairs, missing and dead
 * ranks; compare*.c add the differences between hosts. */
void probe_judge(struct probe_run *r);
void probe_compare(struct probe_run *r);
void probe_compare_env(struct probe_run *r);
void probe_compare_net(struct probe_run *r);
void probe_compare_qos(struct probe_run *r);

#endif
