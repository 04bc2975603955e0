/* SPDX-License-Identifier: Apache-2.0 */
/* Failures of the host or container around NCCL rather than of the
 * network: /dev/shm too small, the locked-memory limit behind a failed
 * memory registration, a rank outside the world size, two nodes on
 * different transports, a socket NCCL could not create. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/explain/rules.h"

/* One finding for every line of a rule, its hosts named. */
static struct finding *one_finding(const struct explain_ctx *cx, const struct hits *h,
                                   const char *rule, enum confidence conf) {
  struct finding *f = finding_new(cx->out, rule, conf);
  for (size_t i = 0; f && i < h->n; i++) finding_evidence(f, h->v[i]);
  return f;
}

/* "node-a, node-b" of the finding, or "a host" */
static void host_list(const struct finding *f, char *buf, size_t cap) {
  buf[0] = 0;
  for (int i = 0; i < f->nhosts; i++)
    snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", i ? ", " : "", f->hosts[i]);
  if (f->nhosts_more)
    snprintf(buf + strlen(buf), cap - strlen(buf), " and %d more", f->nhosts_more);
  if (!buf[0]) snprintf(buf, cap, "the host");
}

/* --- /dev/shm --------------------------------------------------------------- */

bool shm_match(const struct rec *r) {
  const char *t = r->text;
  bool is_shm = strstr(t, "shared memory segment") || strstr(t, "/dev/shm") ||
                strstr(t, "shm_open") || strstr(t, "nccl-shm") || strstr(t, "posix_fallocate") ||
                strstr(t, "failed to extend");
  bool is_fail = strstr(t, "rror") || strstr(t, "fail") || strstr(t, "No space left") ||
                 strstr(t, "Cannot allocate");
  return is_shm && is_fail;
}

void shm_build(const struct explain_ctx *cx, const struct hits *h) {
  bool is_full = false, is_attach = false;
  for (size_t i = 0; i < h->n; i++) {
    const char *t = h->v[i]->text;
    is_full |= strstr(t, "No space left") || strstr(t, "(28)") || strstr(t, "fallocate") ||
               strstr(t, "failed to extend");
    is_attach |= strstr(t, "attaching to") && strstr(t, "No such file");
  }
  struct finding *f = one_finding(cx, h, "shm", is_full || is_attach ? CONF_HIGH : CONF_MEDIUM);
  if (!f) return;
  char hosts[400];
  host_list(f, hosts, sizeof(hosts));
  if (is_attach && !is_full) {
    finding_cause(
      f,
      "ranks on %s could not attach to each other's shared memory segments in /dev/shm: the processes of one node do not share /dev/shm (separate containers or IPC namespaces)",
      hosts);
    finding_fix(
      f,
      "run the ranks of a node in one container, or give the containers the host's IPC namespace (docker run --ipc=host; on Kubernetes one pod per node with all its GPUs)");
    return;
  }
  finding_cause(
    f,
    "NCCL could not create its shared memory segment in /dev/shm on %s%s: /dev/shm is too small for the buffers NCCL shares between the ranks of a node (Docker gives a container 64 MB by default)",
    hosts, is_full ? " (no space left on the device)" : "");
  finding_fix(
    f,
    "give the container a larger /dev/shm: docker run --shm-size=8g or --ipc=host; on Kubernetes mount an emptyDir with medium: Memory at /dev/shm; df -h /dev/shm shows the size; NCCL_SHM_DISABLE=1 avoids it at a cost in bandwidth inside the node");
}

/* --- the locked-memory limit ---------------------------------------------- */

bool memlock_match(const struct rec *r) {
  const char *t = r->text;
  if (strstr(t, "RLIMIT_MEMLOCK")) return true;
  bool is_reg = strstr(t, "ibv_reg_mr") || strstr(t, "ibv_reg_dmabuf_mr") ||
                strstr(t, "fi_mr_reg") || strstr(t, "register memory") ||
                strstr(t, "ibv_create_cq") || strstr(t, "ibv_create_qp");
  bool is_nomem = strstr(t, "Cannot allocate memory") || strstr(t, "ENOMEM") ||
                  strstr(t, "errno 12") || strstr(t, "error 12");
  return is_reg && is_nomem;
}

void memlock_build(const struct explain_ctx *cx, const struct hits *h) {
  bool has_limit = false;
  for (size_t i = 0; i < h->n; i++) has_limit |= strstr(h->v[i]->text, "RLIMIT_MEMLOCK") != NULL;
  struct finding *f = one_finding(cx, h, "memlock", has_limit ? CONF_HIGH : CONF_MEDIUM);
  if (!f) return;
  char hosts[400];
  host_list(f, hosts, sizeof(hosts));
  finding_cause(
    f,
    "registering memory with the RDMA device failed with ENOMEM (Cannot allocate memory) on %s: %s",
    hosts,
    has_limit
      ? "libibverbs reports the process's locked-memory limit (RLIMIT_MEMLOCK) is small, and every registration pins memory against it"
      : "the usual cause is the process's locked-memory limit (ulimit -l, 64 KB or 8 MB by default in containers and under some launchers); the log does not show the limit itself");
  finding_fix(
    f,
    "raise the locked-memory limit of the job to unlimited: docker run --ulimit memlock=-1:-1; on Kubernetes set LimitMEMLOCK=infinity in the container runtime's systemd unit; on bare metal memlock unlimited in /etc/security/limits.conf (and PropagateResourceLimits under Slurm); check with ulimit -l inside the job");
}

/* --- ranks and world size --------------------------------------------------- */

bool rank_match(const struct rec *r) { return strstr(r->text, "Invalid rank") != NULL; }

void rank_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *f = one_finding(cx, h, "invalid-rank", CONF_HIGH);
  if (!f) return;
  long rank = -1, n = -1;
  const char *p = text_after(h->v[0]->text, "Invalid rank");
  while (p && *p && (*p < '0' || *p > '9') && *p != '-') p++;
  if (p && text_long(p, &rank)) {
    const char *s = strchr(p, '/');
    if (s) text_long(s + 1, &n);
  }
  char what[96] = "";
  if (rank >= 0 && n >= 0)
    snprintf(what, sizeof(what), " (rank %ld asked for in a communicator of %ld ranks, 0 to %ld)",
             rank, n, n - 1);
  finding_cause(
    f,
    "a process asked NCCL for a rank outside the communicator%s: more processes were launched than the world size says, or the nodes disagree on the world size or on their node rank",
    what);
  finding_fix(
    f,
    "make the world size equal the number of processes launched: torchrun --nnodes x --nproc_per_node must match WORLD_SIZE, with the same values and a distinct --node_rank on every node (mpirun -np, srun --ntasks likewise); print RANK and WORLD_SIZE on each node to find the one that differs");
}

/* --- two transports --------------------------------------------------------- */

bool wrongtype_match(const struct rec *r) {
  return strstr(r->text, "wrong type") && strstr(r->text, "!=");
}

void wrongtype_build(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *f = one_finding(cx, h, "transport-mismatch", CONF_HIGH);
  if (!f) return;
  long got = -1, want = -1;
  const char *p = text_after(h->v[0]->text, "wrong type ");
  if (p && text_long(p, &got)) {
    const char *q = strstr(p, "!= ");
    if (q) text_long(q + 3, &want);
  }
  char hosts[400];
  host_list(f, hosts, sizeof(hosts));
  if ((got == 4 && want == 3) || (got == 3 && want == 4)) {
    finding_cause(
      f,
      "%s received a connection of NCCL's %s transport on a socket that expects its %s transport: one node uses InfiniBand/RoCE and the other sockets (NCCL_IB_DISABLE or NCCL_NET set differently, or no usable RDMA device on one node)",
      hosts, got == 4 ? "IB" : "Socket", want == 3 ? "Socket" : "IB");
  } else {
    finding_cause(
      f,
      "%s received a connection of another kind than the socket expects (type %ld, expected %ld): the nodes run different transports or NCCL versions, or another program connected to NCCL's port",
      hosts, got, want);
  }
  finding_fix(
    f,
    "use one transport everywhere: the same NCCL_IB_DISABLE, NCCL_NET and NCCL_NET_PLUGIN on every node, and where one node has no RDMA device either fix it (ibv_devinfo) or set NCCL_IB_DISABLE=1 on all nodes; \"Using network\" in each node's NCCL_DEBUG=INFO log shows which transport it chose");
}

/* --- socket creation -------------------------------------------------------- */

bool sockcreate_match(const struct rec *r) {
  if (strstr(r->text, "Too many open files")) return false; /* the resources rule's */
  return strstr(r->text, "Socket creation failed") || strstr(r->text, "Socket creation error");
}

void sockcreate_build(const struct explain_ctx *cx, const struct hits *h) {
  int err = 0;
  for (size_t i = 0; i < h->n && !err; i++) {
    const char *p = text_after(h->v[i]->text, "failed");
    if (!p) p = text_after(h->v[i]->text, "error");
    while (p && (*p == ' ' || *p == ':')) p++;
    err = p ? text_errno(p) : 0;
  }
  struct finding *f = one_finding(cx, h, "socket-create", err ? CONF_HIGH : CONF_LOW);
  if (!f) return;
  char hosts[400], lb[32];
  host_list(f, hosts, sizeof(hosts));
  if (err == EMFILE || err == ENFILE) {
    finding_cause(
      f, "NCCL could not create a socket on %s: the process ran out of file descriptors (%s)",
      hosts, errno_label(err, lb, sizeof(lb)));
    finding_fix(
      f,
      "raise the open-files limit of the job (ulimit -n 1048576; docker run --ulimit nofile=1048576:1048576)");
  } else if (err == EAFNOSUPPORT) {
    finding_cause(
      f,
      "NCCL could not create a socket on %s: the address family of the interface it picked is not supported (EAFNOSUPPORT; IPv6 disabled in the kernel or the container while NCCL chose an IPv6 address)",
      hosts);
    finding_fix(
      f,
      "pick an interface with an IPv4 address (NCCL_SOCKET_IFNAME=<iface>) or make NCCL use IPv4 (NCCL_SOCKET_FAMILY=AF_INET)");
    finding_export(f, "NCCL_SOCKET_FAMILY=AF_INET");
  } else if (err == EACCES || err == EPERM) {
    finding_cause(
      f,
      "NCCL was not allowed to create a socket on %s (%s): a seccomp or security profile of the container forbids it",
      hosts, errno_label(err, lb, sizeof(lb)));
    finding_fix(
      f,
      "allow socket creation in the container's security profile (docker run --security-opt seccomp=unconfined to confirm)");
  } else {
    finding_cause(f, "no confident cause: NCCL could not create a socket on %s (%s)", hosts,
                  err ? errno_label(err, lb, sizeof(lb)) : "the log does not show why");
    finding_fix(
      f,
      "run nccl-net-diag doctor on %s; check ulimit -n and the container's network namespace (ip -br addr)",
      hosts);
  }
}
