/* SPDX-License-Identifier: Apache-2.0 */
/* What the launcher saw: torchrun's elastic agent (the first failed worker,
 * its exit code or signal), Slurm (srun and slurmstepd: OOM kills, time
 * limits, failed tasks), Open MPI (mpirun or prterun noticed that a rank
 * exited on a signal), Ray (an actor whose worker process died) and a
 * process's own crash report (Signal: Segmentation fault, frames in
 * libnccl). The words are those of each launcher's source; they say which
 * process failed first and how, which NCCL's own lines on the other ranks
 * only show as closed connections. */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/explain/rules.h"

enum launch_kind {
  LK_NONE = -1, /* not a launcher line */
  LK_TORCHRUN,  /* failed (exitcode: N) local_rank: R (pid: P) */
  LK_ROOT,      /* Root Cause (first observed failure) block: rank, exitcode, host */
  LK_SLURM_OOM,
  LK_SLURM_TIME,
  LK_SLURM_TASK,
  LK_MPI,
  LK_RAY,
  LK_MPI_EXIT,     /* mpirun: a process exited with a non-zero status */
  LK_STORE,        /* PyTorch's rendezvous store (c10d TCPStore) failed */
  LK_AGENT_SIGNAL, /* torchrun's agent itself got a signal (the job was stopped) */
  LK_CRASH,        /* Signal: Segmentation fault (11), Caught signal 11 */
  LK_FRAME,        /* a crash frame inside libnccl */
};

static bool has(const char *t, const char *s) { return strstr(t, s) != NULL; }

/* A torchrun "Root Cause" field line: "  rank      : 3 (local_rank: 3)". */
static bool root_field(const char *t, const char *key) {
  while (*t == ' ' || *t == '\t' || *t == '>') t++;
  size_t n = strlen(key);
  if (strncmp(t, key, n)) return false;
  t += n;
  while (*t == ' ') t++;
  return *t == ':';
}

static int launch_kind_of(const char *t) {
  if (has(t, "(exitcode: ") && has(t, "local_rank: ")) return LK_TORCHRUN;
  if (has(t, "SignalException: Process ") && has(t, "got signal")) return LK_AGENT_SIGNAL;
  if (has(t, "DistStoreError") || has(t, "DistNetworkError") || has(t, "RendezvousTimeoutError") ||
      has(t, "RendezvousConnectionError") || (has(t, "store->get(") && has(t, "got error")) ||
      (has(t, "[c10d]") && has(t, "failed to connect to")))
    return LK_STORE;
  if (root_field(t, "traceback") && has(t, "Signal ") && has(t, "received by PID")) return LK_ROOT;
  if (has(t, "first observed failure") || root_field(t, "exitcode") ||
      (root_field(t, "rank") && has(t, "(local_rank:")))
    return LK_ROOT;
  if ((has(t, "slurmstepd") || has(t, "srun: error")) &&
      (has(t, "oom-kill") || has(t, "oom_kill") || has(t, "Out Of Memory") || has(t, "OOM Killed")))
    return LK_SLURM_OOM;
  if (has(t, "DUE TO TIME LIMIT") || (has(t, "slurmstepd") && has(t, "TIME LIMIT")))
    return LK_SLURM_TIME;
  if (has(t, "Out of memory: Killed process") || has(t, "oom-kill:") || has(t, "OOMKilled"))
    return LK_SLURM_OOM; /* the kernel's or Kubernetes' OOM killer: the same cause */
  if (has(t, "slurmstepd") && has(t, " CANCELLED AT ")) return LK_SLURM_TASK;
  if (has(t, "srun: error:") && (has(t, ": task") || has(t, ": tasks")) &&
      (has(t, "Exited with exit code") || has(t, "Killed") || has(t, "Segmentation") ||
       has(t, "Aborted")))
    return LK_SLURM_TASK;
  if (has(t, "noticed that process rank") && (has(t, "exited on signal") || has(t, "exited")))
    return LK_MPI;
  if (has(t, "detected that one or more processes exited with non-zero status") ||
      (has(t, "Primary job") && has(t, "non-zero exit code")))
    return LK_MPI_EXIT;
  if (has(t, "The actor died unexpectedly") || has(t, "The actor is dead because") ||
      has(t, "A worker died or was killed") || has(t, "Owner's node has crashed"))
    return LK_RAY;
  if (has(t, "Signal: Segmentation fault") || has(t, "Caught signal ") ||
      has(t, "Signal: Aborted") || has(t, "Signal: Bus error") ||
      has(t, "Fatal Python error: Segmentation fault"))
    return LK_CRASH;
  if (has(t, "libnccl.so") && (has(t, "(+0x") || has(t, "[0x"))) return LK_FRAME;
  return LK_NONE;
}

bool launch_match(const struct rec *r) {
  return r->level == REC_TEXT && launch_kind_of(r->raw) >= 0;
}

/* The signal a negative torchrun exit code or "signal N" names. */
static const char *signal_name(long sig) {
  static const struct {
    int sig;
    const char *name;
  } names[] = {{SIGKILL, "SIGKILL"}, {SIGSEGV, "SIGSEGV"}, {SIGABRT, "SIGABRT"},
               {SIGBUS, "SIGBUS"},   {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},
               {SIGILL, "SIGILL"},   {SIGFPE, "SIGFPE"},   {SIGHUP, "SIGHUP"}};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (names[i].sig == sig) return names[i].name;
  return NULL;
}

/* What a signal usually means for a training process. */
static const char *signal_lead(long sig) {
  switch (sig) {
  case SIGKILL:
    return "a SIGKILL comes from outside the process: most often the kernel's OOM killer (host memory; dmesg shows \"Out of memory: Killed process\") or the scheduler ending the job";
  case SIGSEGV:
  case SIGBUS:
    return "a crash inside the process: its core dump or the frames it printed name the library (libnccl, a net plugin, libibverbs, the framework)";
  case SIGABRT:
    return "the process aborted itself: an uncaught C++ exception (PyTorch's watchdog after an NCCL error or timeout) or a failed assertion; its own output just before names it";
  case SIGTERM:
  case SIGINT:
    return "it was asked to stop: by the launcher after another worker failed first, or by the scheduler";
  default: return "its own output just before its exit names the error";
  }
}

struct launch_fail {
  long rank, local_rank, exitcode, pid;
  bool has_rank, has_exit;
  char host[EXPLAIN_HOST_MAX];
  const struct rec *rec;
};

static void word_after(const char *t, const char *key, char *out, size_t cap) {
  out[0] = 0;
  const char *p = text_after(t, key);
  if (!p) return;
  while (*p == ' ' || *p == ':') p++;
  text_token(p, "(,;", out, cap);
}

/* A host name ends at the first character no host name has (a paste's
 * translation may follow it with no space). */
static void host_after(const char *t, const char *key, char *out, size_t cap) {
  word_after(t, key, out, cap);
  size_t n = 0;
  while (out[n] && (isalnum((unsigned char)out[n]) || strchr(".-_", out[n]))) n++;
  out[n] = 0;
}

static bool long_after(const char *t, const char *key, long *v) {
  const char *p = text_after(t, key);
  if (!p) return false;
  while (*p == ' ' || *p == ':') p++;
  return text_long(p, v);
}

/* torchrun: "failed (exitcode: -6) local_rank: 0 (pid: 16) of binary", and
 * the "Root Cause (first observed failure)" block, one field a line or all
 * on one (a translated paste). */
static void read_torchrun(const struct rec *r, struct launch_fail *lf) {
  const char *t = r->raw;
  long sig = 0;
  if (long_after(t, "(exitcode: ", &lf->exitcode) || long_after(t, "exitcode", &lf->exitcode))
    lf->has_exit = true;
  else if (has(t, "received by PID") && long_after(t, "Signal ", &sig) && sig > 0) {
    lf->exitcode = -sig, lf->has_exit = true; /* "traceback : Signal 9 (SIGKILL) received by PID" */
    long_after(t, "received by PID ", &lf->pid);
  }
  long_after(t, "local_rank: ", &lf->local_rank);
  long_after(t, "(pid: ", &lf->pid);
  const char *rk = text_after(t, " rank ");
  if (!rk && root_field(t, "rank")) rk = strstr(t, "rank") + 4;
  if (rk && !text_after(t, "(exitcode: ")) {
    while (*rk == ' ' || *rk == ':') rk++;
    if (text_long(rk, &lf->rank)) lf->has_rank = true;
  }
  if (!lf->host[0]) host_after(t, "host ", lf->host, sizeof(lf->host));
  if (!lf->host[0] && root_field(t, "host")) host_after(t, "host", lf->host, sizeof(lf->host));
  if (!lf->rec) lf->rec = r;
}

static void torchrun_finding(const struct explain_ctx *cx, const struct hits *h) {
  struct launch_fail lf = {.rank = -1, .local_rank = -1, .exitcode = 0, .pid = -1};
  bool in_root = false;
  struct finding *f = NULL;
  for (size_t i = 0; i < h->n; i++) {
    int k = launch_kind_of(h->v[i]->raw);
    if (k != LK_TORCHRUN && k != LK_ROOT) continue;
    if (has(h->v[i]->raw, "first observed failure")) {
      memset(&lf, 0, sizeof(lf)); /* the root cause block is the first failure */
      lf.rank = lf.local_rank = lf.pid = -1;
      in_root = true;
      /* its host line, kept by the reader but no evidence on its own */
      const struct rec *r = h->v[i];
      for (size_t j = r->idx + 1; j < cx->ls->nrecs && j < r->idx + 10 && !lf.host[0]; j++)
        if (root_field(cx->ls->recs[j].raw, "host"))
          host_after(cx->ls->recs[j].raw, "host", lf.host, sizeof(lf.host));
    } else if (in_root && lf.has_exit && k == LK_TORCHRUN)
      continue; /* the root cause is read; later workers failed after it */
    if (!f && !(f = finding_new(cx->out, "launcher", CONF_LOW))) return;
    finding_evidence(f, h->v[i]);
    /* the first worker's line, or the root cause block's fields */
    if (!lf.rec || (in_root && !(lf.has_exit && lf.has_rank))) read_torchrun(h->v[i], &lf);
  }
  if (!f) return;
  char who[200], how[160];
  int n = snprintf(who, sizeof(who), "%s", lf.has_rank ? "" : "worker");
  if (lf.has_rank) n += snprintf(who + n, sizeof(who) - (size_t)n, "rank %ld", lf.rank);
  if (lf.local_rank >= 0)
    n += snprintf(who + n, sizeof(who) - (size_t)n, " (local rank %ld)", lf.local_rank);
  if (lf.pid > 0) n += snprintf(who + n, sizeof(who) - (size_t)n, ", pid %ld", lf.pid);
  if (lf.host[0]) snprintf(who + n, sizeof(who) - (size_t)n, ", on %s", lf.host);
  const char *sig = lf.exitcode < 0 ? signal_name(-lf.exitcode) : NULL;
  if (sig) snprintf(how, sizeof(how), "was killed by %s (exit code %ld)", sig, lf.exitcode);
  else if (lf.has_exit) snprintf(how, sizeof(how), "exited with exit code %ld", lf.exitcode);
  else snprintf(how, sizeof(how), "failed");
  if (lf.host[0]) finding_host(f, lf.host);
  finding_cause(
    f,
    "no confident cause: torchrun's elastic agent reports that %s %s, the first worker to fail; %s",
    who, how,
    sig
      ? signal_lead(-lf.exitcode)
      : "an exit code of 1 is a Python exception: its traceback, above the agent's report in that worker's output, names the error");
  finding_fix(
    f,
    "read that worker's own output before it exited (torchrun --log-dir, or @record on the entry point for its traceback); the other workers' NCCL errors (closed connections, timeouts) follow from it, and if it shows an NCCL error, explain that worker's log with NCCL_DEBUG=INFO");
}

/* "srun: error: node12: task 0: Out Of Memory" -> node12, 0 */
static void slurm_task(const char *t, char *host, size_t cap, long *task) {
  host[0] = 0;
  const char *p = text_after(t, "srun: error: ");
  if (!p) return;
  const char *colon = strchr(p, ':');
  if (!colon || !has(colon, "task")) return;
  size_t n = (size_t)(colon - p) < cap - 1 ? (size_t)(colon - p) : cap - 1;
  memcpy(host, p, n);
  host[n] = 0;
  const char *tk = text_after(colon, "task ");
  if (!tk) tk = text_after(colon, "tasks ");
  if (tk) text_long(tk, task);
}

static void slurm_findings(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *oom = NULL, *tl = NULL, *task = NULL;
  for (size_t i = 0; i < h->n; i++) {
    const struct rec *r = h->v[i];
    int k = launch_kind_of(r->raw);
    char host[EXPLAIN_HOST_MAX];
    long tid = -1;
    slurm_task(r->raw, host, sizeof(host), &tid);
    struct finding **fp = k == LK_SLURM_OOM    ? &oom
                          : k == LK_SLURM_TIME ? &tl
                          : k == LK_SLURM_TASK ? &task
                                               : NULL;
    if (!fp) continue;
    if (!*fp) {
      *fp = finding_new(cx->out, "launcher", k == LK_SLURM_TASK ? CONF_LOW : CONF_HIGH);
      if (!*fp) return;
      if (k == LK_SLURM_OOM) {
        finding_cause(
          *fp,
          "a process ran out of host memory and the OOM killer ended it (%s%s: Slurm's step cgroup, the kernel, or a container's memory limit); the network errors of the other ranks follow from that exit",
          host[0] ? "on " : "the memory limit it ran under", host);
        finding_fix(
          *fp,
          "give the job more host memory (sbatch --mem or --mem-per-gpu, --mem=0 for the whole node; the pod's memory limit) or use less of it (fewer dataloader workers, smaller host-side buffers); sacct -j JOBID -o JobID,MaxRSS,ReqMem or dmesg shows what it used");
      } else if (k == LK_SLURM_TIME) {
        finding_cause(
          *fp,
          "Slurm cancelled the job at its time limit: a job that hangs in a collective runs until then");
        finding_fix(
          *fp,
          "if the job should have ended earlier, it hung: set a collective timeout (TORCH_NCCL_ASYNC_ERROR_HANDLING=1 with a timeout in init_process_group, or NCCL_TIMEOUT) so the stuck rank names itself, and explain that log; otherwise raise --time");
      } else {
        finding_cause(
          *fp,
          "no confident cause: Slurm reports a failed or cancelled task (%.200s); the first task to fail is the one to read",
          r->raw);
        finding_fix(
          *fp,
          "read that task's own output (srun --output=%%x-%%j-%%t.out gives one file per task) and explain its log with NCCL_DEBUG=INFO");
      }
    }
    if (host[0]) finding_host(*fp, host);
    finding_evidence(*fp, r);
  }
}

/* "mpirun noticed that process rank 3 with PID 1167 on node 10.10.21.2
 * exited on signal 11 (Segmentation fault)." */
static void mpi_finding(const struct explain_ctx *cx, const struct rec *r) {
  long rank = -1, pid = -1, sig = 0;
  char node[EXPLAIN_HOST_MAX];
  long_after(r->raw, "process rank ", &rank);
  long_after(r->raw, "with PID ", &pid);
  word_after(r->raw, " on node ", node, sizeof(node));
  long_after(r->raw, "on signal ", &sig);
  struct finding *f = finding_new(cx->out, "launcher", CONF_LOW);
  if (!f) return;
  size_t n = strlen(node);
  while (n && node[n - 1] == '.') node[--n] = 0;
  const char *name = signal_name(sig);
  finding_cause(
    f,
    "no confident cause: Open MPI reports that rank %ld (pid %ld) on node %s exited on signal %ld (%s), the first process it saw fail; %s",
    rank, pid, node[0] ? node : "?", sig, name ? name : "?", signal_lead(sig));
  finding_fix(
    f,
    "read that rank's output before the signal (its frames name the library; a crash in the MPI layer, UCX, often goes away with UCX_TLS=tcp, which NCCL does not use), and run it under NCCL_DEBUG=INFO to see whether NCCL was running");
  if (node[0]) finding_host(f, node);
  finding_evidence(f, r);
}

static void ray_finding(const struct explain_ctx *cx, const struct hits *h, size_t at) {
  struct finding *f = finding_new(cx->out, "launcher", CONF_LOW);
  if (!f) return;
  long pid = -1;
  char ip[64] = "";
  bool is_owner = false;
  for (size_t i = at; i < h->n; i++) {
    const char *t = h->v[i]->raw;
    if (launch_kind_of(t) != LK_RAY) continue;
    is_owner |= has(t, "Owner's node has crashed") || has(t, "its owner has died");
    finding_evidence(f, h->v[i]);
  }
  /* the actor's pid and ip are the indented lines after the exception */
  const struct rec *first = h->v[at];
  for (size_t i = first->idx; i < cx->ls->nrecs && i < first->idx + 12; i++) {
    const char *t = cx->ls->recs[i].raw;
    while (*t == ' ' || *t == '\t') t++;
    if (!strncmp(t, "pid: ", 5) && pid < 0) text_long(t + 5, &pid);
    if (!strncmp(t, "ip: ", 4) && !ip[0]) text_token(t + 4, "", ip, sizeof(ip));
  }
  if (ip[0] && strcmp(ip, "xxxx")) finding_host(f, ip);
  char who[120] = "";
  if (pid > 0) snprintf(who, sizeof(who), " (pid %ld%s%s)", pid, ip[0] ? ", ip " : "", ip);
  finding_cause(
    f,
    "no confident cause: a Ray actor%s died with its worker process%s: Ray names three causes, the kernel's OOM killer (host memory), ray stop, or a crash of the process (SIGSEGV); the NCCL errors of the actors that talked to it follow from it",
    who, is_owner ? " (its owner's node crashed)" : "");
  finding_fix(
    f,
    "read that worker's log on its node (/tmp/ray/session_latest/logs/worker-*-%s.err, and python-core-worker-*.log) and the node's dmesg for \"Out of memory: Killed process\"; if the worker shows an NCCL error, explain it with NCCL_DEBUG=INFO",
    pid > 0 ? "PID" : "*");
}

/* "Signal: Segmentation fault (11)" with frames in libnccl.so */
static void crash_finding(const struct explain_ctx *cx, const struct hits *h) {
  struct finding *f = finding_new(cx->out, "launcher", CONF_LOW);
  if (!f) return;
  bool in_nccl = false;
  const struct rec *sig = NULL;
  for (size_t i = 0; i < h->n; i++) {
    int k = launch_kind_of(h->v[i]->raw);
    if (k != LK_CRASH && k != LK_FRAME) continue;
    in_nccl |= k == LK_FRAME;
    if (!sig && k == LK_CRASH) sig = h->v[i];
    finding_evidence(f, h->v[i]);
  }
  finding_cause(
    f, "no confident cause: a process crashed (\"%.160s\")%s", sig ? sig->text : "a signal",
    in_nccl
      ? ", with frames inside libnccl.so: NCCL itself faulted, most often a bug of that NCCL release or a setting that takes a rarely used path (an NCCL_*_DISABLE, a net plugin built for another NCCL)"
      : "");
  finding_fix(
    f,
    "%s; run it again with NCCL_DEBUG=INFO to see what NCCL was doing, and get the frames with symbols (gdb, or NCCL built with debug info)",
    in_nccl ? "try the newest NCCL release and undo NCCL_* settings one at a time"
            : "its frames name the library that crashed");
}

/* "mpirun detected that one or more processes exited with non-zero
 * status ... Process name: [[5711,1],3] Exit code: 1" */
static void mpi_exit_finding(const struct explain_ctx *cx, const struct rec *r) {
  long rank = -1, code = -1;
  for (size_t i = r->idx; i < cx->ls->nrecs && i < r->idx + 8; i++) {
    const char *t = cx->ls->recs[i].raw, *p;
    if ((p = strstr(t, "Process name: [[")) && (p = strstr(p, "],"))) text_long(p + 2, &rank);
    if (long_after(t, "Exit code:", &code)) break;
  }
  struct finding *f = finding_new(cx->out, "launcher", CONF_LOW);
  if (!f) return;
  char who[80] = "a process";
  if (rank >= 0) snprintf(who, sizeof(who), "rank %ld", rank);
  if (code >= 0)
    finding_cause(f,
                  "no confident cause: Open MPI reports that %s exited with exit code %ld, the "
                  "first process to fail; the others were stopped after it",
                  who, code);
  else
    finding_cause(f,
                  "no confident cause: Open MPI reports that %s exited with a non-zero status and "
                  "ended the job; the others were stopped after it",
                  who);
  finding_fix(f, "read that rank's own output before it exited (mpirun --output-filename gives one "
                 "file per rank) and explain it with NCCL_DEBUG=INFO");
  finding_evidence(f, r);
}

static void agent_signal_finding(const struct explain_ctx *cx, const struct rec *r) {
  long sig = 0;
  long_after(r->raw, "got signal:", &sig);
  struct finding *f = finding_new(cx->out, "launcher", CONF_MEDIUM);
  if (!f) return;
  const char *name = signal_name(sig);
  finding_cause(f,
                "torchrun's elastic agent itself received signal %ld (%s): the job was stopped "
                "from outside (the scheduler's time limit or preemption, scancel, kubectl "
                "delete), not by a failure of its workers",
                sig, name ? name : "?");
  finding_fix(f, "check the scheduler's record of the job (sacct -j JOBID -o State,Reason, or the "
                 "pod's events) for why it was stopped; if it hung until then, set a collective "
                 "timeout so the stuck rank names itself");
  finding_evidence(f, r);
}

/* The rendezvous store every rank reaches at MASTER_ADDR:MASTER_PORT
 * before NCCL starts (NCCL's unique id travels through it). */
static void store_finding(const struct explain_ctx *cx, const struct rec *r) {
  const char *t = r->raw;
  /* PyTorch warns so while it retries; once NCCL printed its own lines the
   * store was reached after all */
  for (size_t i = 0; has(t, "failed to connect to") && i < cx->ls->nrecs; i++)
    if (cx->ls->recs[i].has_prefix && cx->ls->recs[i].level == REC_INFO) return;
  struct finding *f = finding_new(cx->out, "launcher", CONF_MEDIUM);
  if (!f) return;
  if (has(t, "waiting for clients") || has(t, "RendezvousTimeoutError")) {
    finding_cause(f,
                  "not every rank reached the job's rendezvous in time (\"%.160s\"), before NCCL "
                  "started: a rank that did not launch or crashed at start, a wrong world size or "
                  "node count, or ranks that cannot reach MASTER_ADDR:MASTER_PORT",
                  t);
    finding_fix(f, "check that every node started its ranks with the same MASTER_ADDR, "
                   "MASTER_PORT, --nnodes and --nproc_per_node, that the missing ranks' own output "
                   "shows no error, and that TCP to MASTER_PORT on MASTER_ADDR is open from every "
                   "node (nc -zv MASTER_ADDR MASTER_PORT)");
  } else if (has(t, "failed to connect to")) {
    finding_cause(f,
                  "a rank cannot reach the job's rendezvous store (\"%.200s\"): MASTER_ADDR "
                  "names an address this host does not reach (localhost on a multi-node job, a "
                  "name that resolves elsewhere), the port is closed, or the store's process "
                  "(rank 0's agent) has not started or has exited",
                  t);
    finding_fix(f, "set MASTER_ADDR to rank 0's address on the network the nodes share (not "
                   "localhost) and check nc -zv MASTER_ADDR MASTER_PORT from this node");
  } else {
    f->conf = CONF_LOW;
    finding_cause(f,
                  "no confident cause: the connection to the job's rendezvous store broke "
                  "(\"%.200s\"): the process that holds it (rank 0, or torchrun's agent on the "
                  "first node) exited or was killed, so every other rank loses it at once",
                  t);
    finding_fix(f, "read rank 0's output (or the first node's agent) for why it exited; the other "
                   "ranks' errors follow from it");
  }
  finding_evidence(f, r);
}

void launch_build(const struct explain_ctx *cx, const struct hits *h) {
  bool kinds[LK_FRAME + 1] = {false};
  for (size_t i = 0; i < h->n; i++) {
    int k = launch_kind_of(h->v[i]->raw);
    if (k >= 0) kinds[k] = true;
  }
  if (kinds[LK_TORCHRUN] || kinds[LK_ROOT]) torchrun_finding(cx, h);
  if (kinds[LK_SLURM_OOM] || kinds[LK_SLURM_TIME] || kinds[LK_SLURM_TASK]) slurm_findings(cx, h);
  for (size_t i = 0; i < h->n; i++)
    if (launch_kind_of(h->v[i]->raw) == LK_MPI) {
      mpi_finding(cx, h->v[i]);
      break; /* the first rank Open MPI saw fail */
    }
  for (size_t i = 0; i < h->n; i++)
    if (launch_kind_of(h->v[i]->raw) == LK_RAY) {
      ray_finding(cx, h, i);
      break;
    }
  for (size_t i = 0; i < h->n && !kinds[LK_MPI]; i++)
    if (launch_kind_of(h->v[i]->raw) == LK_MPI_EXIT) {
      mpi_exit_finding(cx, h->v[i]);
      break;
    }
  /* the store's own verdict (a timeout, a broken connection) over the
   * connect warnings PyTorch prints while it retries */
  const struct rec *store = NULL;
  for (size_t i = 0; i < h->n; i++)
    if (launch_kind_of(h->v[i]->raw) == LK_STORE &&
        (!store || has(store->raw, "failed to connect to")))
      store = h->v[i];
  if (store) store_finding(cx, store);
  for (size_t i = 0; i < h->n; i++)
    if (launch_kind_of(h->v[i]->raw) == LK_AGENT_SIGNAL) {
      agent_signal_finding(cx, h->v[i]);
      break;
    }
  if ((kinds[LK_CRASH] || kinds[LK_FRAME]) && !kinds[LK_MPI]) crash_finding(cx, h);
}

bool launch_relevant(const char *t) {
  if (launch_kind_of(t) >= 0) return true;
  while (*t == ' ' || *t == '\t') t++;
  return !strncmp(t, "pid: ", 5) || !strncmp(t, "ip: ", 4) || root_field(t, "host") ||
         strstr(t, "Process name: [[") || !strncmp(t, "Exit code:", 10);
}
